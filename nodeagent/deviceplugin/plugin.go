package deviceplugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

// GPU is one GPU the plugin advertises.
type GPU struct {
	UUID string
	// Index is NVML's device index, as nvidia-smi -i takes it.
	Index     int
	MemoryMiB int64
	NUMANode  int // -1 when unknown
	// ComputeMode is NVML's compute mode (gpu.ComputeMode*, "" when unknown): memory
	// slices enforced by MPS need gpu.ComputeModeExclusiveProcess.
	ComputeMode string
	Healthy     bool
}

// Options configure a Plugin.
type Options struct {
	// NodeName is the node the plugin runs on; assignments for other nodes are refused.
	NodeName string
	// ResourceName defaults to tessera.dev/gpu.
	ResourceName corev1.ResourceName
	// SharesPerGPU is how many devices each GPU is advertised as (default 1).
	SharesPerGPU int
	// Slices says the resource is for GPU-memory slices: every container that asks for
	// it gets one GPU and a memory limit, and an assignment that is not a slice is refused.
	Slices bool
	// Strategies say how GPUs are handed to containers (default [cdi-cri]); see
	// StrategyCDICRI and the others.
	Strategies []string
	// CDIKind is the vendor/class of the GPUs' CDI device names (default DefaultCDIKind).
	CDIKind string
	// MPS, when set, enforces memory slices through the node's MPS control daemon: a
	// container with a slice reaches the daemon through its pipe directory, the daemon
	// holds the slice's memory limit (and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT narrows each
	// container to its own slice), and a slice is refused on a GPU the daemon cannot
	// serve.
	MPS MPSControl
	// Ledger, when set, is the kubelet's record of the pods it knows and the containers
	// already allocated, which survives a restart of the plugin. Without it the plugin
	// cannot tell which of several pending pods the kubelet is admitting, and refuses.
	Ledger Ledger
	// PluginDir holds kubelet.sock and the plugin's socket (default /var/lib/kubelet/device-plugins/).
	PluginDir string
	// SocketName is the plugin's socket file in PluginDir (default tessera-gpu.sock).
	SocketName string
	// Pods lists the node's pods.
	Pods Pods
	// RecheckInterval is how often the plugin checks that the kubelet still knows it (default 5s).
	RecheckInterval time.Duration
	// SchedulerName is the scheduler whose bound pods get GPUs (default tessera).
	SchedulerName string
	// OnRefusal, when set, is told of every Allocate refused because of its pod (besides
	// the log): the agent records an event on the pod and counts it.
	OnRefusal func(*Refusal)
	Log       logr.Logger
}

// Env variables set on allocated containers.
const (
	EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	EnvMemoryLimitMiB = "TESSERA_GPU_MEMORY_LIMIT_MIB"
	EnvMPSMemoryLimit = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
	EnvMPSPipeDir     = "CUDA_MPS_PIPE_DIRECTORY"
)

// Plugin is the device plugin server.
type Plugin struct {
	pb.UnimplementedDevicePluginServer
	opts Options

	mu       sync.Mutex
	gpus     []GPU
	watchers map[chan struct{}]struct{}
	granted  grants // what Allocate handed out, by pod UID
	steered  *steer // GetPreferredAllocation's last preference for a pod it could tell

	allocMu sync.Mutex // one Allocate / GetPreferredAllocation decision at a time
}

var _ pb.DevicePluginServer = (*Plugin)(nil)

// New returns a plugin with no GPUs yet; call SetGPUs, then Run.
func New(opts Options) *Plugin {
	if opts.ResourceName == "" {
		opts.ResourceName = tesserav1.ResourceGPU
	}
	if opts.SharesPerGPU <= 0 {
		opts.SharesPerGPU = 1
	}
	if opts.PluginDir == "" {
		opts.PluginDir = pb.DevicePluginPath
	}
	if opts.SocketName == "" {
		opts.SocketName = "tessera-gpu.sock"
	}
	if opts.RecheckInterval <= 0 {
		opts.RecheckInterval = 5 * time.Second
	}
	if opts.SchedulerName == "" {
		opts.SchedulerName = tesserav1.SchedulerName
	}
	if len(opts.Strategies) == 0 {
		opts.Strategies = []string{StrategyCDICRI}
	}
	if opts.CDIKind == "" {
		opts.CDIKind = DefaultCDIKind
	}
	return &Plugin{opts: opts, watchers: map[chan struct{}]struct{}{}, granted: grants{}}
}

// SetGPUs replaces the advertised GPUs and their health and tells every ListAndWatch
// stream.
func (p *Plugin) SetGPUs(gpus []GPU) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gpus = append([]GPU(nil), gpus...)
	for ch := range p.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// GPUs returns the GPUs the plugin advertises.
func (p *Plugin) GPUs() []GPU {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]GPU(nil), p.gpus...)
}

// deviceID names share k of a GPU.
func (p *Plugin) deviceID(uuid string, k int) string {
	if p.opts.SharesPerGPU == 1 {
		return uuid
	}
	return uuid + "::" + strconv.Itoa(k)
}

// gpuOf returns the GPU UUID of a device ID.
func gpuOf(id string) string {
	uuid, _, _ := strings.Cut(id, "::")
	return uuid
}

func (p *Plugin) devices() []*pb.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*pb.Device
	for _, g := range p.gpus {
		health := pb.Healthy
		if !g.Healthy {
			health = pb.Unhealthy
		}
		var topo *pb.TopologyInfo
		if g.NUMANode >= 0 {
			topo = &pb.TopologyInfo{Nodes: []*pb.NUMANode{{ID: int64(g.NUMANode)}}}
		}
		for k := range p.opts.SharesPerGPU {
			out = append(out, &pb.Device{ID: p.deviceID(g.UUID, k), Health: health, Topology: topo})
		}
	}
	return out
}

func (p *Plugin) gpu(uuid string) (GPU, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.gpus {
		if g.UUID == uuid {
			return g, true
		}
	}
	return GPU{}, false
}

// GetDevicePluginOptions tells the kubelet to ask for preferred allocations.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pb.Empty) (*pb.DevicePluginOptions, error) {
	return &pb.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

// ListAndWatch streams the devices and their health.
func (p *Plugin) ListAndWatch(_ *pb.Empty, stream pb.DevicePlugin_ListAndWatchServer) error {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	p.watchers[ch] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.watchers, ch)
		p.mu.Unlock()
	}()
	for {
		if err := stream.Send(&pb.ListAndWatchResponse{Devices: p.devices()}); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// GetPreferredAllocation prefers the shares of the GPUs the scheduler assigned, so the
// kubelet's accounting matches the GPUs Allocate hands out. When it can tell the pod,
// it remembers the preference: the kubelet allocates those devices next, and Allocate
// then knows the pod by them.
func (p *Plugin) GetPreferredAllocation(ctx context.Context, req *pb.PreferredAllocationRequest) (*pb.PreferredAllocationResponse, error) {
	p.allocMu.Lock()
	defer p.allocMu.Unlock()
	pods, err := p.opts.Pods.List(ctx)
	if err != nil {
		return nil, err
	}
	resp := &pb.PreferredAllocationResponse{}
	v, err := p.view(ctx, pods)
	if err != nil {
		// Only a preference: Allocate checks again, and refuses without the ledger.
		p.opts.Log.Error(err, "Preferring devices without the kubelet's allocations")
	}
	v.steered = nil // a preference is steered by nothing but the pod
	for _, cr := range req.ContainerRequests {
		size := int(cr.AllocationSize)
		var want []string
		c, err := findCandidate(pods, p.opts.NodeName, p.opts.ResourceName, request{count: int64(size), deviceIDs: cr.MustIncludeDeviceIDs}, v, p.opts.SchedulerName)
		if err == nil {
			want = c.gpus.UUIDs
			v.allocated[c.key()] = true
		}
		ids := prefer(cr.AvailableDeviceIDs, cr.MustIncludeDeviceIDs, want, size)
		if err == nil {
			p.mu.Lock()
			p.steered = &steer{key: c.key(), deviceIDs: ids}
			p.mu.Unlock()
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pb.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

// prefer picks size IDs: the must-includes, then shares of the wanted GPUs round-robin,
// then any others.
func prefer(available, must, want []string, size int) []string {
	picked := map[string]bool{}
	var out []string
	add := func(id string) {
		if len(out) < size && !picked[id] {
			picked[id] = true
			out = append(out, id)
		}
	}
	for _, id := range must {
		add(id)
	}
	byGPU := map[string][]string{}
	for _, id := range available {
		byGPU[gpuOf(id)] = append(byGPU[gpuOf(id)], id)
	}
	for progress := true; progress && len(out) < size; {
		progress = false
		for _, uuid := range want {
			for len(byGPU[uuid]) > 0 {
				id := byGPU[uuid][0]
				byGPU[uuid] = byGPU[uuid][1:]
				if !picked[id] {
					add(id)
					progress = true
					break
				}
			}
		}
	}
	for _, id := range available {
		add(id)
	}
	return out
}

// view is what the plugin knows about the pods on the node: the containers it
// allocated itself, and those the kubelet has already allocated devices of the resource
// to: the ones its ledger names, with every container before them in the pod (the
// kubelet allocates a pod's init containers, then its containers, in order; its ledger
// leaves init containers out), and all of the containers of a pod it has admitted (it
// allocates them all then); and which pods the kubelet knows. It is what a restarted
// plugin starts from. The kubelet's ledger names pods by namespace and name: an entry
// holding devices the plugin granted to an earlier pod of that name is that pod's.
// When the ledger cannot be read, the view holds what the plugin knows by itself, and
// the error says why.
func (p *Plugin) view(ctx context.Context, pods []corev1.Pod) (view, error) {
	p.mu.Lock()
	v := view{allocated: map[containerKey]bool{}, granted: maps.Clone(p.granted), steered: p.steered}
	p.mu.Unlock()
	for k := range v.granted {
		v.allocated[k] = true
	}
	var kubelet *KubeletPods
	var err error
	if p.opts.Ledger != nil {
		var kp KubeletPods
		if kp, err = p.opts.Ledger.Read(ctx, p.opts.ResourceName); err == nil {
			kubelet = &kp
		}
	}
	p.forgetGone(pods, kubelet)
	held := map[containerKey]bool{}
	if kubelet != nil {
		current := map[PodName]types.UID{}
		for i := range pods {
			current[PodName{pods[i].Namespace, pods[i].Name}] = pods[i].UID
		}
		earlier := map[PodName]types.UID{} // pods the kubelet lists under a name that another pod has now
		for pc, ids := range kubelet.Devices {
			owner := v.granted.owner(pc, ids, current)
			held[containerKey{owner, pc.Container}] = true
			if owner != current[pc.pod()] {
				earlier[pc.pod()] = owner
			}
		}
		v.known = map[types.UID]bool{}
		for name := range kubelet.Pods {
			if uid, ok := earlier[name]; ok {
				v.known[uid] = true
			} else if uid, ok := current[name]; ok {
				v.known[uid] = true
			}
		}
	}
	for i := range pods {
		pod := &pods[i]
		names := containerNames(pod)
		last := -1
		for j, name := range names {
			if admitted(pod) || held[containerKey{pod.UID, name}] {
				last = j
			}
		}
		for _, name := range names[:last+1] {
			v.allocated[containerKey{pod.UID, name}] = true
		}
	}
	return v, err
}

// containerNames are the pod's init containers and containers, in the order the kubelet
// allocates them.
func containerNames(pod *corev1.Pod) []string {
	var out []string
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			out = append(out, c.Name)
		}
	}
	return out
}

// Allocate hands each container the GPUs of its pod's assignment.
func (p *Plugin) Allocate(ctx context.Context, req *pb.AllocateRequest) (*pb.AllocateResponse, error) {
	p.allocMu.Lock()
	defer p.allocMu.Unlock()
	pods, err := p.opts.Pods.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("allocate %s: %w", p.opts.ResourceName, err)
	}
	v, err := p.view(ctx, pods)
	if err != nil {
		// Without the kubelet's record, a pod allocated before a restart of the agent
		// could be taken for the pod being admitted, and hand it that pod's GPUs.
		return nil, fmt.Errorf("allocate %s: cannot tell which pods are already allocated: %w", p.opts.ResourceName, err)
	}
	resp := &pb.AllocateResponse{}
	handed := grants{}
	for _, cr := range req.ContainerRequests {
		count := int64(len(cr.DevicesIds))
		c, err := findCandidate(pods, p.opts.NodeName, p.opts.ResourceName, request{count: count, deviceIDs: cr.DevicesIds}, v, p.opts.SchedulerName)
		if err == nil && p.opts.Slices && (len(c.gpus.UUIDs) != 1 || c.gpus.MemoryMiB <= 0) {
			err = refuse(c.pod, RefusedInvalid, "pod %s: container %q asks for %s, a GPU memory slice, but its %s entry is not a slice of one GPU",
				c.name(), c.container, p.opts.ResourceName, tesserav1.AnnotationGPUAssign)
		}
		if err != nil {
			kv := []any{"resource", p.opts.ResourceName, "devices", cr.DevicesIds, "reason", err.Error()}
			var r *Refusal
			if errors.As(err, &r) {
				kv = append(kv, "pod", r.Pod.Namespace+"/"+r.Pod.Name, "refusal", r.Reason)
				if p.opts.OnRefusal != nil {
					p.opts.OnRefusal(r)
				}
			}
			p.opts.Log.Info("Refusing allocation", kv...)
			return nil, fmt.Errorf("allocate %d %s: %w", count, p.opts.ResourceName, err)
		}
		g, err := p.grant(ctx, c, pods)
		if err != nil {
			return nil, fmt.Errorf("allocate %d %s for pod %s container %s: %w", count, p.opts.ResourceName, c.name(), c.container, err)
		}
		record := grantRecord{pod: PodName{c.pod.Namespace, c.pod.Name}, deviceIDs: slices.Clone(cr.DevicesIds)}
		v.allocated[c.key()], v.granted[c.key()], handed[c.key()] = true, record, record
		resp.ContainerResponses = append(resp.ContainerResponses, p.response(g))
		p.opts.Log.Info("Allocated GPUs", "pod", c.name(), "podUID", c.pod.UID, "container", c.container, "uuids", c.gpus.UUIDs,
			"memoryMiB", c.gpus.MemoryMiB, "devices", cr.DevicesIds, "strategies", p.opts.Strategies)
	}
	p.mu.Lock()
	maps.Copy(p.granted, handed)
	p.steered = nil
	p.mu.Unlock()
	return resp, nil
}

// forgetGone drops the grants of pods that are gone from the API, once the kubelet
// (when its record is read) no longer holds their devices under their name either.
func (p *Plugin) forgetGone(pods []corev1.Pod, kubelet *KubeletPods) {
	present := map[types.UID]bool{}
	for i := range pods {
		present[pods[i].UID] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, r := range p.granted {
		if present[k.pod] {
			continue
		}
		if kubelet != nil {
			held := kubelet.Devices[PodContainer{r.pod.Namespace, r.pod.Name, k.container}]
			if slices.ContainsFunc(held, func(id string) bool { return slices.Contains(r.deviceIDs, id) }) {
				continue
			}
		}
		delete(p.granted, k)
	}
}

// grant checks the candidate's GPUs against the node's and works out its memory limit;
// for a slice with MPS, it raises the GPU's limit in the MPS control daemon to the
// largest slice on that GPU.
func (p *Plugin) grant(ctx context.Context, c candidate, pods []corev1.Pod) (grant, error) {
	g := grant{uuids: c.gpus.UUIDs, id: string(c.pod.UID)}
	if c.gpus.MemoryMiB > 0 {
		limit, err := tesserav1.GPUMemoryLimitMiB(c.pod.Annotations, c.container, c.gpus.MemoryMiB)
		if err != nil {
			return g, fmt.Errorf("pod %s: %w", c.name(), err)
		}
		g.limitMiB, g.slice = limit, true
	}
	for _, uuid := range c.gpus.UUIDs {
		d, ok := p.gpu(uuid)
		switch {
		case !ok:
			return g, fmt.Errorf("assigned GPU %s is not on node %s; the scheduler must reassign the pod", uuid, p.opts.NodeName)
		case !d.Healthy:
			return g, fmt.Errorf("assigned GPU %s is unhealthy; the scheduler must reassign the pod", uuid)
		case c.gpus.MemoryMiB > d.MemoryMiB:
			return g, fmt.Errorf("slice of %d MiB is larger than GPU %s (%d MiB)", c.gpus.MemoryMiB, uuid, d.MemoryMiB)
		case g.slice && g.limitMiB > d.MemoryMiB:
			return g, fmt.Errorf("pod %s: container %q's GPU-memory limit of %d MiB (%s) is larger than GPU %s (%d MiB): lower the limit to at most the GPU's memory",
				c.name(), c.container, g.limitMiB, tesserav1.AnnotationGPUMemoryLimit, uuid, d.MemoryMiB)
		}
		if c.gpus.MemoryMiB == 0 && (g.limitMiB == 0 || d.MemoryMiB < g.limitMiB) {
			g.limitMiB = d.MemoryMiB // whole GPUs: the smallest one's memory
		}
	}
	if p.opts.MPS != nil && g.slice {
		if len(g.uuids) != 1 {
			return g, fmt.Errorf("a memory slice of %d GPUs: with MPS a slice is of one GPU", len(g.uuids))
		}
		if err := p.mpsServes(ctx, g.uuids[0]); err != nil {
			return g, err
		}
		limit := max(g.limitMiB, largestLimit(pods, p.opts.NodeName, p.opts.SchedulerName, g.uuids[0]))
		if err := p.opts.MPS.SetPinnedMemLimit(ctx, g.uuids[0], limit); err != nil {
			return g, fmt.Errorf("set the MPS memory limit of GPU %s: %w", g.uuids[0], err)
		}
	}
	return g, nil
}

// mpsServes returns an error unless the MPS control daemon can enforce a memory slice
// of GPU uuid: the GPU is in EXCLUSIVE_PROCESS compute mode (in DEFAULT mode a process
// that does not go through MPS opens a context of its own and can use all of the GPU's
// memory) and the daemon answers.
func (p *Plugin) mpsServes(ctx context.Context, uuid string) error {
	d, _ := p.gpu(uuid)
	fix := fmt.Sprintf("run `nvidia-smi -i %d -c EXCLUSIVE_PROCESS` and `nvidia-cuda-mps-control -d` on node %s "+
		"(or enable the GPU Operator's MPS sharing)", d.Index, p.opts.NodeName)
	if d.ComputeMode != gpu.ComputeModeExclusiveProcess {
		mode := cmp.Or(d.ComputeMode, "unknown")
		return fmt.Errorf("GPU %d (%s) is in compute mode %s, not %s, so MPS cannot enforce a memory slice on it and a container could use the whole GPU; "+
			"refusing the slice: %s, then restart the node agent so that it reads the mode again", d.Index, uuid, mode, gpu.ComputeModeExclusiveProcess, fix)
	}
	if err := p.opts.MPS.Running(ctx); err != nil {
		return fmt.Errorf("GPU %d (%s): no MPS control daemon answers on pipe directory %s, so nothing enforces a memory slice; refusing the slice: %s (%w)",
			d.Index, uuid, p.opts.MPS.PipeDir(), fix, err)
	}
	return nil
}

// largestLimit is the largest GPU-memory limit of a slice of uuid among the node's
// unfinished pods the scheduler bound (a limit is the slice's request unless the pod
// sets one, tesserav1.AnnotationGPUMemoryLimit).
func largestLimit(pods []corev1.Pod, node, scheduler, uuid string) int64 {
	var mib int64
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != node || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
			pod.Spec.SchedulerName != scheduler || pod.Annotations[tesserav1.AnnotationBoundPodUID] != string(pod.UID) {
			continue
		}
		a, err := tesserav1.ParseGPUAssignment(pod.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil || a.Node != node {
			continue
		}
		for _, c := range a.Containers {
			if len(c.UUIDs) == 1 && c.UUIDs[0] == uuid && c.MemoryMiB > 0 {
				limit, err := tesserav1.GPUMemoryLimitMiB(pod.Annotations, c.Container, c.MemoryMiB)
				if err != nil {
					limit = c.MemoryMiB // such a pod is refused its limit; its slice still stands
				}
				mib = max(mib, limit)
			}
		}
	}
	return mib
}

// PreStartContainer is not used (the options do not ask for it).
func (p *Plugin) PreStartContainer(context.Context, *pb.PreStartContainerRequest) (*pb.PreStartContainerResponse, error) {
	return &pb.PreStartContainerResponse{}, nil
}

// SocketPath is the plugin's socket.
func (p *Plugin) SocketPath() string { return filepath.Join(p.opts.PluginDir, p.opts.SocketName) }

// Run serves the plugin and registers it with the kubelet until ctx ends. When the
// kubelet restarts (it deletes the plugins' sockets) the plugin serves again and
// re-registers.
func (p *Plugin) Run(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, p.opts.RecheckInterval, true, func(ctx context.Context) (bool, error) {
		srv, err := p.serve()
		if err != nil {
			return false, err
		}
		defer srv.Stop()
		if err := p.register(ctx); err != nil {
			p.opts.Log.Error(err, "Device plugin registration failed; retrying", "kubeletSocket", p.kubeletSocket())
			return false, nil
		}
		p.opts.Log.Info("Registered device plugin with the kubelet", "resource", p.opts.ResourceName, "sharesPerGPU", p.opts.SharesPerGPU)
		// Serve until the kubelet deletes the socket.
		if wait.PollUntilContextCancel(ctx, p.opts.RecheckInterval, false, func(context.Context) (bool, error) {
			_, err := os.Lstat(p.SocketPath())
			return err != nil, nil
		}) == nil {
			p.opts.Log.Info("Device plugin socket removed (kubelet restarted?); serving and registering again")
		}
		return false, nil
	})
	_ = os.Remove(p.SocketPath())
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (p *Plugin) serve() (*grpc.Server, error) {
	path := p.SocketPath()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale device plugin socket %s: %w", path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on device plugin socket %s (is %s mounted from the host?): %w", path, p.opts.PluginDir, err)
	}
	srv := grpc.NewServer()
	pb.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(lis) }()
	return srv, nil
}

func (p *Plugin) kubeletSocket() string { return filepath.Join(p.opts.PluginDir, "kubelet.sock") }

func (p *Plugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+p.kubeletSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to kubelet at %s: %w", p.kubeletSocket(), err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pb.NewRegistrationClient(conn).Register(ctx, &pb.RegisterRequest{
		Version:      pb.Version,
		Endpoint:     p.opts.SocketName,
		ResourceName: string(p.opts.ResourceName),
		Options:      &pb.DevicePluginOptions{GetPreferredAllocationAvailable: true},
	})
	if err != nil {
		return fmt.Errorf("register %s with kubelet at %s: %w", p.opts.ResourceName, p.kubeletSocket(), err)
	}
	return nil
}
