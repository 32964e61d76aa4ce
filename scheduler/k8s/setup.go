package k8s

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// Config is everything `tessera scheduler` is started with.
type Config struct {
	// Scheduler is the core's configuration (actions and plugin tiers).
	Scheduler scheduler.Config
	// SchedulerName selects the pods to schedule; default tessera.
	SchedulerName string
	Daemon        Options
	// LeaderElect runs sessions only on the replica holding the Lease
	// LeaderElectionNamespace/LeaderElectionID.
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration is how long a replica waits for a lost leader; default 15s.
	LeaseDuration time.Duration
	// MetricsAddr and ProbeAddr are the metrics and health endpoints ("0": none).
	MetricsAddr, ProbeAddr string
	// Registerer takes the metrics; nil: none are registered.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// NewManager builds a controller-runtime manager running the scheduler daemon over an
// informer cache, with leader election, /healthz and /readyz.
func NewManager(restCfg *rest.Config, scheme *runtime.Scheme, cfg Config) (manager.Manager, *Daemon, error) {
	core, err := scheduler.New(cfg.Scheduler)
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	if cfg.LeaderElectionID == "" {
		cfg.LeaderElectionID = "tessera-scheduler"
	}
	mgr, err := NewControllerManager(restCfg, scheme, Serving{
		LeaderElect: cfg.LeaderElect, LeaderElectionNamespace: cfg.LeaderElectionNamespace, LeaderElectionID: cfg.LeaderElectionID,
		LeaseDuration: cfg.LeaseDuration, MetricsAddr: cfg.MetricsAddr, ProbeAddr: cfg.ProbeAddr, Log: cfg.Log,
	})
	if err != nil {
		return nil, nil, err
	}
	ca := cache.New(mgr.GetCache(), snapshot.Options{SchedulerName: cfg.SchedulerName, WholeGPUs: cfg.Scheduler.WholeGPUs})
	if err := ca.Watch(context.Background(), mgr.GetCache()); err != nil {
		return nil, nil, err
	}
	d := NewDaemon(mgr.GetClient(), ca, core, mgr.GetEventRecorder("tessera-scheduler"), NewMetrics(cfg.Registerer), cfg.Log, cfg.Daemon)
	if err := mgr.Add(d); err != nil {
		return nil, nil, err
	}
	return mgr, d, nil
}

// Serving is how a Tessera controller's manager elects its leader and what it serves.
type Serving struct {
	// LeaderElect runs the leader's runnables only on the replica holding the Lease
	// LeaderElectionNamespace/LeaderElectionID.
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration is how long a replica waits for a lost leader; default 15s.
	LeaseDuration time.Duration
	// MetricsAddr and ProbeAddr are the metrics and health endpoints ("0": none).
	MetricsAddr, ProbeAddr string
	Log                    logr.Logger
}

// NewControllerManager builds a manager over an informer cache with cache.Options(),
// leader election, /healthz and a /readyz that waits for the informers.
func NewControllerManager(restCfg *rest.Config, scheme *runtime.Scheme, s Serving) (manager.Manager, error) {
	if s.LeaderElect && s.LeaderElectionNamespace == "" {
		return nil, fmt.Errorf("leader election needs a namespace for its Lease (--leader-election-namespace or $POD_NAMESPACE); or turn it off for a single replica")
	}
	opts := ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cache.Options(),
		Metrics:                       metricsserver.Options{BindAddress: s.MetricsAddr},
		HealthProbeBindAddress:        s.ProbeAddr,
		LeaderElection:                s.LeaderElect,
		LeaderElectionID:              s.LeaderElectionID,
		LeaderElectionNamespace:       s.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Logger:                        s.Log,
	}
	if s.LeaseDuration > 0 {
		lease, renew, retry := s.LeaseDuration, s.LeaseDuration*2/3, s.LeaseDuration/5
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease, &renew, &retry
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	err = mgr.AddReadyzCheck("cache", func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	})
	return mgr, err
}
