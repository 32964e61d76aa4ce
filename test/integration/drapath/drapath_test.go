package drapath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/nodeagent"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/dra"
	"github.com/tessera-gpu/tessera/nodeagent/dra/dratest"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// runs counts the test's runs, which name their node and namespace.
var runs atomic.Int32

// must fails the test with what went wrong, naming what was being done.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// draWait bounds every wait of the DRA path tests: publishing, scheduling, releasing.
const draWait = 30 * time.Second

// draPath is one GPU node on the whole DRA path: its node agent (the DRA driver, with
// MPS), Tessera's scheduler, and the kubelet's side of the driver's sockets.
type draPath struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	node    string
	ns      string
	gpus    *nvidiatest.Node
	kubelet *dratest.Kubelet
	// cdiDir holds the claims' CDI specs; pipe is the MPS control daemon's pipe directory.
	cdiDir, pipe string
}

// startDRAPath creates node (allocatable CPU, memory and pods, Ready) and namespace ns,
// runs a node agent on gpus with MPS and DRA on, its MPS control daemon answering, and
// Tessera's scheduler as `tessera scheduler` runs it (without leader election), and
// connects to the agent's kubelet plugin. The DeviceClasses are the chart's; claims is
// the scheduler's extended-resource claims mode.
func startDRAPath(ctx context.Context, t *testing.T, e *testenv.Env, node, ns string, gpus *nvidiatest.Node, claims string) *draPath {
	t.Helper()
	p := &draPath{t: t, ctx: ctx, c: e.Client, node: node, ns: ns, gpus: gpus}
	must(t, "namespace "+ns, client.IgnoreAlreadyExists(e.Client.Create(ctx, apitest.MakeNamespace(ns).Obj())))
	for _, dc := range apitest.DeviceClasses() {
		must(t, "DeviceClass "+dc.Name, client.IgnoreAlreadyExists(e.Client.Create(ctx, dc)))
	}
	must(t, "node "+node, testenv.CreateNode(ctx, e.Client, apitest.MakeNode(node).Allocatable(corev1.ResourceCPU, "64").
		Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110").Ready().Obj()))
	t.Cleanup(p.cleanup)

	// The agent finds nvidia-cuda-mps-control on PATH, as in its container.
	root := dratest.SocketDir(t)
	bin, registry := filepath.Join(root, "bin"), filepath.Join(root, "registry")
	p.cdiDir, p.pipe = filepath.Join(root, "cdi"), filepath.Join(root, "mps")
	for _, dir := range []string{bin, registry, p.pipe} {
		must(t, "directory "+dir, os.MkdirAll(dir, 0o755))
	}
	dratest.StartMPSControl(t, bin)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	p.runAgent(e, nodeagent.Config{NodeName: node, SampleInterval: 100 * time.Millisecond, ProcRoot: t.TempDir(),
		RetryMin: 200 * time.Millisecond, RetryMax: 400 * time.Millisecond, SkipToolkitCheck: true,
		MPS: true, MPSPipeDirectory: p.pipe, DRA: nodeagent.DRAOn,
		CDISpecDir: p.cdiDir, KubeletPluginsDir: filepath.Join(root, "plugins"), KubeletRegistryDir: registry})
	p.kubelet = dratest.Connect(t, ctx, registry)

	profile, err := scheduler.Profile("tessera")
	must(t, "scheduler profile", err)
	mgr, _, err := daemon.NewManager(e.Config, e.Scheme, daemon.Config{Scheduler: profile, Daemon: daemon.Options{Period: 100 * time.Millisecond}, ExtendedResourceClaims: claims,
		Serving: controller.Serving{MetricsAddr: "0", ProbeAddr: "0"}, Log: testr.New(t).WithName("scheduler")})
	must(t, "scheduler", err)
	testenv.RunManager(t, ctx, mgr)
	return p
}

// runAgent runs the node agent configured by cfg until the test ends.
func (p *draPath) runAgent(e *testenv.Env, cfg nodeagent.Config) {
	p.t.Helper()
	kube := kubernetes.NewForConfigOrDie(e.Config)
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	p.t.Cleanup(bc.Shutdown)
	a, err := nodeagent.New(cfg, nodeagent.Deps{GPUs: p.gpus.Source(), Kube: kube, Dynamic: dynamic.NewForConfigOrDie(e.Config),
		Registry: prometheus.NewPedanticRegistry(), Log: testr.New(p.t).WithName("node-agent"),
		Recorder: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tessera-node-agent", Host: cfg.NodeName})})
	must(p.t, "node agent", err)
	ctx, cancel := context.WithCancel(p.ctx)
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	p.t.Cleanup(func() { cancel(); <-done })
}

// cleanup deletes the test's pods at once (no kubelet confirms graceful deletions) and
// their claims, its node's ResourceSlices, GPUNode and the node, so that other tests of
// the package's API server see none of them.
func (p *draPath) cleanup() {
	ctx := context.Background()
	zero := int64(0)
	var pods corev1.PodList
	_ = p.c.List(ctx, &pods, client.InNamespace(p.ns))
	for i := range pods.Items {
		_ = p.c.Delete(ctx, &pods.Items[i], &client.DeleteOptions{GracePeriodSeconds: &zero})
	}
	_ = p.c.DeleteAllOf(ctx, &resourcev1.ResourceClaim{}, client.InNamespace(p.ns))
	_ = p.c.DeleteAllOf(ctx, &resourcev1.ResourceSlice{}, client.MatchingFields{resourcev1.ResourceSliceSelectorNodeName: p.node})
	_ = p.c.Delete(ctx, &tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: p.node}})
	_ = p.c.Delete(ctx, apitest.MakeNode(p.node).Obj())
}

// eventually polls cond until it returns "" or draWait passes, failing with its last
// message.
func (p *draPath) eventually(what string, cond func() string) {
	p.t.Helper()
	testenv.Eventually(p.t, what, draWait, cond)
}

// devices returns the devices of the node's pool once check accepts them.
func (p *draPath) devices(what string, check func([]resourcev1.Device) string) []resourcev1.Device {
	p.t.Helper()
	var devices []resourcev1.Device
	p.eventually(what, func() string {
		var list resourcev1.ResourceSliceList
		if err := p.c.List(p.ctx, &list); err != nil {
			return err.Error()
		}
		devices = nil
		for _, s := range list.Items {
			if s.Spec.Driver == tesserav1.DRADriver && s.Spec.Pool.Name == p.node {
				devices = append(devices, s.Spec.Devices...)
			}
		}
		if len(devices) == 0 {
			return "no ResourceSlice of pool " + p.node
		}
		return check(devices)
	})
	return devices
}

// claimPod creates a claim of count whole GPUs or of a share of memory, and a pod of
// the tessera scheduler that uses it; both are named name.
func (p *draPath) claimPod(name string, count int64, memory string) {
	p.t.Helper()
	must(p.t, "claim "+name, p.c.Create(p.ctx, apitest.GPUClaim(name, p.ns, count, memory)))
	pod := apitest.MakePod(name, p.ns).SchedulerName(tesserav1.SchedulerName).
		RequestAndLimit(corev1.ResourceCPU, "1").RequestAndLimit(corev1.ResourceMemory, "1Gi").ResourceClaim("gpu", name).Obj()
	must(p.t, "pod "+name, p.c.Create(p.ctx, pod))
}

func (p *draPath) pod(name string) *corev1.Pod {
	p.t.Helper()
	var pod corev1.Pod
	must(p.t, "get pod "+name, p.c.Get(p.ctx, client.ObjectKey{Namespace: p.ns, Name: name}, &pod))
	return &pod
}

func (p *draPath) claim(name string) *resourcev1.ResourceClaim {
	p.t.Helper()
	var c resourcev1.ResourceClaim
	must(p.t, "get claim "+name, p.c.Get(p.ctx, client.ObjectKey{Namespace: p.ns, Name: name}, &c))
	return &c
}

// waitBound waits until pod name is bound and returns it with its claim, of its name.
func (p *draPath) waitBound(name string) (*corev1.Pod, *resourcev1.ResourceClaim) {
	p.t.Helper()
	return p.bound(name), p.claim(name)
}

// bound waits until pod name is bound and returns it.
func (p *draPath) bound(name string) *corev1.Pod {
	p.t.Helper()
	p.eventually("pod "+name+" bound", func() string {
		if pod := p.pod(name); pod.Spec.NodeName == "" {
			return fmt.Sprintf("pending; conditions %v", pod.Status.Conditions)
		}
		return ""
	})
	return p.pod(name)
}

// allocated is the one device a claim's allocation names, checked to be of the node's
// pool and reserved for pod; its UUID is the one the node agent published for it, which
// must be that of the GPU the device is named after.
func (p *draPath) allocated(pod *corev1.Pod, c *resourcev1.ResourceClaim) (r resourcev1.DeviceRequestAllocationResult, index int, uuid string) {
	p.t.Helper()
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
		p.t.Fatalf("claim %s: allocation %+v, want one device", c.Name, c.Status.Allocation)
	}
	r = c.Status.Allocation.Devices.Results[0]
	if req := c.Spec.Devices.Requests[0].Name; r.Driver != tesserav1.DRADriver || r.Pool != p.node || r.Request != req {
		p.t.Fatalf("claim %s: allocated %+v, want request %s on a device of %s pool %s", c.Name, r, req, tesserav1.DRADriver, p.node)
	}
	if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != pod.UID || !slices.Contains(c.Finalizers, resourcev1.Finalizer) {
		p.t.Fatalf("claim %s: reservedFor %v, finalizers %v: want its pod %s and %s", c.Name, c.Status.ReservedFor, c.Finalizers, pod.UID, resourcev1.Finalizer)
	}
	index = -1
	for i := range p.gpus.Devices { // NVML index i
		if dra.DeviceName(i) == r.Device {
			index = i
		}
	}
	if index < 0 {
		p.t.Fatalf("claim %s: device %s is none of the node's GPUs", c.Name, r.Device)
	}
	uuid = p.publishedUUID(r.Device)
	if uuid != p.gpus.UUID(index) {
		p.t.Fatalf("claim %s: device %s published with uuid %q, want GPU %d's %s", c.Name, r.Device, uuid, index, p.gpus.UUID(index))
	}
	return r, index, uuid
}

// publishedUUID is the uuid attribute the node agent published for device, "" if none.
func (p *draPath) publishedUUID(device string) string {
	p.t.Helper()
	for _, d := range p.devices("the node's GPUs published", func([]resourcev1.Device) string { return "" }) {
		if v := d.Attributes[tesserav1.DeviceAttributeUUID].StringValue; d.Name == device && v != nil {
			return *v
		}
	}
	return ""
}

// prepare prepares pod's claim as its kubelet does and checks what the containers get:
// the toolkit's CDI device of exactly the allocated GPU, the one the pod's GPU
// assignment names, and the claim's own device, whose environment and mounts it returns.
func (p *draPath) prepare(pod *corev1.Pod, c *resourcev1.ResourceClaim) dratest.ClaimDevice {
	p.t.Helper()
	r, _, uuid := p.allocated(pod, c)
	a, err := tesserav1.ParseGPUAssignment(pod.Annotations[tesserav1.AnnotationGPUAssign])
	must(p.t, "pod "+pod.Name+" GPU assignment", err)
	if a.Node != p.node || len(a.Containers) != 1 || !slices.Equal(a.Containers[0].UUIDs, []string{uuid}) {
		p.t.Fatalf("pod %s: GPU assignment %+v, want its one container on %s's GPU %s, which its claim holds", pod.Name, a, p.node, uuid)
	}

	resp := p.kubelet.Prepare(p.t, c)
	if resp.Error != "" || len(resp.Devices) != 1 {
		p.t.Fatalf("prepare claim %s: %v", c.Name, resp)
	}
	d := dratest.ReadClaimDevice(p.t, p.cdiDir, c)
	got := resp.Devices[0]
	want := []string{"nvidia.com/gpu=" + uuid, cdi.QualifiedName(d.Name)}
	if got.PoolName != p.node || got.DeviceName != r.Device || !slices.Equal(got.RequestNames, []string{r.Request}) || !slices.Equal(got.CdiDeviceIds, want) {
		p.t.Fatalf("claim %s prepared as %v, want device %s with CDI devices %v", c.Name, got, r.Device, want)
	}
	if (got.ShareId == nil) != (r.ShareID == nil) || (r.ShareID != nil && *got.ShareId != string(*r.ShareID)) {
		p.t.Fatalf("claim %s prepared with share ID %v, want the allocation's %v", c.Name, got.ShareId, r.ShareID)
	}
	return d
}

// shareEdits are what a container holding a share of mib MiB of GPU uuid gets: its
// limit, held by MPS, and the MPS control daemon's pipe directory.
func (p *draPath) shareEdits(uuid string, mib int) dratest.ClaimDevice {
	return dratest.ClaimDevice{
		Env: []string{fmt.Sprintf("TESSERA_GPU_MEMORY_LIMIT_MIB=%d", mib), fmt.Sprintf("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s=%dM", uuid, mib),
			"CUDA_MPS_PIPE_DIRECTORY=" + p.pipe},
		Mounts: []string{p.pipe + ":" + p.pipe},
	}
}

// checkEdits fails unless the claim device gives what want does.
func checkEdits(t *testing.T, what string, got, want dratest.ClaimDevice) {
	t.Helper()
	if !slices.Equal(got.Env, want.Env) || !slices.Equal(got.Mounts, want.Mounts) {
		t.Fatalf("%s: CDI device %s gives env %v and mounts %v; want env %v and mounts %v", what, got.Name, got.Env, got.Mounts, want.Env, want.Mounts)
	}
}

// finish ends pod name as its kubelet does: the claim of its name is unprepared (its CDI
// spec goes) and the pod has succeeded.
func (p *draPath) finish(name string) {
	p.t.Helper()
	p.finishWith(name, name)
}

// finishWith is finish of pod name whose claim is claim.
func (p *draPath) finishWith(name, claim string) {
	p.t.Helper()
	c := p.claim(claim)
	p.kubelet.Unprepare(p.t, c)
	dratest.SpecRemoved(p.t, p.cdiDir, c)
	pod := p.pod(name)
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.StartTime = &metav1.Time{Time: time.Now()}
	must(p.t, "pod "+name+" succeeded", p.c.Status().Update(p.ctx, pod))
}

// waitReleased waits until the scheduler has released claim name, whose pod ended: no
// allocation, no consumer, no deletion protection.
func (p *draPath) waitReleased(name string) {
	p.t.Helper()
	p.eventually("claim "+name+" released", func() string {
		c := p.claim(name)
		if c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 || slices.Contains(c.Finalizers, resourcev1.Finalizer) {
			return fmt.Sprintf("allocation %+v, reservedFor %v, finalizers %v", c.Status.Allocation, c.Status.ReservedFor, c.Finalizers)
		}
		return ""
	})
}

// consumedMemory is the GPU memory an allocation consumes, "" when it names none.
func consumedMemory(r resourcev1.DeviceRequestAllocationResult) string {
	q, ok := r.ConsumedCapacity[tesserav1.DeviceCapacityMemory]
	if !ok {
		return ""
	}
	return q.String()
}

// sharing lists the devices published for memory shares.
func sharing(devices []resourcev1.Device) []string {
	var out []string
	for _, d := range devices {
		if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
			out = append(out, d.Name)
		}
	}
	return out
}

// shared is the GPU of startDGX's DGX A100 set up for shares.
const shared = 3

// startDGX runs the DRA path (startDRAPath, claims the scheduler's extended-resource
// claims mode) on a DGX A100 whose GPU shared alone is in EXCLUSIVE_PROCESS compute mode,
// on a node and namespace named prefix-<run>.
func startDGX(t *testing.T, prefix, claims string) (*draPath, *nvidiatest.Node) {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	gpus := nvidiatest.DGXA100()
	gpus.SetComputeMode(shared, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
	name := fmt.Sprintf("%s-%d", prefix, runs.Add(1)) // -count reruns on the same API server
	return startDRAPath(testenv.Context(t, 3*time.Minute), t, env, name, name, gpus, claims), gpus
}

// TestDRAAgentSchedulerKubelet follows GPU claims through the whole DRA path against a
// real API server: the node agent publishes a DGX A100's GPUs, only GPU 3 (in
// EXCLUSIVE_PROCESS compute mode, MPS on) for shares; Tessera's scheduler allocates a
// claim of a 10Gi share and one of a whole GPU and binds their pods; the kubelet
// prepares the claims on the agent's plugin socket and gets the CDI devices of exactly
// the GPUs allocated, the share held to its memory by MPS. A share larger than what GPU
// 3 has left waits, although six GPUs are idle (in DEFAULT mode, nothing would hold it
// to its share), until the first share's pod ends: then it lands on GPU 3, rounded up
// to the agent's 1Gi share step.
func TestDRAAgentSchedulerKubelet(t *testing.T) {
	p, gpus := startDGX(t, "dra-path", "")

	p.devices("the node's GPUs published, GPU 3 alone for shares", func(devices []resourcev1.Device) string {
		if len(devices) != len(gpus.Devices) || !slices.Equal(sharing(devices), []string{dra.DeviceName(shared)}) {
			return fmt.Sprintf("%d devices, %v for shares; want %d, %s alone for shares", len(devices), sharing(devices), len(gpus.Devices), dra.DeviceName(shared))
		}
		return ""
	})

	// A 10Gi share: on GPU 3, the one GPU where MPS holds a share.
	p.claimPod("share", 0, "10Gi")
	pod, c := p.waitBound("share")
	r, index, uuid := p.allocated(pod, c)
	if index != shared || r.ShareID == nil || consumedMemory(r) != "10Gi" {
		t.Fatalf("share allocated on %s (share ID %v) consuming %q: want 10Gi of %s", r.Device, r.ShareID, consumedMemory(r), dra.DeviceName(shared))
	}
	for range 2 { // the kubelet retries: preparing again answers the same
		checkEdits(t, "share", p.prepare(pod, c), p.shareEdits(uuid, 10240))
	}

	// A whole GPU: any GPU but the shared one.
	p.claimPod("whole", 1, "")
	pod, c = p.waitBound("whole")
	if _, index, _ := p.allocated(pod, c); index == shared {
		t.Fatalf("whole GPU allocated on %s, which holds a share", dra.DeviceName(shared))
	}
	checkEdits(t, "whole GPU", p.prepare(pod, c), dratest.ClaimDevice{Env: []string{"TESSERA_GPU_MEMORY_LIMIT_MIB=40960"}})

	// 35000Mi (35Gi at the 1Gi step) does not fit the 30Gi GPU 3 has left, and no other
	// GPU takes shares: the pod waits, unbound and its claim unallocated, saying why.
	p.claimPod("large-share", 0, "35000Mi")
	p.eventually("large-share unschedulable", func() string {
		pod, c := p.pod("large-share"), p.claim("large-share")
		if pod.Spec.NodeName != "" || c.Status.Allocation != nil {
			t.Fatalf("large-share: bound to %q, allocated %+v; want it pending: no GPU taking shares has 35Gi free", pod.Spec.NodeName, c.Status.Allocation)
		}
		i := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
		if i < 0 || pod.Status.Conditions[i].Status != corev1.ConditionFalse || pod.Status.Conditions[i].Reason != corev1.PodReasonUnschedulable ||
			!strings.Contains(pod.Status.Conditions[i].Message, "35840MiB") {
			return fmt.Sprintf("conditions %v, want PodScheduled False: no GPU taking shares has 35840MiB free", pod.Status.Conditions)
		}
		return ""
	})

	// The first share's pod ends: the kubelet unprepares its claim, the scheduler
	// releases it, and the large share takes GPU 3.
	p.finish("share")
	pod, c = p.waitBound("large-share")
	r, index, uuid = p.allocated(pod, c)
	if index != shared || consumedMemory(r) != "35Gi" {
		t.Fatalf("large share allocated on %s consuming %q: want 35Gi of %s", r.Device, consumedMemory(r), dra.DeviceName(shared))
	}
	checkEdits(t, "large share", p.prepare(pod, c), p.shareEdits(uuid, 35*1024))
	for _, name := range []string{"whole", "large-share"} {
		p.finish(name)
	}
	for _, name := range []string{"share", "whole", "large-share"} {
		p.waitReleased(name)
	}
}

// TestDRAExtendedResourceAgentSchedulerKubelet follows pods that ask GPUs as extended
// resources (tessera.dev/gpu: 1, tessera.dev/gpu-memory: 10240) and name no claim
// through the DRA path: Tessera's scheduler makes each a claim, allocates it the GPU it
// chose and names it in the pod's status.extendedResourceClaimStatus, where the kubelet
// finds it and prepares it on the agent's plugin socket, getting the CDI devices of
// exactly that GPU, the share held to its memory by MPS.
func TestDRAExtendedResourceAgentSchedulerKubelet(t *testing.T) {
	p, gpus := startDGX(t, "dra-extended", snapshot.ExtendedClaimsOn)
	p.devices("the node's GPUs published", func(devices []resourcev1.Device) string {
		if len(devices) != len(gpus.Devices) {
			return fmt.Sprintf("%d devices, want %d", len(devices), len(gpus.Devices))
		}
		return ""
	})
	for _, w := range []*apitest.PodWrapper{apitest.MakePod("whole", p.ns).GPU(1), apitest.MakePod("share", p.ns).GPUMemory(10240)} {
		pod := w.SchedulerName(tesserav1.SchedulerName).RequestAndLimit(corev1.ResourceCPU, "1").RequestAndLimit(corev1.ResourceMemory, "1Gi").Obj()
		must(t, "pod "+pod.Name, p.c.Create(p.ctx, pod))
	}
	claims := map[string]string{}
	for _, name := range []string{"whole", "share"} {
		pod := p.bound(name)
		st := pod.Status.ExtendedResourceClaimStatus
		if st == nil || len(st.RequestMappings) != 1 || st.RequestMappings[0].RequestName != "container-0-request-2" {
			t.Fatalf("pod %s: status.extendedResourceClaimStatus %+v, want its claim and container-0-request-2", name, st)
		}
		c := p.claim(st.ResourceClaimName)
		claims[name] = c.Name
		d := p.prepare(pod, c)
		_, index, uuid := p.allocated(pod, c)
		switch {
		case name == "share" && index != shared:
			t.Fatalf("share allocated on GPU %d, want %d, the one MPS holds shares on", index, shared)
		case name == "share":
			checkEdits(t, "share", d, p.shareEdits(uuid, 10240))
		default:
			checkEdits(t, "whole GPU", d, dratest.ClaimDevice{Env: []string{"TESSERA_GPU_MEMORY_LIMIT_MIB=40960"}})
		}
	}
	for name, claim := range claims {
		p.finishWith(name, claim)
		p.waitReleased(claim)
	}
}
