package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tessera-gpu/tessera/internal/cli"
)

// Serving is how a Tessera daemon's manager elects its leader and what it serves.
type Serving struct {
	// LeaderElect runs the leader's runnables only on the replica holding the Lease
	// LeaderElectionNamespace/LeaderElectionID.
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaderElectionIdentity names this replica in the Lease. A restarted container of
	// the same pod keeps it, so it resumes a Lease it held at once instead of waiting
	// for it to expire; empty: the host name and a random suffix, new at every start.
	LeaderElectionIdentity string
	// LeaseDuration is how long a replica waits for a lost leader; default 15s.
	LeaseDuration time.Duration
	// MetricsAddr and ProbeAddr are the metrics and health endpoints ("0": none).
	MetricsAddr, ProbeAddr string
	// Profiling serves Go's /debug/pprof/ on the metrics endpoint.
	Profiling bool
	Log       logr.Logger
}

// DefaultLeaseDuration is the Lease's duration by default, as kube-scheduler's.
const DefaultLeaseDuration = 15 * time.Second

// GracefulShutdownTimeout is how long a manager waits for its runnables once its
// context ends; the command exits cli.ShutdownGrace after the signal in any case.
const GracefulShutdownTimeout = 4 * time.Second

// Validate checks the flags before anything connects.
func (s Serving) Validate() error {
	if err := cli.CheckBindAddress("metrics-bind-address", s.MetricsAddr, true); err != nil {
		return err
	}
	if err := cli.CheckBindAddress("health-probe-bind-address", s.ProbeAddr, true); err != nil {
		return err
	}
	if s.LeaderElect && s.LeaderElectionNamespace == "" {
		return errNoLeaseNamespace
	}
	if s.LeaseDuration < 0 {
		return fmt.Errorf("lease duration %s: must not be negative", s.LeaseDuration)
	}
	return nil
}

var errNoLeaseNamespace = errors.New("leader election needs a namespace for its Lease (--leader-election-namespace or $POD_NAMESPACE); or turn it off for a single replica (--leader-elect=false)")

// AddServingFlags declares --metrics-bind-address and --health-probe-bind-address.
func (s *Serving) AddServingFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&s.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&s.Profiling, "profiling", false, "serve Go's /debug/pprof/ (heap, CPU, goroutines) on the metrics endpoint, as kube-scheduler's --profiling; off by default, since that endpoint has no authentication")
}

// MetricsServer is the metrics endpoint, with /debug/pprof/ when profiling.
func (s Serving) MetricsServer() metricsserver.Options {
	o := metricsserver.Options{BindAddress: s.MetricsAddr}
	if s.Profiling {
		o.ExtraHandlers = map[string]http.Handler{
			"/debug/pprof/":        http.HandlerFunc(pprof.Index),
			"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
			"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
			"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		}
	}
	return o
}

// AddFlags declares the serving flags and the leader-election flags, the Lease named
// leaseID by default.
func (s *Serving) AddFlags(fs *pflag.FlagSet, leaseID string) {
	fs.BoolVar(&s.LeaderElect, "leader-elect", true, "elect one active replica through a Lease")
	fs.StringVar(&s.LeaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the Lease; defaults to $POD_NAMESPACE")
	fs.StringVar(&s.LeaderElectionID, "leader-election-id", leaseID, "name of the Lease")
	fs.StringVar(&s.LeaderElectionIdentity, "leader-election-identity", defaultIdentity(), "this replica's name in the Lease; the default, from $POD_UID (the pod's UID through the downward API), survives a container restart, so a restarted leader resumes its Lease at once; without $POD_UID each start is a new identity that waits for the old Lease to expire")
	fs.DurationVar(&s.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long a standby replica waits before it takes over from a leader that stopped renewing (renew deadline 2/3 and retry period 1/5 of it)")
	s.AddServingFlags(fs)
}

// NewManager builds a manager over an informer cache configured by cacheOpts, with
// leader election, /healthz and a /readyz that waits for the informers.
func NewManager(restCfg *rest.Config, scheme *runtime.Scheme, s Serving, cacheOpts crcache.Options) (manager.Manager, error) {
	if s.LeaderElect && s.LeaderElectionNamespace == "" {
		return nil, errNoLeaseNamespace
	}
	// The manager does not elect: leading does, in the same process across Leases lost.
	opts := ctrl.Options{
		Scheme:                  scheme,
		Cache:                   ReconnectingInformers(cacheOpts),
		Metrics:                 s.MetricsServer(),
		HealthProbeBindAddress:  s.ProbeAddr,
		GracefulShutdownTimeout: ptr.To(GracefulShutdownTimeout),
		Logger:                  s.Log,
	}
	base, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	mgr := base
	if s.LeaderElect {
		lock, err := leaseLock(restCfg, s, base)
		if err != nil {
			return nil, err
		}
		lease := s.LeaseDuration
		if lease <= 0 {
			lease = DefaultLeaseDuration
		}
		elect := newLeading(lock, s.LeaderElectionID, lease, lease*2/3, lease/5, s.Log.WithName("leader-election"))
		if err := base.Add(elect); err != nil {
			return nil, err
		}
		mgr = electingManager{Manager: base, elect: elect}
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

// defaultIdentity is the host name and $POD_UID, or "" without $POD_UID. A pod's UID
// outlives its container's restarts and no other pod ever has it, so only a process of
// the same pod, after the last one ended, can resume the Lease under this identity.
func defaultIdentity() string {
	uid := os.Getenv("POD_UID")
	if uid == "" {
		return ""
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return uid
	}
	return host + "_" + uid
}

// leaseLock is the Lease s names, held under s.LeaderElectionIdentity (empty: the host
// name and a random suffix, new at every start). The election's own events ("became
// leader") go on the Lease, as kube-scheduler's do.
func leaseLock(restCfg *rest.Config, s Serving, mgr manager.Manager) (resourcelock.Interface, error) {
	id := s.LeaderElectionIdentity
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("leader election identity: %w", err)
		}
		id = host + "_" + string(uuid.NewUUID())
	}
	cfg := rest.CopyConfig(restCfg)
	rest.AddUserAgent(cfg, "leader-election")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	//lint:ignore SA1019 resourcelock takes a recorder of core events, as controller-runtime's own election does
	recorder := mgr.GetEventRecorderFor(id)
	return resourcelock.New(resourcelock.LeasesResourceLock, s.LeaderElectionNamespace, s.LeaderElectionID,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
}
