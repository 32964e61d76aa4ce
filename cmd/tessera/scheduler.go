package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

func init() { register(newSchedulerCommand) }

type schedulerFlags struct {
	kube          kubeclient.Options
	config        string
	profile       string
	schedulerName string
	period        time.Duration
	bindWorkers   int
	qps           float32
	burst         int
	budgetTimeout time.Duration
	claims        string
	serving       controller.Serving
}

func newSchedulerCommand() *cobra.Command {
	f := schedulerFlags{}
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the gang / binpack / GPU-slice scheduler (schedulerName: tessera)",
		Long: `Schedule pods whose spec.schedulerName is tessera: whole gangs or nothing, queue fair
share, preemption through the Eviction API, binpack and GPU-memory slices. Each placed
pod is bound with its tessera.dev/gpu-assignment annotation, which the node agent's
device plugin reads. Run two replicas: one is elected leader and schedules.`,
		Args: cobra.NoArgs,
		RunE: runDaemon(func() (func(context.Context) error, error) { return prepareScheduler(f) }),
	}
	fs := cmd.Flags()
	f.kube.AddFlags(fs, "")
	fs.StringVar(&f.config, "config", "", "scheduler configuration file (actions and plugin tiers, as tessera simulate --config); empty: --profile")
	profileFlag(cmd, &f.profile, "tessera", "built-in scheduler profile used when --config is empty: "+strings.Join(scheduler.ProfileNames(), ", "))
	fs.StringVar(&f.schedulerName, "scheduler-name", tesserav1.SchedulerName, "spec.schedulerName of the pods to schedule")
	fs.DurationVar(&f.period, "period", time.Second, "time between sessions when nothing changes")
	fs.IntVar(&f.bindWorkers, "bind-workers", daemon.DefaultBindWorkers, "concurrent binds and evictions")
	fs.DurationVar(&f.budgetTimeout, "disruption-budget-timeout", daemon.DefaultDisruptionBudgetTimeout,
		"longest PodDisruptionBudgets may refuse a preemption or reclaim victim's eviction; then the pod is deleted")
	fs.StringVar(&f.claims, "extended-resource-claims", snapshot.ExtendedClaimsAuto,
		"give pods asking tessera.dev/gpu, tessera.dev/gpu-memory or nvidia.com/gpu their GPUs through a ResourceClaim the scheduler makes (as kube-scheduler does for extended resources backed by DRA): "+
			strings.Join(snapshot.ExtendedClaimsModes, ", ")+"; auto: on nodes whose GPUs are DRA devices and whose kubelet is "+tesserav1.ExtendedResourceClaimsKubelet+" or later, on: on every node whose GPUs are DRA devices")
	fs.Float32Var(&f.qps, "kube-api-qps", 500, "client QPS towards the API server")
	fs.IntVar(&f.burst, "kube-api-burst", 1000, "client burst towards the API server")
	f.serving.AddFlags(fs, "tessera-scheduler")
	return cmd
}

// validate checks the flags that need no file and no cluster.
func (f schedulerFlags) validate() error {
	var name error
	if f.schedulerName == "" {
		name = fmt.Errorf("--scheduler-name is empty: name the spec.schedulerName to schedule (default %s)", tesserav1.SchedulerName)
	}
	var qps error
	if !(f.qps > 0) {
		qps = fmt.Errorf("--kube-api-qps %g: must be positive (for example --kube-api-qps=500)", f.qps)
	}
	var claims error
	if !slices.Contains(snapshot.ExtendedClaimsModes, f.claims) {
		claims = fmt.Errorf("--extended-resource-claims %q: want one of %s", f.claims, strings.Join(snapshot.ExtendedClaimsModes, ", "))
	}
	return checks(name, claims,
		positive("period", f.period, "1s"),
		positive("disruption-budget-timeout", f.budgetTimeout, "10m"),
		atLeast("bind-workers", f.bindWorkers, 1, "the binds and evictions that run at once"),
		qps,
		atLeast("kube-api-burst", f.burst, 1, "requests allowed above --kube-api-qps in a burst"),
		f.serving.Validate(),
		f.kube.Validate())
}

// schedulerConfig is the configuration file's, or the named profile's.
func schedulerConfig(path, profile string) (scheduler.Config, error) {
	if path != "" {
		return scheduler.LoadConfig(path)
	}
	c, err := scheduler.Profile(profile)
	if err != nil {
		return c, fmt.Errorf("--profile: %w", err)
	}
	return c, nil
}

// prepareScheduler checks the flags and reads the configuration and the kubeconfig,
// then returns the scheduler to run.
func prepareScheduler(f schedulerFlags) (func(context.Context) error, error) {
	scfg, log, cfg, scheme, err := daemonInputs(f.validate(), f.config, f.profile, f.kube)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	return func(ctx context.Context) error {
		// Setting up reads the API server's discovery, which takes no context.
		var mgr manager.Manager
		err := untilDone(ctx, func() (err error) {
			mgr, _, err = daemon.NewManager(cfg, scheme, daemon.Config{
				Scheduler: scfg, SchedulerName: f.schedulerName,
				Daemon:                 daemon.Options{Period: f.period, BindWorkers: f.bindWorkers, DisruptionBudgetTimeout: f.budgetTimeout},
				ExtendedResourceClaims: f.claims,
				Serving:                f.serving, Registerer: crmetrics.Registry, Log: log.WithName("scheduler"),
			})
			return err
		})
		if err != nil {
			return err
		}
		log.Info("starting scheduler", "schedulerName", f.schedulerName, "period", f.period, "leaderElect", f.serving.LeaderElect)
		return startManager(ctx, mgr, cacheSyncTimeout)
	}, nil
}
