package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
)

func init() { register(newSchedulerCommand) }

type schedulerFlags struct {
	kubeconfig    string
	config        string
	profile       string
	schedulerName string
	period        time.Duration
	bindWorkers   int
	qps           float32
	burst         int
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
		RunE: untilSignal(func(ctx context.Context) error { return runScheduler(ctx, f) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG or the in-cluster config")
	fs.StringVar(&f.config, "config", "", "scheduler configuration file (actions and plugin tiers, as tessera simulate --config); empty: --profile")
	profileFlag(cmd, &f.profile, "tessera", "built-in scheduler profile used when --config is empty: "+strings.Join(scheduler.ProfileNames(), ", "))
	fs.StringVar(&f.schedulerName, "scheduler-name", tesserav1.SchedulerName, "spec.schedulerName of the pods to schedule")
	fs.DurationVar(&f.period, "period", time.Second, "time between sessions when nothing changes")
	fs.IntVar(&f.bindWorkers, "bind-workers", 32, "concurrent binds and evictions")
	fs.Float32Var(&f.qps, "kube-api-qps", 500, "client QPS towards the API server")
	fs.IntVar(&f.burst, "kube-api-burst", 1000, "client burst towards the API server")
	f.serving.AddFlags(fs, "tessera-scheduler")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlag(klogFlags.Lookup("v"))
	return cmd
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

func runScheduler(ctx context.Context, f schedulerFlags) error {
	log, scfg, cfg, scheme, err := daemonInputs(f.config, f.profile, f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	mgr, _, err := daemon.NewManager(cfg, scheme, daemon.Config{
		Scheduler: scfg, SchedulerName: f.schedulerName,
		Daemon:  daemon.Options{Period: f.period, BindWorkers: f.bindWorkers},
		Serving: f.serving, Registerer: crmetrics.Registry, Log: log.WithName("scheduler"),
	})
	if err != nil {
		return err
	}
	log.Info("starting scheduler", "schedulerName", f.schedulerName, "period", f.period, "leaderElect", f.serving.LeaderElect)
	return mgr.Start(ctx)
}
