package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/nodeagent/cgroup"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
	"github.com/tessera-gpu/tessera/nodeagent/dra"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/nodeagent/metrics"
	"github.com/tessera-gpu/tessera/nodeagent/mps"
	"github.com/tessera-gpu/tessera/nodeagent/pressure"
	"github.com/tessera-gpu/tessera/nodeagent/publish"
	"github.com/tessera-gpu/tessera/nodeagent/toolkit"
)

// Config tunes the agent.
type Config struct {
	// NodeName is the node the agent runs on (required).
	NodeName string
	// SharesPerGPU is how many tessera.dev/gpu devices each GPU is advertised as.
	SharesPerGPU int
	// SlicesPerGPU is how many tessera.dev/gpu-slice devices each GPU is advertised as:
	// the most memory-slice containers it holds at once (0: no slice resource).
	SlicesPerGPU int
	// MPS holds each memory slice's limit in the node's MPS control daemon (and sets
	// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT on the container).
	MPS bool
	// MPSPipeDirectory is the MPS control daemon's CUDA_MPS_PIPE_DIRECTORY (empty: its
	// default).
	MPSPipeDirectory string
	// DeviceListStrategies say how GPUs are handed to containers (default cdi-cri).
	DeviceListStrategies []string
	// CDIKind is the vendor/class of the GPUs' CDI devices (default nvidia.com/gpu).
	CDIKind string
	// PodResourcesSocket is the kubelet's pod resources API, its record of the device
	// allocations; empty: the plugin knows only its own and the pods' statuses.
	PodResourcesSocket string
	// ToolkitConfig is the NVIDIA container toolkit's configuration, checked before any
	// GPU is handed out (default /etc/nvidia-container-runtime/config.toml).
	ToolkitConfig string
	// SkipToolkitCheck hands out GPUs whatever the toolkit's configuration: unsafe
	// wherever a pod's own NVIDIA_VISIBLE_DEVICES reaches the toolkit.
	SkipToolkitCheck bool
	// SampleInterval is how often the GPUs are sampled and the GPUNode status written.
	SampleInterval time.Duration
	// IdleUtilizationPercent: a GPU above it counts as active for lastActiveTime.
	IdleUtilizationPercent int
	// ProcRoot is where /proc/<pid>/cgroup is read (the host's /proc).
	ProcRoot string
	// DevicePluginDir holds kubelet.sock; empty disables the device plugin.
	DevicePluginDir string
	// RetryMin and RetryMax bound the backoff between NVML attempts.
	RetryMin, RetryMax time.Duration
	// DRA says whether the agent is the node's DRA driver (gpu.tessera.dev): DRAOn,
	// DRAOff (also when empty), or DRAAuto: on when the API server serves
	// resource.k8s.io/v1 ResourceSlices. The device plugin serves its extended resources
	// either way, so that pods asking for them keep working; claims go through DRA.
	DRA string
	// ExtendedResourceClaims says whether pods asking tessera.dev/gpu or
	// tessera.dev/gpu-memory get their GPUs through the claims Tessera's scheduler makes
	// for them (the scheduler's --extended-resource-claims), so that the device plugins
	// of tessera.dev/gpu and tessera.dev/gpu-slice do not serve and GPUs reach containers
	// only through claims: DRAOn (while the agent is the DRA driver), DRAOff (also when
	// empty), or DRAAuto: while the agent is the DRA driver and the node's kubelet is
	// tesserav1.ExtendedResourceClaimsKubelet or later, as the scheduler's auto decides.
	ExtendedResourceClaims string
	// DRAShareStep is the granularity of memory shares of the DRA devices (default 1Gi).
	DRAShareStep resource.Quantity
	// CDISpecDir is where the DRA driver writes the claims' CDI specs (default
	// /var/run/cdi).
	CDISpecDir string
	// PressureThresholdPercent of a GPU's memory in use makes the agent evict the pod
	// furthest above its GPU-memory request there (package pressure); 0 evicts nothing.
	PressureThresholdPercent int
	// PressureArrivalWindow is how long a newly bound pod's GPU-memory request is
	// reserved while it has not reached it (default pressure.DefaultArrivalWindow).
	PressureArrivalWindow time.Duration
	// KubeletPluginsDir holds the DRA driver's socket, in <dir>/gpu.tessera.dev
	// (default /var/lib/kubelet/plugins); KubeletRegistryDir is where the kubelet finds
	// plugin registration sockets (default /var/lib/kubelet/plugins_registry).
	KubeletPluginsDir, KubeletRegistryDir string
}

// DRA modes (Config.DRA).
const (
	DRAAuto = "auto"
	DRAOn   = "on"
	DRAOff  = "off"
)

// DRAModes lists the DRA modes, the command line's default first.
var DRAModes = []string{DRAAuto, DRAOn, DRAOff}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.SharesPerGPU <= 0 {
		c.SharesPerGPU = 1
	}
	if c.SampleInterval <= 0 {
		c.SampleInterval = 10 * time.Second
	}
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	if c.RetryMin <= 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(5*time.Minute, c.RetryMin)
	}
	if len(c.DeviceListStrategies) == 0 {
		c.DeviceListStrategies = []string{deviceplugin.StrategyCDICRI}
	}
	if c.ToolkitConfig == "" {
		c.ToolkitConfig = toolkit.DefaultConfigPath
	}
}

// Deps are what the agent talks to.
type Deps struct {
	GPUs     gpu.Source
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Registry prometheus.Registerer
	Recorder record.EventRecorder
	Log      logr.Logger
	// Pods lists the node's pods; defaults to the API server.
	Pods deviceplugin.Pods
}

// Event reasons.
const (
	ReasonSliceExceeded   = "GPUMemorySliceExceeded"
	ReasonNVMLUnavailable = "NVMLUnavailable"
	ReasonGPUUnhealthy    = "GPUUnhealthy"
	ReasonAllGPUsHealthy  = "AllGPUsHealthy"
	ReasonNoGPUs          = "NoGPUs"
	// ReasonGPUAssignmentRefused: the device plugin refused the pod's GPU allocation (no
	// assignment, another scheduler, an assignment the scheduler did not write).
	ReasonGPUAssignmentRefused = "GPUAssignmentRefused"
)

// Agent is the node agent.
type Agent struct {
	cfg     Config
	deps    Deps
	pub     *publish.Publisher
	plugins []*deviceplugin.Plugin
	metrics *metrics.Metrics
	cgroups cgroup.Resolver
	now     func() time.Time
	// dra is the DRA driver, nil while DRA is off.
	dra *dra.Driver
	// claims are the ResourceClaims of the node's pods read for pressure eviction, by
	// namespace/name (withClaimShares).
	claims map[string]*resourceapi.ResourceClaim
	// pressure decides GPU-memory pressure evictions; nil when they are off.
	pressure *pressure.Tracker

	inv        gpu.Inventory
	islands    map[int]int32
	broken     map[string]string // sticky: UUID -> reason (Xid, fallen off the bus)
	lastActive *metav1.Time
	overused   map[types.UID]bool
	usage      usageHistory
	lastNode   *publish.NodeFields
	refusal    string // why GPUs are not handed out, "" when they are
	// draDevices is the inventory as last read for the DRA driver: re-read every sample,
	// so that a compute mode changed with nvidia-smi reaches the ResourceSlice.
	draDevices []gpu.Device
}

// New returns an agent; Run starts it.
func New(cfg Config, deps Deps) (*Agent, error) {
	cfg.Defaults()
	if cfg.NodeName == "" {
		return nil, errors.New("node name is empty: set --node-name or NODE_NAME (the downward API's spec.nodeName)")
	}
	if deps.Pods == nil {
		deps.Pods = deviceplugin.KubePods{Client: deps.Kube, Node: cfg.NodeName}
	}
	a := &Agent{
		cfg:      cfg,
		deps:     deps,
		pub:      &publish.Publisher{Kube: deps.Kube, Dynamic: deps.Dynamic, NodeName: cfg.NodeName},
		claims:   map[string]*resourceapi.ResourceClaim{},
		metrics:  metrics.New(deps.Registry, cfg.NodeName),
		cgroups:  cgroup.Resolver{ProcRoot: cfg.ProcRoot},
		now:      time.Now,
		broken:   map[string]string{},
		overused: map[types.UID]bool{},
	}
	if p := cfg.PressureThresholdPercent; p < 0 || p > 100 {
		return nil, fmt.Errorf("pressure threshold %d%%: want 1 to 100 (0: no GPU-memory pressure eviction)", p)
	} else if p > 0 {
		a.pressure = &pressure.Tracker{Policy: pressure.Policy{ThresholdPercent: p, ArrivalWindow: cfg.PressureArrivalWindow}}
	}
	if cfg.DevicePluginDir != "" {
		opts := deviceplugin.Options{
			NodeName: cfg.NodeName, SharesPerGPU: cfg.SharesPerGPU, Strategies: cfg.DeviceListStrategies, CDIKind: cfg.CDIKind,
			PluginDir: cfg.DevicePluginDir, Pods: deps.Pods, OnRefusal: a.refused, Log: deps.Log.WithName("device-plugin"),
		}
		if cfg.MPS {
			opts.MPS = mps.ControlDaemon{PipeDirectory: cfg.MPSPipeDirectory}
		}
		if cfg.PodResourcesSocket != "" {
			opts.Ledger = deviceplugin.KubeletLedger{Socket: cfg.PodResourcesSocket}
		}
		a.plugins = append(a.plugins, deviceplugin.New(opts))
		if cfg.SlicesPerGPU > 0 {
			opts.ResourceName, opts.SocketName, opts.SharesPerGPU, opts.Slices = tesserav1.ResourceGPUSlice, "tessera-gpu-slice.sock", cfg.SlicesPerGPU, true
			opts.Log = deps.Log.WithName("device-plugin-slices")
			a.plugins = append(a.plugins, deviceplugin.New(opts))
		}
	}
	switch cfg.DRA {
	case "", DRAOff:
	case DRAOn, DRAAuto:
		opts := dra.Options{NodeName: cfg.NodeName, Kube: deps.Kube, ShareStep: cfg.DRAShareStep, GPUCDIKind: cfg.CDIKind, CDIDir: cfg.CDISpecDir, PluginsDir: cfg.KubeletPluginsDir,
			RegistryDir: cfg.KubeletRegistryDir, Recorder: deps.Recorder, Log: deps.Log.WithName("dra")}
		if cfg.MPS {
			opts.MPS = &mps.ControlDaemon{PipeDirectory: cfg.MPSPipeDirectory}
		}
		d, err := dra.New(opts)
		if err != nil {
			return nil, err
		}
		a.dra = d
	default:
		return nil, fmt.Errorf("DRA mode %q: want one of %s", cfg.DRA, strings.Join(DRAModes, ", "))
	}
	if m := cfg.ExtendedResourceClaims; m != "" && !slices.Contains(DRAModes, m) {
		return nil, fmt.Errorf("extended-resource claims mode %q: want one of %s", m, strings.Join(DRAModes, ", "))
	}
	return a, nil
}

// claimsCarryGPUs decides whether the GPUs of pods asking the extended resources reach
// them through the claims the scheduler makes (Config.ExtendedResourceClaims), once the
// DRA driver is decided: then the device plugins do not serve.
func (a *Agent) claimsCarryGPUs(ctx context.Context) bool {
	switch a.cfg.ExtendedResourceClaims {
	case DRAOn:
		return a.dra != nil
	case DRAAuto:
	default:
		return false
	}
	if a.dra == nil {
		return false
	}
	n, err := a.deps.Kube.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		a.deps.Log.Error(err, "Cannot read the node's kubelet version; the device plugins serve tessera.dev/gpu (set --extended-resource-claims=on to leave them to claims)")
		return false
	}
	v, err := version.ParseGeneric(n.Status.NodeInfo.KubeletVersion)
	return err == nil && v.AtLeast(version.MustParseGeneric(tesserav1.ExtendedResourceClaimsKubelet))
}

// draServed decides DRA auto mode: on when the API server serves resource.k8s.io/v1
// ResourceSlices. A failed discovery leaves DRA off (the device plugin still serves).
func (a *Agent) draServed(ctx context.Context) bool {
	served, err := dra.Served(ctx, a.deps.Kube.Discovery())
	switch {
	case ctx.Err() != nil:
	case err != nil:
		a.deps.Log.Error(err, "Cannot tell whether the API server serves DRA; DRA stays off (set --dra=on to force it)")
	case served:
		a.deps.Log.Info("The API server serves resource.k8s.io/v1: the agent is the DRA driver", "driver", dra.DriverName)
	default:
		a.deps.Log.Info("The API server does not serve resource.k8s.io/v1 ResourceSlices: DRA off, GPUs through the device plugin only")
	}
	return err == nil && served
}

// deliveryRefusal says why GPUs must not be handed out on this node, or "": the NVIDIA
// container toolkit still takes device lists from an unprivileged container's own
// NVIDIA_VISIBLE_DEVICES, so a pod could reach GPUs it was not given whatever the device
// plugin hands out. It is read again on every sample, so fixing the configuration takes
// effect without a restart.
func (a *Agent) deliveryRefusal() string {
	if a.cfg.SkipToolkitCheck {
		return ""
	}
	if err := toolkit.Check(a.cfg.ToolkitConfig); err != nil {
		return err.Error()
	}
	return ""
}

// refused reports an allocation the device plugin refused: a metric, and a Warning
// event on the pod (the kubelet fails the pod with the plugin's error as well).
func (a *Agent) refused(r *deviceplugin.Refusal) {
	a.metrics.Refused(r.Reason).Inc()
	if a.deps.Recorder != nil {
		a.deps.Recorder.Event(r.Pod, corev1.EventTypeWarning, ReasonGPUAssignmentRefused, r.Error())
	}
}

// Run runs until ctx ends. NVML failures never end it.
func (a *Agent) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if a.cfg.SkipToolkitCheck && len(a.plugins) > 0 {
		a.deps.Log.Info("UNSAFE: the NVIDIA container toolkit's configuration is not checked (--unsafe-skip-toolkit-check): "+
			"where it takes device lists from NVIDIA_VISIBLE_DEVICES, any pod can reach any GPU of this node", "config", a.cfg.ToolkitConfig)
	}
	if a.dra != nil && a.cfg.DRA == DRAAuto && !a.draServed(ctx) {
		a.dra = nil
	}
	if len(a.plugins) > 0 && a.claimsCarryGPUs(ctx) {
		a.deps.Log.Info("GPUs of pods asking "+string(tesserav1.ResourceGPU)+" or "+string(tesserav1.ResourceGPUMemory)+" reach them through the claims Tessera's scheduler makes: the device plugins do not serve",
			"driver", dra.DriverName)
		a.plugins = nil
	}
	for _, p := range a.plugins {
		wg.Go(func() {
			if err := p.Run(ctx); err != nil {
				a.deps.Log.Error(err, "Device plugin stopped")
			}
		})
	}
	if a.dra != nil {
		wg.Go(func() {
			if err := a.dra.Run(ctx); err != nil {
				a.deps.Log.Error(err, "DRA driver stopped")
			}
		})
	}
	// NVML sessions, retried with exponential backoff from RetryMin to RetryMax; a
	// session that discovered the GPUs starts the backoff over.
	backoff := func() wait.DelayFunc {
		return wait.Backoff{Duration: a.cfg.RetryMin, Factor: 2, Steps: math.MaxInt32, Cap: a.cfg.RetryMax}.DelayFunc()
	}
	next, retryIn := backoff(), time.Duration(0)
	_ = wait.DelayFunc(func() time.Duration { return retryIn }).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		started, err := a.session(ctx)
		if ctx.Err() != nil {
			return true, nil
		}
		if started {
			next = backoff()
		}
		retryIn = next()
		a.nvmlFailed(ctx, err, retryIn)
		return false, nil
	})
	return nil
}

// session initialises NVML, discovers, and samples until NVML fails or ctx ends.
// started says discovery succeeded.
func (a *Agent) session(ctx context.Context) (started bool, err error) {
	if err := a.deps.GPUs.Init(); err != nil {
		return false, err
	}
	defer func() {
		if err := a.deps.GPUs.Shutdown(); err != nil {
			a.deps.Log.Error(err, "NVML shutdown")
		}
	}()
	inv, err := a.deps.GPUs.Inventory()
	if err != nil {
		return false, fmt.Errorf("discover GPUs: %w", err)
	}
	a.inv, a.islands, a.draDevices = inv, gpu.Islands(inv.Devices, inv.Links), inv.Devices
	a.metrics.SetNVMLUp(true)
	a.deps.Log.Info("Discovered GPUs", "count", len(inv.Devices), "driver", inv.DriverVersion, "cuda", inv.CUDAVersion)

	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	events := make(chan gpu.HealthEvent, 16)
	wg.Go(func() {
		if err := a.deps.GPUs.WatchHealth(hctx, events); err != nil {
			a.deps.Log.Error(err, "GPU health events unavailable; health comes from sampling only")
		}
	})
	ticker := time.NewTicker(a.cfg.SampleInterval)
	defer ticker.Stop()
	for {
		if err := a.sample(ctx); err != nil {
			return true, err
		}
		select {
		case <-ctx.Done():
			return true, nil
		case e := <-events:
			a.markBroken(e)
		case <-ticker.C:
		}
	}
}

func (a *Agent) markBroken(e gpu.HealthEvent) {
	for _, d := range a.inv.Devices {
		if e.UUID == "" || e.UUID == d.UUID {
			a.broken[d.UUID] = e.Reason
			a.deps.Log.Info("GPU unhealthy", "uuid", d.UUID, "index", d.Index, "reason", e.Reason)
		}
	}
}

// nvmlFailed reports NVML being missing or failing and marks every GPU unhealthy.
func (a *Agent) nvmlFailed(ctx context.Context, err error, retry time.Duration) {
	if err == nil {
		err = errors.New("NVML session ended")
	}
	a.deps.Log.Error(err, "NVML unavailable: GPUs marked unhealthy; the agent keeps running and retries", "retryIn", retry.String())
	a.metrics.SetNVMLUp(false)
	msg := fmt.Sprintf("NVML unavailable: %v", err)
	devs := a.devices(nil, msg)
	a.metrics.SetGPUs(nil)
	a.setPluginGPUs(devs)
	a.write(ctx, devs, metav1.Condition{Type: tesserav1.ConditionHealthy, Status: metav1.ConditionFalse,
		Reason: ReasonNVMLUnavailable, Message: truncate(msg, 1024)})
}

// sample reads the GPUs once and publishes everything derived from the reading.
func (a *Agent) sample(ctx context.Context) error {
	samples, err := a.deps.GPUs.Sample()
	if err == nil {
		err = failpoint.Inject(failpoint.NodeAgentSample)
	}
	if err != nil {
		return fmt.Errorf("sample GPUs: %w", err)
	}
	now := metav1.NewTime(a.now())
	byUUID := map[string]gpu.Sample{}
	for _, s := range samples {
		if s.Lost {
			if _, ok := a.broken[s.UUID]; !ok {
				a.markBroken(gpu.HealthEvent{UUID: s.UUID, Reason: gpu.LostReason})
			}
		}
		if s.UUID != "" {
			byUUID[s.UUID] = s
		}
	}
	devs := a.devices(byUUID, "")
	var readings []metrics.GPU
	for _, d := range devs {
		s := byUUID[d.UUID]
		readings = append(readings, metrics.GPU{Index: int(d.Index), UUID: d.UUID, Model: d.Model, Healthy: d.Healthy,
			UtilizationPercent: s.UtilizationPercent, MemoryUsedBytes: s.MemoryUsedBytes, MemoryTotalBytes: s.MemoryTotalBytes,
			TemperatureC: s.TemperatureC})
		if d.Healthy && s.UtilizationPercent > a.cfg.IdleUtilizationPercent {
			a.lastActive = &now
		}
	}
	a.metrics.SetGPUs(readings)
	a.refreshDRADevices()
	a.setPluginGPUs(devs)
	if pods, err := a.deps.Pods.List(ctx); err != nil {
		a.deps.Log.Error(err, "List pods for GPU memory accounting")
	} else {
		if !a.usage.seeded {
			if prev, err := a.pub.Pods(ctx); err != nil {
				a.deps.Log.Error(err, "Read the pods' GPU memory a previous agent published; retried next sample")
			} else {
				a.usage.seed(prev)
			}
		}
		assigned, use := assignedPods(pods, a.cfg.NodeName), a.podGPUUse(samples)
		a.slices(assigned, use)
		gpuMiB := map[string]int64{}
		for _, d := range devs {
			if d.MemoryMiB > 1 { // 1: unreadable (see devices)
				gpuMiB[d.UUID] = d.MemoryMiB
			}
		}
		a.usage.observe(assigned, use, gpuMiB, now.Time)
		if a.pressure != nil {
			a.relievePressure(ctx, devs, byUUID, a.withClaimShares(ctx, pods, assigned), use)
		}
	}
	a.write(ctx, devs, a.healthCondition(devs))
	return nil
}

// devices builds the GPUNode devices from the inventory, health and the last samples.
// reason, when set, marks every device unhealthy with it.
func (a *Agent) devices(samples map[string]gpu.Sample, reason string) []tesserav1.GPUDevice {
	var out []tesserav1.GPUDevice
	for _, d := range a.inv.Devices {
		g := tesserav1.GPUDevice{Index: int32(d.Index), UUID: d.UUID, Model: d.Model, MemoryMiB: d.MemoryMiB,
			NUMANode: int32(d.NUMANode), PCIBusID: d.PCIBusID, MIGEnabled: d.MIGEnabled, Healthy: d.Healthy,
			UnhealthyReason: d.UnhealthyReason, Island: a.islands[d.Index]}
		if r, ok := a.broken[d.UUID]; ok {
			g.Healthy, g.UnhealthyReason = false, r
		}
		if s, ok := samples[d.UUID]; ok {
			if s.Err != nil && g.Healthy {
				g.Healthy, g.UnhealthyReason = false, s.Err.Error()
			}
			if s.Err == nil {
				g.UtilizationPercent = int32(min(s.UtilizationPercent, 100))
				g.MemoryUsedMiB = int64(s.MemoryUsedBytes >> 20)
				g.TemperatureC = int32(s.TemperatureC)
			}
		}
		if reason != "" {
			g.Healthy, g.UnhealthyReason = false, reason
		}
		g.UnhealthyReason = truncate(g.UnhealthyReason, 256)
		if g.MemoryMiB < 1 {
			g.MemoryMiB = 1 // a GPU whose memory could not be read; the CRD requires >= 1
		}
		out = append(out, g)
	}
	return out
}

func (a *Agent) healthCondition(devs []tesserav1.GPUDevice) metav1.Condition {
	c := metav1.Condition{Type: tesserav1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: ReasonAllGPUsHealthy,
		Message: fmt.Sprintf("%d GPUs healthy", len(devs))}
	if len(devs) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNoGPUs, "NVML reports no GPUs on this node"
		return c
	}
	var bad []string
	for _, d := range devs {
		if !d.Healthy {
			bad = append(bad, fmt.Sprintf("GPU %d (%s): %s", d.Index, d.UUID, d.UnhealthyReason))
		}
	}
	if len(bad) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonGPUUnhealthy
		c.Message = truncate(fmt.Sprintf("%d of %d GPUs unhealthy: %s", len(bad), len(devs), strings.Join(bad, "; ")), 1024)
	}
	return c
}

// setPluginGPUs hands the devices to the device plugins and the DRA driver, or none
// while GPU delivery is refused (deliveryRefusal).
func (a *Agent) setPluginGPUs(devs []tesserav1.GPUDevice) {
	if len(a.plugins) == 0 && a.dra == nil {
		return
	}
	refusal := a.deliveryRefusal()
	if a.dra != nil {
		a.dra.SetGPUs(a.draGPUs(devs), refusal)
	}
	if refusal != a.refusal {
		if refusal != "" {
			a.deps.Log.Error(errors.New(refusal), "Refusing to hand out GPUs: the device plugin and the DRA driver advertise none", "config", a.cfg.ToolkitConfig)
		} else {
			a.deps.Log.Info("Handing out GPUs: the NVIDIA container toolkit takes device lists only as devices", "config", a.cfg.ToolkitConfig)
		}
		a.refusal = refusal
	}
	a.metrics.SetDeliveryRefused(refusal != "")
	modes := map[string]string{}
	for _, d := range a.inv.Devices {
		modes[d.UUID] = d.ComputeMode
	}
	var gs []deviceplugin.GPU
	for _, d := range devs {
		if refusal == "" {
			gs = append(gs, deviceplugin.GPU{UUID: d.UUID, Index: int(d.Index), MemoryMiB: d.MemoryMiB, NUMANode: int(d.NUMANode),
				ComputeMode: modes[d.UUID], Healthy: d.Healthy})
		}
	}
	for _, p := range a.plugins {
		p.SetGPUs(gs)
	}
}

// refreshDRADevices re-reads the inventory for the DRA driver; on failure the last one
// stays.
func (a *Agent) refreshDRADevices() {
	if a.dra == nil {
		return
	}
	inv, err := a.deps.GPUs.Inventory()
	if err != nil {
		a.deps.Log.Error(err, "Re-read the GPUs for DRA; the last reading stays published")
		return
	}
	a.draDevices = inv.Devices
}

// draGPUs is the DRA driver's view of the GPUs: the last inventory reading with the
// health of devs (the GPUNode's devices) and the NVLink islands.
func (a *Agent) draGPUs(devs []tesserav1.GPUDevice) []dra.GPU {
	health := make(map[string]tesserav1.GPUDevice, len(devs))
	for _, d := range devs {
		health[d.UUID] = d
	}
	out := make([]dra.GPU, 0, len(a.draDevices))
	for _, d := range a.draDevices {
		if h, ok := health[d.UUID]; ok {
			d.Healthy, d.UnhealthyReason = h.Healthy, h.UnhealthyReason
		}
		out = append(out, dra.GPU{Device: d, Island: a.islands[d.Index]})
	}
	return out
}

// write publishes the GPUNode and, when they changed, the Node fields. API errors are
// logged: the next sample tries again.
func (a *Agent) write(ctx context.Context, devs []tesserav1.GPUDevice, cond metav1.Condition) {
	now := metav1.NewTime(a.now())
	status := tesserav1.GPUNodeStatus{
		Devices: devs, DriverVersion: a.inv.DriverVersion, CUDAVersion: a.inv.CUDAVersion,
		SharesPerGPU: int32(a.cfg.SharesPerGPU), LastActiveTime: a.lastActive, ObservedTime: &now,
		Conditions: []metav1.Condition{cond}, Pods: a.usage.entries(),
	}
	for _, l := range a.inv.Links {
		status.Links = append(status.Links, tesserav1.GPULink{A: int32(l.A), B: int32(l.B), NVLinks: int32(l.NVLinks), PCIe: l.PCIe})
	}
	err := failpoint.Inject(failpoint.NodeAgentPublishGPUNode)
	if err == nil {
		err = a.pub.GPUNode(ctx, status)
	}
	if err != nil {
		a.deps.Log.Error(err, "Publish GPUNode")
	}
	f := nodeFields(devs)
	if a.lastNode != nil && *a.lastNode == f {
		return
	}
	if err := a.pub.Node(ctx, f); err != nil {
		a.deps.Log.Error(err, "Publish node labels and GPU memory")
		return
	}
	a.lastNode = &f
}

// nodeFields summarises the devices for the Node: the most common model, the GPU
// count, and the GPU memory (allocatable: healthy GPUs only).
func nodeFields(devs []tesserav1.GPUDevice) publish.NodeFields {
	f := publish.NodeFields{Count: len(devs)}
	models := map[string]int{}
	for _, d := range devs {
		models[d.Model]++
		f.MemoryMiB += d.MemoryMiB
		if d.Healthy {
			f.AllocatableMiB += d.MemoryMiB
		}
	}
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Slice(names, func(i, j int) bool {
		if models[names[i]] != models[names[j]] {
			return models[names[i]] > models[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > 0 {
		f.Model = names[0]
	}
	return f
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
