package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"

	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/internal/kubeclient"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/capi"
	"github.com/tessera-gpu/tessera/rightsize/recommender"
	"github.com/tessera-gpu/tessera/scheduler"
)

func init() { register(newAutoscalerCommand) }

type autoscalerFlags struct {
	kube                 kubeclient.Options
	managementKubeconfig string
	config               string
	profile              string
	period               time.Duration
	revalidateAfter      time.Duration
	stepTimeout          time.Duration
	markSettle           time.Duration
	rightSizing          bool
	serving              controller.Serving
}

func newAutoscalerCommand() *cobra.Command {
	f := autoscalerFlags{}
	cmd := &cobra.Command{
		Use:   "autoscaler",
		Short: "Cordon, drain and remove long-idle GPU nodes through Cluster API",
		Long: `Remove GPU nodes that every ScaleDownPolicy finds idle for long: taint the candidate
tessera.dev/scale-down-candidate:PreferNoSchedule, plan again after --revalidate-after,
cordon it, drain it through the Eviction API, then annotate its Cluster API Machine
cluster.x-k8s.io/delete-machine and lower its MachineDeployment (or MachineSet) by one.
Machines live in the management cluster (--management-kubeconfig, by default the
workload cluster itself); without Cluster API there, a drained node stays cordoned and
labelled tessera.dev/removable=true. Every step is recorded on the objects, so a restarted
or newly elected replica carries on. "tessera autoscaler plan" shows the decisions.`,
		Args: cobra.NoArgs,
		RunE: runDaemon(func() (func(context.Context) error, error) { return prepareAutoscaler(f) }),
	}
	fs := cmd.Flags()
	f.kube.AddFlags(fs, "kubeconfig file of the workload cluster (nodes, pods) (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster config)")
	fs.StringVar(&f.managementKubeconfig, "management-kubeconfig", "", "kubeconfig file of the Cluster API management cluster (Machines); empty: the workload cluster")
	fs.StringVar(&f.config, "config", "", "scheduler configuration the cluster's scheduler runs; empty: --profile")
	profileFlag(cmd, &f.profile, "tessera", "built-in scheduler profile the cluster's scheduler runs, used when --config is empty: "+strings.Join(scheduler.ProfileNames(), ", "))
	fs.DurationVar(&f.period, "period", 10*time.Second, "time between planning rounds")
	fs.DurationVar(&f.revalidateAfter, "revalidate-after", 30*time.Second, "wait between tainting a candidate and planning again before cordoning it")
	fs.DurationVar(&f.markSettle, "machine-mark-settle", actuator.DefaultMarkSettle, "wait between marking a node's Machine for deletion and lowering its MachineDeployment, so that Cluster API's MachineSet sees the mark before it picks the Machine to delete")
	fs.DurationVar(&f.stepTimeout, "step-timeout", 10*time.Minute, "a drain or Machine removal step that has not completed by then fails and is undone")
	fs.BoolVar(&f.rightSizing, "gpu-right-sizing", true, "record the peak GPU memory of ended pods (from the node agents' GPUNodes) into their workloads' GPUProfiles, with a recommended GPU-memory request for the next run")
	f.serving.AddFlags(fs, "tessera-autoscaler")
	cmd.AddCommand(newAutoscalerPlanCommand())
	return cmd
}

// validate checks the flags that need no file and no cluster.
func (f autoscalerFlags) validate() error {
	return checks(
		positive("period", f.period, "10s"),
		positive("revalidate-after", f.revalidateAfter, "30s"),
		positive("step-timeout", f.stepTimeout, "10m"),
		positive("machine-mark-settle", f.markSettle, "10s"),
		f.serving.Validate(),
		f.kube.Validate())
}

// prepareAutoscaler checks the flags and reads the configuration and both kubeconfigs,
// then returns the autoscaler to run.
func prepareAutoscaler(f autoscalerFlags) (func(context.Context) error, error) {
	scfg, log, cfg, scheme, err := daemonInputs(f.validate(), f.config, f.profile, f.kube)
	if err != nil {
		return nil, err
	}
	mcfg, err := managementConfig(f.managementKubeconfig, cfg, f.kube.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		infra, err := managementCluster(ctx, mcfg, f.managementKubeconfig != "", log)
		if err != nil {
			return err
		}
		serving := f.serving
		serving.Log = log.WithName("autoscaler")
		mgr, _, err := actuator.NewManager(cfg, scheme, actuator.Config{
			Actuator:       actuator.Options{Scheduler: scfg, RevalidateAfter: f.revalidateAfter, StepTimeout: f.stepTimeout, MarkSettle: f.markSettle},
			Infrastructure: infra, Period: f.period, Registerer: crmetrics.Registry,
			Serving: serving,
		})
		if err != nil {
			return err
		}
		if f.rightSizing {
			if _, err := recommender.Setup(mgr, recommender.Options{Registerer: crmetrics.Registry, Log: log.WithName("gpuprofile-recommender")}); err != nil {
				return err
			}
		}
		log.Info("starting autoscaler", "period", f.period, "gpuRightSizing", f.rightSizing, "clusterAPI", clusterAPIState(infra), "leaderElect", f.serving.LeaderElect)
		return startManager(ctx, mgr, cacheSyncTimeout)
	}, nil
}

// managementConfig is the client configuration of the Cluster API management cluster:
// the file kubeconfig, else the workload cluster's.
func managementConfig(kubeconfig string, workload *rest.Config, timeout time.Duration) (*rest.Config, error) {
	if kubeconfig == "" {
		return workload, nil
	}
	return kubeclient.LoadFile("--management-kubeconfig", kubeconfig, timeout)
}

// managementCluster connects to the Cluster API management cluster of cfg (named by
// --management-kubeconfig when explicit); nil when it serves no Machines. It returns
// when ctx ends, whatever the API server does.
func managementCluster(ctx context.Context, cfg *rest.Config, explicit bool, log logr.Logger) (actuator.Infrastructure, error) {
	scheme := runtime.NewScheme()
	if err := capi.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("management cluster client: %w", err)
	}
	var ok bool
	err = untilDone(ctx, func() (err error) {
		ok, err = capi.Installed(c.RESTMapper())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("management cluster: look up Cluster API's Machines: %w", err)
	}
	if !ok {
		if explicit {
			return nil, fmt.Errorf("--management-kubeconfig: the cluster serves no cluster.x-k8s.io/v1beta2 Machines; install Cluster API there or drop the flag")
		}
		// Looked up again: right after an API server's restart discovery may not list
		// Cluster API's kinds yet.
		log.Info("no Cluster API in the cluster now: drained nodes stay cordoned, labelled " + autoscale.LabelRemovable +
			"=true; looked up again every 30s and before each removal")
		return &capi.Discovering{Config: cfg, Recheck: 30 * time.Second, Log: log}, nil
	}
	return capi.New(c), nil
}

func newAutoscalerPlanCommand() *cobra.Command {
	var management, config, profile, output string
	var kube kubeclient.Options
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print every GPU node, whether it is a scale-down candidate, and why or why not",
		Long: `Read the live cluster (kubeconfig) and plan once for every ScaleDownPolicy: each GPU
node the policy selects, whether it is a candidate (Empty or Underused), and otherwise the
rule that keeps it, including the min size of its Cluster API node group. A node counts as
idle from its GPUNode's lastActiveTime. Changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, scfg, err := liveClient(kube, config, profile, output)
			if err != nil {
				return err
			}
			cfg, err := restConfig(kube)
			if err != nil {
				return cli.Usage(err)
			}
			mcfg, err := managementConfig(management, cfg, kube.RequestTimeout)
			if err != nil {
				return cli.Usage(err)
			}
			infra, err := managementCluster(cmd.Context(), mcfg, management != "", klog.NewKlogr())
			if err != nil {
				return err
			}
			plans, err := actuator.PlanCluster(cmd.Context(), c, infra, scfg, time.Now())
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), plans)
			}
			if len(plans) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no ScaleDownPolicy: nothing is scaled down")
			}
			for _, p := range plans {
				if err := p.WriteText(cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	liveFlags(cmd, "kubeconfig file of the workload cluster (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster config)", &kube, &config, &profile, &output)
	cmd.Flags().StringVar(&management, "management-kubeconfig", "", "kubeconfig file of the Cluster API management cluster, for the node groups' min size; empty: the workload cluster")
	return cmd
}

// clusterAPIState says how the autoscaler reaches Machines, for its start log.
func clusterAPIState(infra actuator.Infrastructure) string {
	switch infra.(type) {
	case nil:
		return "none"
	case *capi.Discovering:
		return "not served yet: looked up again"
	}
	return "served"
}
