package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/deviceplugin"
	"github.com/tessera-gpu/tessera/nodeagent/mps"
)

// ReasonPrepareFailed is the reason of the Warning event on a claim the driver could not
// prepare.
const ReasonPrepareFailed = "GPUClaimPrepareFailed"

// Options configure the driver.
type Options struct {
	// NodeName is the node, and the name of its pool (required).
	NodeName string
	// Kube reads the claims and writes the ResourceSlices (required).
	Kube kubernetes.Interface
	// ShareStep is the granularity of memory shares (zero: DefaultShareStep).
	ShareStep resource.Quantity
	// MPS is the node's MPS control daemon, which enforces memory shares; its pipe
	// directory is the same on the host and in the agent's container. Nil: no GPU takes
	// shares.
	MPS *mps.ControlDaemon
	// GPUCDIKind is the vendor/class of the NVIDIA container toolkit's CDI devices, named
	// <GPUCDIKind>=<UUID> (empty: deviceplugin.DefaultCDIKind).
	GPUCDIKind string
	// CDIDir is where the claims' CDI specs are written (empty: cdi.DefaultDir).
	CDIDir string
	// PluginsDir is the kubelet's plugin directory; the driver's socket is in
	// <PluginsDir>/gpu.tessera.dev (empty: /var/lib/kubelet/plugins).
	PluginsDir string
	// RegistryDir is where the kubelet looks for plugin registration sockets (empty:
	// /var/lib/kubelet/plugins_registry).
	RegistryDir string
	// Recorder, when set, records a Warning event on a claim that fails to prepare.
	Recorder record.EventRecorder
	Log      logr.Logger
}

// Driver is the DRA driver: it publishes the GPUs SetGPUs gives it and prepares claims
// while Run runs.
type Driver struct {
	opts   Options
	policy sharePolicy
	cdi    cdi.Writer

	mu        sync.Mutex
	helper    *kubeletplugin.Helper
	runCtx    context.Context // Run's, for publishing
	known     bool            // SetGPUs was called
	gpus      map[string]GPU  // by device name; replaced whole, never changed in place
	refusal   string
	published *resourceslice.DriverResources
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New checks the options and returns the driver.
func New(opts Options) (*Driver, error) {
	if opts.NodeName == "" {
		return nil, errors.New("DRA driver: node name is empty")
	}
	if opts.Kube == nil {
		return nil, errors.New("DRA driver: no Kubernetes client")
	}
	if opts.ShareStep.IsZero() {
		opts.ShareStep = DefaultShareStep
	}
	if opts.ShareStep.Sign() < 0 || opts.ShareStep.Value() < 1<<20 {
		return nil, fmt.Errorf("share step %s: must be 1Mi or more (for example 1Gi)", opts.ShareStep.String())
	}
	if opts.GPUCDIKind == "" {
		opts.GPUCDIKind = deviceplugin.DefaultCDIKind
	}
	if opts.PluginsDir == "" {
		opts.PluginsDir = kubeletplugin.KubeletPluginsDir
	}
	if opts.RegistryDir == "" {
		opts.RegistryDir = kubeletplugin.KubeletRegistryDir
	}
	return &Driver{opts: opts, policy: sharePolicy{mps: opts.MPS != nil, step: opts.ShareStep}, cdi: cdi.Writer{Dir: opts.CDIDir}}, nil
}

// PluginDir is the driver's own directory, which holds its kubelet socket.
func (d *Driver) PluginDir() string { return filepath.Join(d.opts.PluginsDir, DriverName) }

// Run registers the kubelet plugin, publishes the GPUs and prepares claims until ctx
// ends.
func (d *Driver) Run(ctx context.Context) error {
	if err := os.MkdirAll(d.PluginDir(), 0o750); err != nil {
		return fmt.Errorf("DRA plugin directory: %w", err)
	}
	helper, err := kubeletplugin.Start(klog.NewContext(ctx, d.opts.Log), d,
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.KubeClient(d.opts.Kube),
		kubeletplugin.NodeName(d.opts.NodeName),
		kubeletplugin.PluginDataDirectoryPath(d.PluginDir()),
		kubeletplugin.RegistrarDirectoryPath(d.opts.RegistryDir),
		kubeletplugin.HealthService(false))
	if err != nil {
		return fmt.Errorf("start the DRA kubelet plugin %s: %w", DriverName, err)
	}
	d.mu.Lock()
	d.helper, d.runCtx = helper, ctx
	d.publishLocked()
	d.mu.Unlock()
	<-ctx.Done()
	helper.Stop()
	return nil
}

// SetGPUs replaces the node's GPUs and republishes the pool when it changed. refusal,
// when set, says why no GPU may be handed out: the pool is then published empty and
// every claim is refused with it.
func (d *Driver) SetGPUs(gpus []GPU, refusal string) {
	byName := make(map[string]GPU, len(gpus))
	for _, g := range gpus {
		byName[DeviceName(g.Index)] = g
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.known, d.gpus, d.refusal = true, byName, refusal
	d.publishLocked()
}

// publishLocked publishes the pool when it changed and the plugin runs.
func (d *Driver) publishLocked() {
	if d.helper == nil || !d.known {
		return
	}
	var gpus []GPU
	if d.refusal == "" {
		for _, g := range d.gpus {
			gpus = append(gpus, g)
		}
	}
	sortByIndex(gpus)
	res := d.policy.resources(d.opts.NodeName, gpus)
	if err := failpoint.Inject(failpoint.NodeAgentPublishSlices); err != nil {
		d.opts.Log.Error(err, "Publish the node's ResourceSlices")
		d.published = nil // written again next time
		return
	}
	if d.published != nil && apiequality.Semantic.DeepEqual(d.published, &res) {
		return
	}
	if err := d.helper.PublishResources(d.runCtx, res); err != nil {
		d.opts.Log.Error(err, "Publish the node's ResourceSlices")
		return
	}
	d.published = &res
	d.opts.Log.Info("Published the node's GPUs as DRA devices", "driver", DriverName, "pool", d.opts.NodeName, "devices", len(gpus))
}

// HandleError logs errors of the background work (ResourceSlice publishing, the gRPC
// servers); the kubelet plugin helper retries what can be retried.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.opts.Log.Error(err, msg, "recoverable", errors.Is(err, kubeletplugin.ErrRecoverable))
}

// WatchHealthStatus is not supported: an unhealthy GPU is tainted in the ResourceSlice.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// PrepareResourceClaims prepares each claim on its own: a claim that fails gets its
// error (the kubelet reports it in the pod's events and retries) and, with a recorder,
// a Warning event.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		err := failpoint.Inject(failpoint.NodeAgentPrepare)
		var devices []kubeletplugin.Device
		if err == nil {
			devices, err = d.prepare(ctx, c)
		}
		if err != nil {
			err = fmt.Errorf("prepare ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
			d.opts.Log.Error(err, "Refusing claim", "claim", klog.KObj(c), "uid", c.UID)
			if d.opts.Recorder != nil {
				d.opts.Recorder.Event(c, corev1.EventTypeWarning, ReasonPrepareFailed, err.Error())
			}
		}
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return out, nil
}

// UnprepareResourceClaims removes the claims' CDI specs; a claim that was never
// prepared, or already unprepared, is no error.
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.cdi.Remove(string(c.UID))
	}
	return out, nil
}
