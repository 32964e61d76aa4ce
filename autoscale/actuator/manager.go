package actuator

import (
	"context"
	"errors"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/idlereclaim"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/scheduler/cache"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Config is everything `tessera autoscaler` is started with.
type Config struct {
	Actuator Options
	// Infrastructure removes machines (autoscale/capi); nil: drained nodes stay cordoned.
	Infrastructure Infrastructure
	// Period is the time between rounds; default 10s.
	Period time.Duration
	// Serving is leader election (LeaderElectionID defaults to tessera-autoscaler)
	// and the metrics and health endpoints.
	Serving controller.Serving
	// Registerer takes the metrics; nil: none are registered.
	Registerer prometheus.Registerer
}

// Controller runs the actuator, then the Queues' idle reclaim, every period on the
// elected leader.
type Controller struct {
	actuator *Actuator
	reclaim  *idlereclaim.Reclaimer
	period   time.Duration
	log      logr.Logger
}

var (
	_ manager.Runnable               = (*Controller)(nil)
	_ manager.LeaderElectionRunnable = (*Controller)(nil)
)

// NeedLeaderElection implements manager.LeaderElectionRunnable: one replica acts.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs rounds until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	tick := time.NewTicker(c.period)
	defer tick.Stop()
	for {
		if err := c.actuator.RunOnce(ctx); err != nil && ctx.Err() == nil {
			if onlyConflicts(err) {
				// The informer cache was behind a write of the last round.
				c.log.V(1).Info("objects changed since they were read; retried next round", "error", err.Error())
			} else {
				c.log.Error(err, "scale-down round failed; retried next round")
			}
		}
		if c.reclaim != nil {
			if err := c.reclaim.RunOnce(ctx); err != nil && ctx.Err() == nil && !onlyConflicts(err) {
				c.log.Error(err, "idle reclaim round failed; retried next round")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// NewManager builds a manager for the workload cluster in restCfg that runs the
// actuator and the Queues' idle reclaim (autoscale/idlereclaim) every period over an
// informer cache, with leader election, /healthz and
// /readyz. scheme must know the built-in kinds and Tessera's.
func NewManager(restCfg *rest.Config, scheme *runtime.Scheme, cfg Config) (manager.Manager, *Controller, error) {
	if cfg.Serving.LeaderElectionID == "" {
		cfg.Serving.LeaderElectionID = "tessera-autoscaler"
	}
	if cfg.Period <= 0 {
		cfg.Period = 10 * time.Second
	}
	mgr, err := controller.NewManager(restCfg, scheme, cfg.Serving, cache.Options())
	if err != nil {
		return nil, nil, err
	}
	cfg.Actuator.defaults()
	cfg.Actuator.Workloads = cache.ServedWorkloads(mgr.GetRESTMapper())
	cfg.Actuator.DRA = cache.ServesDRA(mgr.GetRESTMapper())
	// As the scheduler: restart to watch kinds discovery listed late.
	kinds := controller.KindsWatch{Every: 30 * time.Second, Kinds: cache.ServedKinds, Mapper: controller.NewMapper(restCfg),
		AtStart: cache.KindsSummary(cfg.Actuator.Workloads, cfg.Actuator.DRA), Log: cfg.Serving.Log}
	if err := mgr.Add(kinds); err != nil {
		return nil, nil, err
	}
	log := cfg.Serving.Log
	ev := controller.NewEventSink(mgr.GetEventRecorder("tessera-autoscaler"), cfg.Actuator.Clock.Now)
	act := NewActuator(mgr.GetCache(), mgr.GetClient(), cfg.Infrastructure, ev, NewMetrics(cfg.Registerer), log, cfg.Actuator)
	rec, err := idlereclaim.New(mgr.GetCache(), mgr.GetAPIReader(), mgr.GetClient(), ev, idlereclaim.NewMetrics(cfg.Registerer), log.WithName("idle-reclaim"),
		idlereclaim.Options{Scheduler: cfg.Actuator.Scheduler, Workloads: cfg.Actuator.Workloads, DRA: cfg.Actuator.DRA, Clock: cfg.Actuator.Clock})
	if err != nil {
		return nil, nil, err
	}
	c := &Controller{actuator: act, reclaim: rec, period: cfg.Period, log: log}
	return mgr, c, mgr.Add(c)
}

// onlyConflicts reports whether every error joined in err is a write conflict.
func onlyConflicts(err error) bool {
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range m.Unwrap() {
			if !onlyConflicts(e) {
				return false
			}
		}
		return true
	}
	if u := errors.Unwrap(err); u != nil {
		return onlyConflicts(u)
	}
	return apierrors.IsConflict(err)
}
