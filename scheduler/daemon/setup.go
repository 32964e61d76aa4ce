package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tessera-gpu/tessera/internal/controller"
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
	// ExtendedResourceClaims says where pods asking GPUs as extended resources get them
	// through a claim the scheduler makes (snapshot.ExtendedClaimsModes; default auto).
	ExtendedResourceClaims string
	Daemon                 Options
	// Serving is leader election and the metrics and probe endpoints; the Lease is
	// tessera-scheduler unless named.
	Serving controller.Serving
	// Registerer takes the metrics; nil: none are registered.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// kindsRecheck is how often the served kinds are looked up again.
const kindsRecheck = 30 * time.Second

// NewManager builds a controller-runtime manager running the scheduler daemon over an
// informer cache, with leader election, /healthz and /readyz.
func NewManager(restCfg *rest.Config, scheme *runtime.Scheme, cfg Config) (manager.Manager, *Daemon, error) {
	core, err := scheduler.New(cfg.Scheduler)
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	if cfg.Serving.LeaderElectionID == "" {
		cfg.Serving.LeaderElectionID = "tessera-scheduler"
	}
	cfg.Serving.Log = cfg.Log
	mgr, err := controller.NewManager(restCfg, scheme, cfg.Serving, cache.Options())
	if err != nil {
		return nil, nil, err
	}
	served := cache.ServedWorkloads(mgr.GetRESTMapper())
	dra := cache.ServesDRA(mgr.GetRESTMapper())
	cfg.Log.Info("watching the workload kinds the API server serves", "kinds", served, "resourceClaims", dra)
	// A restart of the API server can hide kinds from discovery for a moment: restart
	// to watch them should they appear later.
	kinds := controller.KindsWatch{Every: kindsRecheck, Kinds: cache.ServedKinds, Mapper: controller.NewMapper(restCfg),
		AtStart: cache.KindsSummary(served, dra), Log: cfg.Log}
	if err := mgr.Add(kinds); err != nil {
		return nil, nil, err
	}
	ca := cache.New(mgr.GetCache(), snapshot.Options{SchedulerName: cfg.SchedulerName, WholeGPUs: cfg.Scheduler.WholeGPUs, Workloads: served, DRA: dra,
		ExtendedResourceClaims: cfg.ExtendedResourceClaims})
	if err := ca.Watch(context.Background(), mgr.GetCache()); err != nil {
		return nil, nil, err
	}
	d := NewDaemon(mgr.GetClient(), ca, core, mgr.GetEventRecorder("tessera-scheduler"), NewMetrics(cfg.Registerer), cfg.Log, cfg.Daemon)
	if err := mgr.Add(d); err != nil {
		return nil, nil, err
	}
	return mgr, d, nil
}
