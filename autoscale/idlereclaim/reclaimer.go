package idlereclaim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// Options tune the reclaimer.
type Options struct {
	// Scheduler is the configuration the cluster's scheduler runs: its queue-share
	// rule says what each queue deserves.
	Scheduler scheduler.Config
	// Workloads are the workload kinds whose objects size gangs, as the scheduler
	// watches them (cache.ServedWorkloads), so that pods fall into the same queues.
	Workloads []workloads.Kind
	// DRA says the API server serves resource.k8s.io/v1, as for the scheduler.
	DRA bool
	// Clock is the time source of the snapshots; default the real clock. Idle time
	// itself is measured between the node agent's samples.
	Clock clock.PassiveClock
}

// Reclaimer carries out the idle reclaim of every Queue with spec.idleReclaim, one
// round at a time. It is not safe for concurrent use.
type Reclaimer struct {
	reader  client.Reader // the informer cache
	api     client.Reader // uncached reads of the workloads
	client  client.Client
	events  *controller.EventSink
	metrics *Metrics
	log     logr.Logger
	opts    Options
	sched   *scheduler.Scheduler
	planner autoscale.IdleReclaim
	// optOuts are the opt-outs read lately, by pod UID: read again after optOutTTL, so
	// that a pod waiting out its grace period costs a few reads, not one every round.
	optOuts map[string]optOutRead
}

// optOutTTL is how long an opt-out read stays good.
const optOutTTL = time.Minute

type optOutRead struct {
	at  time.Time
	out bool
}

// New wires a reclaimer: r reads the cluster as the scheduler does (an informer cache
// holding cache.Objects()), api reads workload objects (uncached: the cache does not
// hold Deployments or ReplicaSets), c writes, ev records events (nil: none), m may be nil.
func New(r, api client.Reader, c client.Client, ev *controller.EventSink, m *Metrics, log logr.Logger, opts Options) (*Reclaimer, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	sched, err := scheduler.New(opts.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	return &Reclaimer{reader: r, api: api, client: c, events: ev, metrics: m, log: log, opts: opts, sched: sched, optOuts: map[string]optOutRead{}}, nil
}

// RunOnce observes the GPUs of every running pod of a queue with spec.idleReclaim,
// tells the owners of pods idle for idleFor, and suspends the workloads of those
// still idle gracePeriod later. Errors of one pod do not stop the others.
func (r *Reclaimer) RunOnce(ctx context.Context) error {
	var queues tesserav1.QueueList
	if err := r.reader.List(ctx, &queues); err != nil {
		return fmt.Errorf("list Queues: %w", err)
	}
	policies := map[string]autoscale.ReclaimPolicy{}
	for i := range queues.Items {
		q := &queues.Items[i]
		pol, ok, err := autoscale.ReclaimPolicyFrom(q)
		if err != nil {
			r.events.Warn(q, "InvalidSpec", "IdleReclaim", "%v", err)
			continue
		}
		if ok {
			policies[q.Name] = pol
		}
	}
	if len(policies) == 0 {
		r.planner.Plan(nil, nil, nil)
		r.metrics.PendingGPUs.Reset()
		return nil
	}
	now := r.opts.Clock.Now()
	snap, state, _, err := cache.New(r.reader, snapshot.Options{WholeGPUs: r.opts.Scheduler.WholeGPUs, Workloads: r.opts.Workloads, DRA: r.opts.DRA}).Snapshot(ctx, now)
	if err != nil {
		return err
	}
	samples, pods := r.samples(snap, state, policies)
	rq := r.queues(snap, policies, len(samples) > 0)
	res := &resolver{api: r.api, pods: state.Pods}
	var errs []error
	for uid, o := range r.optOuts {
		if pods[uid] == nil || now.Sub(o.at) >= optOutTTL {
			delete(r.optOuts, uid)
		}
	}
	optOut := func(s autoscale.ReclaimSample) (bool, error) {
		if o, ok := r.optOuts[s.Pod]; ok {
			return o.out, nil
		}
		_, out, err := res.workload(ctx, pods[s.Pod])
		if err != nil {
			errs = append(errs, err)
			return false, err
		}
		r.optOuts[s.Pod] = optOutRead{at: now, out: out}
		return out, nil
	}
	r.metrics.PendingGPUs.Reset()
	for _, d := range r.planner.Plan(samples, rq, optOut) {
		p := pods[d.Pod]
		switch d.Step {
		case autoscale.ReclaimNotify:
			r.pending(p, d)
			if d.Changed {
				r.notify(p, d, rq[d.Queue].Policy)
			}
		case autoscale.ReclaimSpare:
			if d.Changed {
				r.events.Normal(p, "IdleReclaimSpared", "IdleReclaim", "%d GPUs idle since %s; %s",
					d.GPUs, d.IdleSince.UTC().Format(time.RFC3339), d.Note)
			}
		case autoscale.ReclaimCancel:
			r.events.Normal(p, "IdleReclaimCancelled", "IdleReclaim", "its GPUs are in use again: the workload stays, and the idle clock of queue %s starts over", d.Queue)
		case autoscale.ReclaimSuspend:
			if d.Done {
				if d.DryRun {
					r.pending(p, d)
				}
				continue
			}
			done, err := r.suspend(ctx, res, p, d)
			if err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", d.Name, err))
			}
			if !done || d.DryRun {
				r.pending(p, d)
			}
		}
	}
	return errors.Join(errs...)
}

// samples are the running pods of the queues with a policy whose GPUs the node agent
// reports, by pod UID.
func (r *Reclaimer) samples(snap *framework.Snapshot, st *cache.State, policies map[string]autoscale.ReclaimPolicy) ([]autoscale.ReclaimSample, map[string]*corev1.Pod) {
	queueOf := map[types.UID]string{}
	for _, j := range snap.Jobs {
		if j.Queue == nil || j.Queue.Unqueued {
			continue
		}
		if _, ok := policies[j.Queue.Name]; !ok {
			continue
		}
		for _, t := range j.Tasks {
			queueOf[types.UID(t.UID)] = j.Queue.Name
		}
	}
	var out []autoscale.ReclaimSample
	pods := map[string]*corev1.Pod{}
	for uid, q := range queueOf {
		p := st.Pods[uid]
		if p == nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		gn := st.GPUNodes[p.Spec.NodeName]
		if gn == nil || gn.Status.ObservedTime == nil {
			continue
		}
		util, gpus, ok := autoscale.PodUtilization(p, gn)
		if !ok {
			continue
		}
		pods[string(uid)] = p
		out = append(out, autoscale.ReclaimSample{Pod: string(uid), Name: p.Namespace + "/" + p.Name, Queue: q, GPUs: gpus,
			Utilization: util, At: gn.Status.ObservedTime.Time})
	}
	return out, pods
}

// queues are the queues with a policy, with what they hold and deserve as the
// scheduler core's queue-share rule counts it (asked only when some pod is observed).
func (r *Reclaimer) queues(snap *framework.Snapshot, policies map[string]autoscale.ReclaimPolicy, shares bool) map[string]autoscale.ReclaimQueue {
	out := make(map[string]autoscale.ReclaimQueue, len(policies))
	for name, pol := range policies {
		out[name] = autoscale.ReclaimQueue{Policy: pol}
	}
	if !shares {
		return out
	}
	r.sched.WhatIf(snap, nil, func(s *framework.Snapshot, _ *scheduler.Result) {
		for _, q := range s.Queues {
			rq, ok := out[q.Name]
			if !ok {
				continue
			}
			rq.AllocatedGPUs = q.Allocated.GPU
			if sh, ok := r.sched.Share(q); ok {
				rq.DeservedGPUs = sh.Deserved.GPU
			} else {
				rq.DeservedGPUs = max(q.Deserved.GPU, q.Guarantee.GPU)
			}
			out[q.Name] = rq
		}
	})
	return out
}

// pending sets the pod's tessera_gpu_idle_reclaim_pending_gpus.
func (r *Reclaimer) pending(p *corev1.Pod, d autoscale.ReclaimDecision) {
	r.metrics.PendingGPUs.WithLabelValues(p.Namespace, p.Name, d.Queue).Set(float64(d.GPUs))
}

// notify tells the pod's owner that its workload will be suspended.
func (r *Reclaimer) notify(p *corev1.Pod, d autoscale.ReclaimDecision, pol autoscale.ReclaimPolicy) {
	what := "suspends its workload"
	if d.DryRun {
		what = "would suspend its workload (dry run: it suspends nothing)"
	}
	msg := fmt.Sprintf("%d GPUs at or below %g%% utilization for %s (since %s): queue %s %s after a grace period of %s, at %s, unless they are used again",
		d.GPUs, pol.Threshold, d.IdleFor, d.IdleSince.UTC().Format(time.RFC3339), d.Queue, what, pol.GracePeriod, d.SuspendAt.UTC().Format(time.RFC3339))
	if d.Note != "" {
		msg += "; " + d.Note
	} else {
		msg += fmt.Sprintf("; to keep it, annotate the pod or its workload %s: \"false\" (it holds while the queue is within its deserved share)", tesserav1.AnnotationIdleReclaim)
	}
	r.events.Warn(p, "IdleReclaimPending", "IdleReclaim", "%s", msg)
}

// suspend suspends p's workload, or evicts p when it has none of a kind reclaim
// suspends; in a dry run it only says what it would do. done is false while it must
// be tried again (an error, a PodDisruptionBudget that refused the eviction).
func (r *Reclaimer) suspend(ctx context.Context, res *resolver, p *corev1.Pod, d autoscale.ReclaimDecision) (done bool, err error) {
	w, _, err := res.workload(ctx, p)
	if err != nil {
		return false, err
	}
	why := fmt.Sprintf("its %d GPUs stayed at or below queue %s's idle threshold for %s", d.GPUs, d.Queue, d.IdleFor)
	if d.Note != "" {
		why += "; " + d.Note
	}
	action, target := "evict", "pod "+d.Name
	if w != nil {
		action, target = "suspend", w.name()
		if w.kind.how == scale {
			action = "scale"
		}
	}
	if d.DryRun {
		r.events.Warn(p, "IdleReclaimDryRun", "IdleReclaim", "would %s %s (dry run): %s", verb(action), target, why)
		if w != nil {
			r.events.Warn(w.obj, "IdleReclaimDryRun", "IdleReclaim", "would %s it for pod %s (dry run): %s", verb(action), d.Name, why)
		}
		r.done(d, action, p, target, "would "+verb(action))
		return true, nil
	}
	if w == nil {
		switch err := controller.Evict(ctx, r.client, p); {
		case err == nil:
			r.events.Warn(p, "IdleReclaimed", "IdleReclaim", "evicted: %s; it comes back, from its last checkpoint, only if its controller recreates it", why)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			r.planner.Suspended(d.Pod) // gone or replaced
			return true, nil
		case apierrors.IsTooManyRequests(err):
			r.events.Warn(p, "IdleReclaimBlocked", "IdleReclaim", "a PodDisruptionBudget allows no disruption now; eviction retried next round (%v)", err)
			return false, nil
		default:
			return false, fmt.Errorf("evict: %w", err)
		}
		r.done(d, action, p, target, "evicted")
		return true, nil
	}
	did, err := w.suspend(ctx, r.client, r.api)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", action, target, err)
	}
	r.events.Warn(w.obj, "IdleReclaimed", "IdleReclaim", "%s for pod %s: %s", did, d.Name, why)
	r.events.Warn(p, "IdleReclaimed", "IdleReclaim", "%s: %s %s; clear it to run the workload again", why, target, did)
	r.done(d, action, p, target, did)
	return true, nil
}

// done records a suspension (or a dry run's) in the planner, the metric and the log.
func (r *Reclaimer) done(d autoscale.ReclaimDecision, action string, p *corev1.Pod, target, did string) {
	r.planner.Suspended(d.Pod)
	r.metrics.ReclaimedGPU.WithLabelValues(d.Queue, action, strconv.FormatBool(d.DryRun)).Add(float64(d.GPUs))
	r.log.Info("idle GPUs reclaimed", "queue", d.Queue, "pod", p.Namespace+"/"+p.Name, "workload", target, "action", action, "did", did,
		"gpus", d.GPUs, "idleFor", d.IdleFor.String(), "dryRun", d.DryRun)
}

// verb is the action as a verb: "suspend", "scale to zero", "evict".
func verb(action string) string {
	if action == "scale" {
		return "scale to zero"
	}
	return action
}
