package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/nodeagent"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
	"github.com/tessera-gpu/tessera/nodeagent/dra"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/nodeagent/pressure"
	"github.com/tessera-gpu/tessera/nodeagent/toolkit"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tessera-node-agent:", err)
		os.Exit(cli.ExitCode(err))
	}
}

// agentFlags are the agent's command line.
type agentFlags struct {
	cfg                    nodeagent.Config
	kube                   kubeclient.Options
	metricsAddr, probeAddr string
	fakeGPUs               string
	fakeComputeMode        string
	strategies             string
	shareStep              string
	verbosity              int
}

// newRootCommand is the agent: the flags and behaviour of what was `tessera node-agent`,
// plus --version and a version subcommand.
func newRootCommand() *cobra.Command {
	f := agentFlags{cfg: nodeagent.Config{NodeName: os.Getenv("NODE_NAME")}}
	cmd := &cobra.Command{
		Use:           "tessera-node-agent",
		Short:         "Discover GPUs through NVML, publish GPUNode, serve the device plugin",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `Runs on every GPU node (DaemonSet). Discovers the GPUs through NVML and publishes them in
the node's GPUNode and on the Node (labels tessera.dev/gpu-model and tessera.dev/gpu-count,
capacity tessera.dev/gpu-memory in MiB); serves the kubelet device plugins for tessera.dev/gpu
and tessera.dev/gpu-slice, handing each container the GPUs of its pod's tessera.dev/gpu-assignment
as devices (CDI, or the NVIDIA container toolkit's volume-mount device list), never through the
environment alone; samples utilisation and per-pod GPU memory; serves Prometheus metrics. A
missing or failing NVML is reported and retried; it never stops the agent.

Where the API server serves resource.k8s.io/v1 (--dra=auto, the default), the agent is also the
node's Dynamic Resource Allocation driver gpu.tessera.dev: it publishes the GPUs as the node's
ResourceSlice pool (a device gpu-<index> per GPU, with a consumable memory capacity; shared by
memory where --mps is on and the GPU is in EXCLUSIVE_PROCESS compute mode) and prepares the claims
allocated on the node, handing each its GPU as CDI devices and, for a memory share, the MPS limit
and pipe directory (a CDI spec per claim in --cdi-spec-dir). A share on a GPU without MPS is
refused. The device plugins keep serving, so that pods asking for tessera.dev/gpu keep working,
unless --extended-resource-claims leaves their GPUs to the claims Tessera's scheduler makes for
them (auto: on a kubelet of 1.37 or later): then GPUs reach containers only through claims.

GPUs are handed out only while the NVIDIA container toolkit's configuration (--toolkit-config)
sets accept-nvidia-visible-devices-envvar-when-unprivileged = false: otherwise any pod could pick
any GPU through its own NVIDIA_VISIBLE_DEVICES, and the device plugins advertise none
(tessera_node_agent_gpu_delivery_refused is 1, the log says how to fix it).

Exit codes: 0 stopped by SIGINT or SIGTERM, 1 failed, 2 unusable flags or kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := f.prepare(cmd.ErrOrStderr())
			if err != nil {
				return cli.Usage(err)
			}
			return cli.UntilSignal(cmd.Context(), cli.ShutdownGrace, run)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.cfg.NodeName, "node-name", f.cfg.NodeName, "name of the node the agent runs on (default $NODE_NAME)")
	f.kube.AddFlags(fs, "")
	fs.IntVar(&f.cfg.SharesPerGPU, "shares-per-gpu", 1, "tessera.dev/gpu devices advertised per GPU")
	fs.IntVar(&f.cfg.SlicesPerGPU, "slices-per-gpu", 32, "tessera.dev/gpu-slice devices advertised per GPU: the most GPU-memory-slice containers a GPU holds at once (0: no slice resource)")
	fs.BoolVar(&f.cfg.MPS, "mps", false, "hold each memory slice's limit in the node's MPS control daemon (nvidia-cuda-mps-control), and set CUDA_MPS_PINNED_DEVICE_MEM_LIMIT on its container")
	fs.StringVar(&f.cfg.MPSPipeDirectory, "mps-pipe-directory", "", "CUDA_MPS_PIPE_DIRECTORY of the MPS control daemon (default: its own, /tmp/nvidia-mps)")
	fs.StringVar(&f.strategies, "device-list-strategy", deviceplugin.StrategyCDICRI, "how GPUs are handed to containers, comma-separated: "+strings.Join(deviceplugin.Strategies, ", ")+
		" (envvar alone is refused: a pod's own NVIDIA_VISIBLE_DEVICES overrides it)")
	fs.StringVar(&f.cfg.CDIKind, "cdi-kind", deviceplugin.DefaultCDIKind, "vendor/class of the GPUs' CDI devices, named <kind>=<GPU UUID> (the NVIDIA container toolkit's generated CDI spec)")
	fs.StringVar(&f.cfg.PodResourcesSocket, "pod-resources-socket", deviceplugin.DefaultPodResourcesSocket, "the kubelet's pod resources API, its record of device allocations, read so that a restarted agent never takes an allocated pod for the next (empty: not read; unsafe across restarts)")
	fs.StringVar(&f.cfg.ToolkitConfig, "toolkit-config", toolkit.DefaultConfigPath, "the NVIDIA container toolkit's configuration (the host's, mounted read-only), checked before GPUs are handed out")
	fs.BoolVar(&f.cfg.SkipToolkitCheck, "unsafe-skip-toolkit-check", false, "hand out GPUs without checking the toolkit's configuration: UNSAFE wherever a pod's own NVIDIA_VISIBLE_DEVICES reaches the container runtime; for nodes without the NVIDIA container toolkit")
	fs.DurationVar(&f.cfg.SampleInterval, "sample-interval", 10*time.Second, "how often GPUs are sampled and the GPUNode status written")
	fs.IntVar(&f.cfg.IdleUtilizationPercent, "idle-utilization-percent", 5, "a GPU above this utilisation counts as active for lastActiveTime")
	fs.IntVar(&f.cfg.PressureThresholdPercent, "gpu-pressure-threshold-percent", pressure.DefaultThresholdPercent, "evict the pod furthest above its GPU-memory request (Eviction API) when a GPU's memory in use passes this percentage of its memory, "+
		"or a newly bound pod's request would (0: no GPU-memory pressure eviction)")
	fs.DurationVar(&f.cfg.PressureArrivalWindow, "gpu-pressure-arrival-window", pressure.DefaultArrivalWindow, "how long a newly bound pod's GPU-memory request is reserved for it while it has not reached it")
	fs.StringVar(&f.cfg.ProcRoot, "proc-root", "/proc", "the host's /proc, to map GPU processes to pods through their cgroups")
	fs.StringVar(&f.cfg.DevicePluginDir, "device-plugin-dir", pb.DevicePluginPath, "kubelet device plugin directory (holds kubelet.sock); empty disables the device plugin")
	fs.StringVar(&f.cfg.DRA, "dra", nodeagent.DRAAuto, "be the node's Dynamic Resource Allocation driver "+dra.DriverName+" (publish the GPUs as ResourceSlices, prepare claims): "+
		strings.Join(nodeagent.DRAModes, ", ")+"; auto: when the API server serves resource.k8s.io/v1. The device plugins keep serving unless --extended-resource-claims leaves GPUs to claims")
	fs.StringVar(&f.cfg.ExtendedResourceClaims, "extended-resource-claims", nodeagent.DRAAuto, "leave the GPUs of pods asking "+string(tesserav1.ResourceGPU)+" or "+string(tesserav1.ResourceGPUMemory)+
		" to the claims Tessera's scheduler makes for them (its --extended-resource-claims), the device plugins not serving: "+strings.Join(nodeagent.DRAModes, ", ")+
		"; auto: while the agent is the DRA driver and the node's kubelet is "+tesserav1.ExtendedResourceClaimsKubelet+" or later, on: while it is the DRA driver")
	fs.StringVar(&f.shareStep, "dra-share-step", dra.DefaultShareStep.String(), "granularity of the GPU-memory shares DRA claims consume (a quantity: 1Gi, 512Mi)")
	fs.StringVar(&f.cfg.CDISpecDir, "cdi-spec-dir", cdi.DefaultDir, "directory the container runtime reads CDI specs from; the DRA driver writes one per prepared claim")
	fs.StringVar(&f.cfg.KubeletPluginsDir, "kubelet-plugins-dir", kubeletplugin.KubeletPluginsDir, "the kubelet's plugin directory: the DRA driver's socket is in <dir>/"+dra.DriverName)
	fs.StringVar(&f.cfg.KubeletRegistryDir, "kubelet-registry-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory")
	fs.DurationVar(&f.cfg.RetryMax, "nvml-retry-max", 5*time.Minute, "longest wait between NVML attempts when it is missing or failing")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":9400", "address of the Prometheus /metrics endpoint, and of /healthz unless --health-probe-bind-address is given (0 disables it)")
	cli.DeprecatedAlias(cmd, "metrics-bind-address", "metrics-addr")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", "", "address of /healthz and /readyz (default: the metrics address; 0 disables them)")
	fs.StringVar(&f.fakeGPUs, "fake-gpus", "", "simulate the node's GPUs with go-nvml's mocks instead of loading NVML ("+strings.Join(fakeGPUModels(), ", ")+"), to try Tessera or test it without GPUs")
	fs.StringVar(&f.fakeComputeMode, "fake-compute-mode", "", "with --fake-gpus: every simulated GPU's compute mode, as nvidia-smi -c names it ("+strings.Join(fakeComputeModeNames(), ", ")+
		"; unset: default); exclusive-process with --mps makes them DRA devices shared by memory")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log level (verbosity)")
	cli.AddVersion(cmd)
	cli.PlainBoolFlags(cmd)
	cli.UsageErrors(cmd)
	return cmd
}

// validate checks the flags that need no file and no cluster.
func (f agentFlags) validate() error {
	var errs []error
	if f.cfg.NodeName == "" {
		errs = append(errs, errors.New("node name is empty: set --node-name or NODE_NAME (the downward API's spec.nodeName)"))
	}
	if f.cfg.SharesPerGPU < 1 {
		errs = append(errs, fmt.Errorf("--shares-per-gpu %d: must be 1 or more (1: whole GPUs)", f.cfg.SharesPerGPU))
	}
	if f.cfg.SampleInterval <= 0 {
		errs = append(errs, fmt.Errorf("--sample-interval %s: must be positive (for example --sample-interval=10s)", f.cfg.SampleInterval))
	}
	if f.cfg.RetryMax <= 0 {
		errs = append(errs, fmt.Errorf("--nvml-retry-max %s: must be positive (for example --nvml-retry-max=5m)", f.cfg.RetryMax))
	}
	if p := f.cfg.IdleUtilizationPercent; p < 0 || p > 100 {
		errs = append(errs, fmt.Errorf("--idle-utilization-percent %d: must be from 0 to 100", p))
	}
	if p := f.cfg.PressureThresholdPercent; p < 0 || p > 100 {
		errs = append(errs, fmt.Errorf("--gpu-pressure-threshold-percent %d: must be from 1 to 100 (0: no GPU-memory pressure eviction)", p))
	}
	if f.cfg.PressureArrivalWindow < 0 {
		errs = append(errs, fmt.Errorf("--gpu-pressure-arrival-window %s: must not be negative (for example 5m)", f.cfg.PressureArrivalWindow))
	}
	if s, err := deviceplugin.ParseStrategies(f.strategies); err != nil {
		errs = append(errs, fmt.Errorf("--device-list-strategy %q: %w", f.strategies, err))
	} else if deviceplugin.EnvOnly(s) && !f.cfg.SkipToolkitCheck {
		errs = append(errs, fmt.Errorf("--device-list-strategy %q: the environment alone is not delivery, a pod's own NVIDIA_VISIBLE_DEVICES overrides it; "+
			"use cdi-cri, cdi-annotations or volume-mounts (or --unsafe-skip-toolkit-check)", f.strategies))
	}
	if !cdiKind.MatchString(f.cfg.CDIKind) {
		errs = append(errs, fmt.Errorf("--cdi-kind %q: want vendor/class, for example %s", f.cfg.CDIKind, deviceplugin.DefaultCDIKind))
	}
	if f.cfg.SlicesPerGPU < 0 {
		errs = append(errs, fmt.Errorf("--slices-per-gpu %d: must not be negative (0: no slice resource)", f.cfg.SlicesPerGPU))
	}
	if !slices.Contains(nodeagent.DRAModes, f.cfg.DRA) {
		errs = append(errs, fmt.Errorf("--dra %q: want one of %s", f.cfg.DRA, strings.Join(nodeagent.DRAModes, ", ")))
	}
	if !slices.Contains(nodeagent.DRAModes, f.cfg.ExtendedResourceClaims) {
		errs = append(errs, fmt.Errorf("--extended-resource-claims %q: want one of %s", f.cfg.ExtendedResourceClaims, strings.Join(nodeagent.DRAModes, ", ")))
	}
	if q, err := resource.ParseQuantity(f.shareStep); err != nil || q.Value() < 1<<20 {
		errs = append(errs, fmt.Errorf("--dra-share-step %q: want a quantity of 1Mi or more, for example --dra-share-step=1Gi", f.shareStep))
	}
	if f.cfg.DRA != nodeagent.DRAOff {
		for flag, dir := range map[string]string{"cdi-spec-dir": f.cfg.CDISpecDir, "kubelet-plugins-dir": f.cfg.KubeletPluginsDir, "kubelet-registry-dir": f.cfg.KubeletRegistryDir} {
			if !filepath.IsAbs(dir) {
				errs = append(errs, fmt.Errorf("--%s %q: want an absolute path (or --dra=off)", flag, dir))
			}
		}
	}
	if f.fakeComputeMode != "" {
		if f.fakeGPUs == "" {
			errs = append(errs, fmt.Errorf("--fake-compute-mode %q: only with --fake-gpus; a real GPU's compute mode is set with `nvidia-smi -c`", f.fakeComputeMode))
		} else if _, ok := nvidiatest.ComputeModes[f.fakeComputeMode]; !ok {
			errs = append(errs, fmt.Errorf("--fake-compute-mode %q: want one of %s", f.fakeComputeMode, strings.Join(fakeComputeModeNames(), ", ")))
		}
	}
	if f.verbosity < 0 {
		errs = append(errs, fmt.Errorf("-v %d: must not be negative", f.verbosity))
	}
	errs = append(errs,
		cli.CheckBindAddress("metrics-bind-address", f.metricsAddr, true),
		cli.CheckBindAddress("health-probe-bind-address", f.probeAddr, true),
		f.kube.Validate())
	return errors.Join(errs...)
}

// cdiKind is a CDI vendor/class.
var cdiKind = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// prepare checks the flags, reads the kubeconfig and picks the GPUs, then returns the
// agent to run; it connects to nothing.
func (f agentFlags) prepare(stderr io.Writer) (func(context.Context) error, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	gpus, err := gpuSource(f.fakeGPUs, f.fakeComputeMode)
	if err != nil {
		return nil, err
	}
	restCfg, err := f.kube.Config()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	f.cfg.DeviceListStrategies, _ = deviceplugin.ParseStrategies(f.strategies)
	f.cfg.DRAShareStep = resource.MustParse(f.shareStep)
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{Verbosity: f.verbosity})
	return func(ctx context.Context) error {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		bc := record.NewBroadcaster()
		defer bc.Shutdown()
		bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		cfg := f.cfg
		agent, err := nodeagent.New(cfg, nodeagent.Deps{
			GPUs: gpus, Kube: kube, Dynamic: dyn, Registry: reg, Log: log,
			Recorder: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tessera-node-agent", Host: cfg.NodeName}),
		})
		if err != nil {
			return err
		}
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		servers, srvErr := f.serve(reg, stop)
		log.Info("Starting node agent", "node", cfg.NodeName, "metrics", f.metricsAddr, "sharesPerGPU", cfg.SharesPerGPU, "slicesPerGPU", cfg.SlicesPerGPU,
			"mps", cfg.MPS, "dra", cfg.DRA, "deviceListStrategy", cfg.DeviceListStrategies, "toolkitConfig", cfg.ToolkitConfig)
		runErr := agent.Run(ctx)
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, srv := range servers {
			_ = srv.Shutdown(shutdown)
		}
		select {
		case err := <-srvErr:
			return err
		default:
		}
		return runErr
	}, nil
}

// serve starts the metrics endpoint and the probes (on the metrics address unless
// --health-probe-bind-address names another); a server that fails sends its error and
// calls stop.
func (f agentFlags) serve(reg *prometheus.Registry, stop func()) ([]*http.Server, <-chan error) {
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	probes := metrics
	if f.probeAddr != "" && f.probeAddr != f.metricsAddr {
		probes = http.NewServeMux()
	}
	probes.HandleFunc("/healthz", ok)
	probes.HandleFunc("/readyz", ok)
	addrs := map[string]*http.ServeMux{}
	if f.metricsAddr != "0" {
		addrs[f.metricsAddr] = metrics
	}
	if probes != metrics && f.probeAddr != "0" {
		addrs[f.probeAddr] = probes
	}
	errc := make(chan error, len(addrs))
	var servers []*http.Server
	for addr, mux := range addrs {
		srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serving on %s: %w", addr, err)
				stop()
			}
		}()
	}
	return servers, errc
}

// gpuSource is the real NVML library, or the simulated node --fake-gpus names with its
// GPUs in the compute mode --fake-compute-mode names ("": NVML's default).
func gpuSource(fake, computeMode string) (*nvidia.Source, error) {
	if fake == "" {
		return nvidia.NewSystem(), nil
	}
	node, err := nvidiatest.ByName(fake)
	if err != nil {
		return nil, fmt.Errorf("--fake-gpus: %w", err)
	}
	if mode, ok := nvidiatest.ComputeModes[computeMode]; ok {
		for i := range node.Devices {
			node.SetComputeMode(i, mode)
		}
	}
	return node.Source(), nil
}

func fakeGPUModels() []string { return slices.Sorted(maps.Keys(nvidiatest.Models)) }

func fakeComputeModeNames() []string { return slices.Sorted(maps.Keys(nvidiatest.ComputeModes)) }
