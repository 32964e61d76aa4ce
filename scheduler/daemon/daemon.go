package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// DefaultBindWorkers is how many binds and evictions run at once by default. A bind is
// one round trip that costs the scheduler almost nothing; the API server and etcd
// commit concurrent writes together, so the binds in flight, not the scheduler, set the
// pace until the API server is saturated. kube-scheduler binds each pod in its own
// goroutine, unbounded; 256 keeps the API server saturated (its own default lets 200
// mutating requests run at once and queues the rest) while bounding what a session of
// tens of thousands of placements opens at once.
const DefaultBindWorkers = 256

// Options tune the daemon.
type Options struct {
	// Period is the time between sessions when nothing changes; default 1s.
	Period time.Duration
	// MinInterval is the least time between two sessions, so that a burst of changes
	// costs one session; default 20ms.
	MinInterval time.Duration
	// BindWorkers bounds the concurrent binds and evictions; default DefaultBindWorkers.
	BindWorkers int
	// DisruptionBudgetTimeout bounds how long a PodDisruptionBudget may refuse a
	// victim's eviction: once it has refused for this long, the pod is deleted instead,
	// as kube-scheduler's preemption deletes its victims. Default
	// DefaultDisruptionBudgetTimeout.
	DisruptionBudgetTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// DefaultDisruptionBudgetTimeout is Options.DisruptionBudgetTimeout's default: time for
// a workload whose budget is only briefly exhausted (a rollout, a restart) to recover,
// and short against the hours a team would otherwise wait for what it deserves.
const DefaultDisruptionBudgetTimeout = 10 * time.Minute

func (o *Options) defaults() {
	if o.Period <= 0 {
		o.Period = time.Second
	}
	if o.MinInterval <= 0 {
		o.MinInterval = 20 * time.Millisecond
	}
	if o.BindWorkers <= 0 {
		o.BindWorkers = DefaultBindWorkers
	}
	if o.DisruptionBudgetTimeout <= 0 {
		o.DisruptionBudgetTimeout = DefaultDisruptionBudgetTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Daemon runs scheduling sessions against the cluster. It is a manager.Runnable that
// runs only on the elected leader.
type Daemon struct {
	client    client.Client
	cache     *cache.Cache
	scheduler *scheduler.Scheduler
	metrics   *Metrics
	log       logr.Logger
	opts      Options
	binder    *Binder
	status    *StatusWriter
}

var (
	_ manager.Runnable               = (*Daemon)(nil)
	_ manager.LeaderElectionRunnable = (*Daemon)(nil)
)

// NewDaemon wires a daemon. c writes to the API server (binds, evictions, status);
// rec records events on pods (nil: none); m may be nil.
func NewDaemon(c client.Client, ca *cache.Cache, s *scheduler.Scheduler, rec events.EventRecorder, m *Metrics, log logr.Logger, opts Options) *Daemon {
	opts.defaults()
	if m == nil {
		m = NewMetrics(nil)
	}
	ev := controller.NewEventSink(rec, opts.Now)
	return &Daemon{client: c, cache: ca, scheduler: s, metrics: m, log: log, opts: opts,
		binder: newBinder(c, ca, m, ev, log, opts),
		status: newStatusWriter(c, ev, m, log)}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: one replica schedules.
func (d *Daemon) NeedLeaderElection() bool { return true }

// Start runs sessions until ctx ends.
func (d *Daemon) Start(ctx context.Context) error {
	tick := time.NewTicker(d.opts.Period)
	defer tick.Stop()
	for {
		start := d.opts.Now()
		if _, err := d.RunOnce(ctx); err != nil && ctx.Err() == nil {
			d.log.Error(err, "session failed")
		}
		if wait := d.opts.MinInterval - d.opts.Now().Sub(start); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-d.cache.Changed():
		}
	}
}

// Summary is what one session did.
type Summary struct {
	Bound, BindFailed, Evicted, Pending int
}

// RunOnce runs one session and commits it: binds, evictions, gang repair, status.
func (d *Daemon) RunOnce(ctx context.Context) (Summary, error) {
	start := d.opts.Now()
	defer func() { d.metrics.SessionDuration.Observe(d.opts.Now().Sub(start).Seconds()) }()
	snap, state, errs, err := d.cache.Snapshot(ctx, start)
	if err != nil {
		return Summary{}, err
	}
	for _, e := range errs {
		d.log.V(2).Info("object left out of the snapshot", "error", e.Error())
	}
	snapshotted := d.opts.Now()
	res := d.scheduler.RunSession(snap)
	placed := d.opts.Now()
	if holdsReservation(snap) {
		if err := failpoint.Inject(failpoint.SchedulerReserved); err != nil {
			return Summary{}, err
		}
	}
	var sum Summary
	evictions, broken := d.binder.repairGangs(snap, start)
	for _, e := range res.Evictions {
		evictions = append(evictions, eviction{task: e.Task, reason: e.Reason})
	}
	sum.Evicted = d.binder.evict(ctx, state, evictions)
	d.binder.releaseEnded(ctx, state)
	sum.Bound, sum.BindFailed = d.binder.bind(ctx, state, res.Bindings, broken)
	for _, j := range snap.Jobs {
		sum.Pending += j.Count(framework.TaskPending)
	}
	d.metrics.ScheduleAttempts.WithLabelValues("unschedulable").Add(float64(sum.Pending))
	committed := d.opts.Now()
	d.status.write(ctx, snap, state)
	if log := d.log.V(1); log.Enabled() {
		log.Info("session", "bound", sum.Bound, "bindFailed", sum.BindFailed, "evicted", sum.Evicted, "pending", sum.Pending,
			"snapshot", snapshotted.Sub(start), "schedule", placed.Sub(snapshotted), "commit", committed.Sub(placed), "status", d.opts.Now().Sub(committed))
	}
	return sum, nil
}

// holdsReservation reports whether the session left nodes reserved for a starving gang.
func holdsReservation(snap *framework.Snapshot) bool {
	return slices.ContainsFunc(snap.Nodes, func(n *framework.Node) bool { return n.Reserved != nil })
}
