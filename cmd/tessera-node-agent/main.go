package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/nodeagent"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tessera-node-agent:", err)
		os.Exit(1)
	}
}

// newRootCommand is the agent: the flags and behaviour of what was `tessera node-agent`,
// plus --version and a version subcommand.
func newRootCommand() *cobra.Command {
	cfg := nodeagent.Config{NodeName: os.Getenv("NODE_NAME")}
	var kubeconfig, metricsAddr, fakeGPUs string
	var verbosity int
	cmd := &cobra.Command{
		Use:           "tessera-node-agent",
		Short:         "Discover GPUs through NVML, publish GPUNode, serve the device plugin",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `Runs on every GPU node (DaemonSet). Discovers the GPUs through NVML and publishes them in
the node's GPUNode and on the Node (labels tessera.dev/gpu-model and tessera.dev/gpu-count,
capacity tessera.dev/gpu-memory in MiB); serves the kubelet device plugin for tessera.dev/gpu,
handing each container the GPUs of its pod's tessera.dev/gpu-assignment; samples utilisation
and per-pod GPU memory; serves Prometheus metrics. A missing or failing NVML is reported and
retried; it never stops the agent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.NodeName == "" {
				return errors.New("node name is empty: set --node-name or NODE_NAME (the downward API's spec.nodeName)")
			}
			gpus, err := gpuSource(fakeGPUs)
			if err != nil {
				return err
			}
			log := funcr.NewJSON(func(obj string) { fmt.Fprintln(cmd.ErrOrStderr(), obj) }, funcr.Options{Verbosity: verbosity})
			restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("kubernetes client config (--kubeconfig, or in-cluster): %w", err)
			}
			kube, err := kubernetes.NewForConfig(restCfg)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(restCfg)
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			bc := record.NewBroadcaster()
			defer bc.Shutdown()
			bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
			agent, err := nodeagent.New(cfg, nodeagent.Deps{
				GPUs: gpus, Kube: kube, Dynamic: dyn, Registry: reg, Log: log,
				Recorder: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tessera-node-agent", Host: cfg.NodeName}),
			})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
			mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
			srv := &http.Server{Addr: metricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			srvErr := make(chan error, 1)
			go func() {
				if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
					srvErr <- fmt.Errorf("metrics server on %s: %w", metricsAddr, err)
					stop()
				}
			}()
			log.Info("Starting node agent", "node", cfg.NodeName, "metrics", metricsAddr, "sharesPerGPU", cfg.SharesPerGPU, "mps", cfg.MPS)
			runErr := agent.Run(ctx)
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
			select {
			case err := <-srvErr:
				return err
			default:
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "name of the node the agent runs on (default $NODE_NAME)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty means in-cluster")
	f.IntVar(&cfg.SharesPerGPU, "shares-per-gpu", 1, "tessera.dev/gpu devices advertised per GPU")
	f.BoolVar(&cfg.MPS, "mps", false, "set CUDA_MPS_PINNED_DEVICE_MEM_LIMIT on containers with a memory slice (MPS control daemon runs on the node)")
	f.DurationVar(&cfg.SampleInterval, "sample-interval", 10*time.Second, "how often GPUs are sampled and the GPUNode status written")
	f.IntVar(&cfg.IdleUtilizationPercent, "idle-utilization-percent", 5, "a GPU above this utilisation counts as active for lastActiveTime")
	f.StringVar(&cfg.ProcRoot, "proc-root", "/proc", "the host's /proc, to map GPU processes to pods through their cgroups")
	f.StringVar(&cfg.DevicePluginDir, "device-plugin-dir", pb.DevicePluginPath, "kubelet device plugin directory (holds kubelet.sock); empty disables the device plugin")
	f.DurationVar(&cfg.RetryMax, "nvml-retry-max", 5*time.Minute, "longest wait between NVML attempts when it is missing or failing")
	f.StringVar(&metricsAddr, "metrics-addr", ":9400", "address of the Prometheus /metrics and /healthz endpoint")
	f.StringVar(&fakeGPUs, "fake-gpus", "", "simulate the node's GPUs with go-nvml's mocks instead of loading NVML ("+strings.Join(fakeGPUModels(), ", ")+"), to try Tessera or test it without GPUs")
	f.IntVarP(&verbosity, "v", "v", 0, "log verbosity")
	cli.AddVersion(cmd)
	cli.PlainBoolFlags(cmd)
	return cmd
}

// gpuSource is the real NVML library, or the simulated node --fake-gpus names.
func gpuSource(fake string) (*nvidia.Source, error) {
	if fake == "" {
		return nvidia.NewSystem(), nil
	}
	node, err := nvidiatest.ByName(fake)
	if err != nil {
		return nil, fmt.Errorf("--fake-gpus: %w", err)
	}
	return node.Source(), nil
}

func fakeGPUModels() []string { return slices.Sorted(maps.Keys(nvidiatest.Models)) }
