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
	if cfg.LeaderElect && cfg.LeaderElectionNamespace == "" {
		return nil, nil, fmt.Errorf("leader election needs a namespace for its Lease (--leader-election-namespace or $POD_NAMESPACE); or turn it off for a single replica")
	}
	if cfg.LeaderElectionID == "" {
		cfg.LeaderElectionID = "tessera-scheduler"
	}
	var lease *time.Duration
	if cfg.LeaseDuration > 0 {
		lease = &cfg.LeaseDuration
	}
	opts := ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cache.Options(),
		Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:        cfg.ProbeAddr,
		LeaderElection:                cfg.LeaderElect,
		LeaderElectionID:              cfg.LeaderElectionID,
		LeaderElectionNamespace:       cfg.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 lease,
		Logger:                        cfg.Log,
	}
	if lease != nil {
		renew, retry := cfg.LeaseDuration*2/3, cfg.LeaseDuration/5
		opts.RenewDeadline, opts.RetryPeriod = &renew, &retry
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("create manager: %w", err)
	}
	ca := cache.New(mgr.GetCache(), snapshot.Options{SchedulerName: cfg.SchedulerName, WholeGPUs: cfg.Scheduler.WholeGPUs})
	if err := ca.Watch(context.Background(), mgr.GetCache()); err != nil {
		return nil, nil, err
	}
	d := NewDaemon(mgr.GetClient(), ca, core, mgr.GetEventRecorder("tessera-scheduler"), NewMetrics(cfg.Registerer), cfg.Log, cfg.Daemon)
	if err := mgr.Add(d); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	err = mgr.AddReadyzCheck("cache", func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	})
	return mgr, d, err
}
