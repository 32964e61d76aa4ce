package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

const node = "gpu-node-1"

// fakeKubelet is the kubelet's side of the device plugin protocol: a Registration
// server on kubelet.sock that, like the kubelet, dials every plugin that registers, and
// the pod resources API (List) on pod-resources.sock, which lists the pods the test
// says the kubelet received and the allocations it records with admit, as the
// kubelet's checkpoint does.
type fakeKubelet struct {
	pb.UnimplementedRegistrationServer
	podresources.UnimplementedPodResourcesListerServer
	dir        string
	registered chan *pb.RegisterRequest

	mu          sync.Mutex
	received    map[PodName]*corev1.Pod
	allocations map[PodContainer]*podresources.ContainerDevices
}

func startKubelet(t *testing.T) *fakeKubelet {
	t.Helper()
	// Unix socket paths are limited to ~108 bytes; t.TempDir() can be long.
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	k := &fakeKubelet{dir: dir, registered: make(chan *pb.RegisterRequest, 4), received: map[PodName]*corev1.Pod{},
		allocations: map[PodContainer]*podresources.ContainerDevices{}}
	for _, sock := range []string{"kubelet.sock", "pod-resources.sock"} {
		lis, err := net.Listen("unix", filepath.Join(dir, sock))
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		pb.RegisterRegistrationServer(srv, k)
		podresources.RegisterPodResourcesListerServer(srv, k)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
	}
	return k
}

// List reports the received pods and their recorded allocations, as the kubelet's pod
// resources API does: by pod namespace and name, every container (init containers
// only when they restart), with or without devices.
func (k *fakeKubelet) List(context.Context, *podresources.ListPodResourcesRequest) (*podresources.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	resp := &podresources.ListPodResourcesResponse{}
	for name, pod := range k.received {
		pr := &podresources.PodResources{Namespace: name.Namespace, Name: name.Name}
		for _, c := range pod.Spec.Containers {
			cr := &podresources.ContainerResources{Name: c.Name}
			if d, ok := k.allocations[PodContainer{name.Namespace, name.Name, c.Name}]; ok {
				cr.Devices = []*podresources.ContainerDevices{d}
			}
			pr.Containers = append(pr.Containers, cr)
		}
		resp.PodResources = append(resp.PodResources, pr)
	}
	return resp, nil
}

// receive is the kubelet getting pods bound to its node from the API server: it lists
// them from then on, the one it admits among them.
func (k *fakeKubelet) receive(pods ...*corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, pod := range pods {
		k.received[PodName{pod.Namespace, pod.Name}] = pod
	}
}

// drop is the kubelet removing a pod deleted from the API server, and its allocations.
func (k *fakeKubelet) drop(pod *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.received, PodName{pod.Namespace, pod.Name})
	for pc := range k.allocations {
		if pc.Namespace == pod.Namespace && pc.Pod == pod.Name {
			delete(k.allocations, pc)
		}
	}
}

// record keeps an allocation the kubelet made, in its checkpoint.
func (k *fakeKubelet) record(resource corev1.ResourceName, pod *corev1.Pod, container string, ids []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.received[PodName{pod.Namespace, pod.Name}] = pod
	k.allocations[PodContainer{pod.Namespace, pod.Name, container}] = &podresources.ContainerDevices{ResourceName: string(resource), DeviceIds: ids}
}

func (k *fakeKubelet) Register(_ context.Context, r *pb.RegisterRequest) (*pb.Empty, error) {
	k.registered <- r
	return &pb.Empty{}, nil
}

// waitRegistration waits for the plugin to register and dials it back.
func (k *fakeKubelet) waitRegistration(t *testing.T) (*pb.RegisterRequest, pb.DevicePluginClient) {
	t.Helper()
	select {
	case r := <-k.registered:
		conn, err := grpc.NewClient("unix://"+filepath.Join(k.dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return r, pb.NewDevicePluginClient(conn)
	case <-time.After(10 * time.Second):
		t.Fatal("plugin did not register with the kubelet")
	}
	return nil, nil
}

// gpus are the node's GPUs, set up for MPS (EXCLUSIVE_PROCESS compute mode).
var gpus = []GPU{
	{UUID: "GPU-0000aaaa-0000-0000-0000-000000000000", Index: 0, MemoryMiB: 81920, NUMANode: 0, ComputeMode: gpu.ComputeModeExclusiveProcess, Healthy: true},
	{UUID: "GPU-0000bbbb-0000-0000-0000-000000000000", Index: 1, MemoryMiB: 81920, NUMANode: 1, ComputeMode: gpu.ComputeModeExclusiveProcess, Healthy: true},
}

// makePod is a pending pod of team-a on this node, created the given seconds after a
// reference time, whose container "main" limits shares GPU shares, as the tessera
// scheduler bound it (its UID in tessera.dev/bound-pod-uid).
func makePod(name string, created int, shares int64) *apitest.PodWrapper {
	return apitest.MakePod(name, "team-a").UID("uid-"+name).Created(time.Unix(1_700_000_000+int64(created), 0)).
		NodeName(node).Limit(tesserav1.ResourceGPU, strconv.FormatInt(shares, 10)).Phase(corev1.PodPending).
		SchedulerName(tesserav1.SchedulerName).Annotation(tesserav1.AnnotationBoundPodUID, "uid-"+name)
}

func slice(uuid string, mib int64) tesserav1.GPUAssignment {
	return tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{uuid}, MemoryMiB: mib}}}
}

type setup struct {
	plugin  *Plugin
	client  pb.DevicePluginClient
	kubelet *fakeKubelet
	reg     *pb.RegisterRequest
	stop    func() // stops the plugin (the test's end does too)
}

func start(t *testing.T, shares int, mps *fakeMPS, pods ...*corev1.Pod) setup {
	t.Helper()
	opts := Options{SharesPerGPU: shares}
	if mps != nil {
		opts.MPS = mps
	}
	return startWith(t, opts, pods...)
}

// fakeMPS records the limits set in the MPS control daemon.
type fakeMPS struct {
	mu     sync.Mutex
	limits map[string]int64
	err    error // of SetPinnedMemLimit
	down   error // of Running: no daemon answers
}

const testPipeDir = "/run/nvidia-mps"

func (f *fakeMPS) PipeDir() string { return testPipeDir }

func (f *fakeMPS) Running(context.Context) error { return f.down }

func (f *fakeMPS) SetPinnedMemLimit(_ context.Context, uuid string, mib int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.limits == nil {
		f.limits = map[string]int64{}
	}
	f.limits[uuid] = mib
	return nil
}

func (f *fakeMPS) limit(uuid string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limits[uuid]
}

// startWith serves a plugin with opts, completed with the fake kubelet and pods; the
// plugin reads the fake kubelet's pod resources API unless opts name another ledger.
func startWith(t *testing.T, opts Options, pods ...*corev1.Pod) setup {
	t.Helper()
	return startPlugin(t, opts, true, pods...)
}

// startWithoutLedger serves a plugin that does not read the kubelet's pod resources API.
func startWithoutLedger(t *testing.T, opts Options, pods ...*corev1.Pod) setup {
	t.Helper()
	return startPlugin(t, opts, false, pods...)
}

func startPlugin(t *testing.T, opts Options, ledger bool, pods ...*corev1.Pod) setup {
	t.Helper()
	k := startKubelet(t)
	var objs []corev1.Pod
	for _, p := range pods {
		objs = append(objs, *p)
	}
	cs := fake.NewClientset(&corev1.PodList{Items: objs})
	opts.NodeName, opts.PluginDir, opts.Pods, opts.RecheckInterval, opts.Log = node, k.dir, KubePods{Client: cs, Node: node}, 20*time.Millisecond, testr.New(t)
	if opts.Ledger == nil && ledger {
		opts.Ledger = KubeletLedger{Socket: filepath.Join(k.dir, "pod-resources.sock")}
	}
	return serve(t, k, opts)
}

// serve runs a plugin with opts until the test ends and waits for it to register.
func serve(t *testing.T, k *fakeKubelet, opts Options) setup {
	t.Helper()
	p := New(opts)
	p.SetGPUs(gpus)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	reg, client := k.waitRegistration(t)
	return setup{p, client, k, reg, stop}
}

// allocate is the kubelet receiving pod and allocating ids to its container "main",
// without asking for a preference first; it records the allocation when it succeeds.
func allocate(t *testing.T, s setup, pod *corev1.Pod, ids ...string) (*pb.AllocateResponse, error) {
	t.Helper()
	s.kubelet.receive(pod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.client.Allocate(ctx, &pb.AllocateRequest{ContainerRequests: []*pb.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err == nil {
		s.kubelet.record(s.plugin.opts.ResourceName, pod, "main", ids)
	}
	return resp, err
}

// kube is the API server the plugin lists pods from.
func (s setup) kube() kubernetes.Interface { return s.plugin.opts.Pods.(KubePods).Client }

func TestRegistrationAndListAndWatch(t *testing.T) {
	s := start(t, 4, nil)
	if s.reg.ResourceName != "tessera.dev/gpu" || s.reg.Version != pb.Version || !s.reg.Options.GetPreferredAllocationAvailable {
		t.Fatalf("registration = %+v", s.reg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := s.client.ListAndWatch(ctx, &pb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Devices) != 8 {
		t.Fatalf("%d devices, want 2 GPUs x 4 shares", len(first.Devices))
	}
	for _, d := range first.Devices {
		if d.Health != pb.Healthy || !strings.HasPrefix(d.ID, "GPU-0000") || !strings.Contains(d.ID, "::") {
			t.Fatalf("device %+v", d)
		}
	}
	if first.Devices[4].Topology.Nodes[0].ID != 1 {
		t.Fatalf("second GPU's NUMA node = %v, want 1", first.Devices[4].Topology)
	}
	// The second GPU turns unhealthy: the kubelet hears about all its shares.
	bad := append([]GPU(nil), gpus...)
	bad[1].Healthy = false
	s.plugin.SetGPUs(bad)
	next, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range next.Devices {
		want := pb.Healthy
		if i >= 4 {
			want = pb.Unhealthy
		}
		if d.Health != want {
			t.Fatalf("device %s health %s, want %s", d.ID, d.Health, want)
		}
	}
}

func TestAllocateSlice(t *testing.T) {
	pod := makePod("slice", 0, 1).Assignment(slice(gpus[1].UUID, 20480)).Obj()
	mps := &fakeMPS{}
	s := start(t, 4, mps, pod)
	// The kubelet picked a share of GPU 0; the plugin hands out the assigned GPU 1.
	resp, err := allocate(t, s, pod, gpus[0].UUID+"::2")
	if err != nil {
		t.Fatal(err)
	}
	r := resp.ContainerResponses[0]
	if got := cdiNames(r); !slices.Equal(got, []string{"nvidia.com/gpu=" + gpus[1].UUID}) {
		t.Fatalf("CDI devices = %v", got)
	}
	envs := r.Envs
	if envs[EnvVisibleDevices] != VoidDevices || envs[EnvMemoryLimitMiB] != "20480" || envs[EnvMPSMemoryLimit] != "0=20480M" {
		t.Fatalf("envs = %v", envs)
	}
	if got := mps.limit(gpus[1].UUID); got != 20480 {
		t.Fatalf("MPS control daemon limit of the GPU = %d MiB, want 20480", got)
	}
	// The container is allocated now; another Allocate finds no pod.
	if _, err := allocate(t, s, pod, gpus[0].UUID+"::3"); err == nil || !strings.Contains(err.Error(), "no pending pod") {
		t.Fatalf("second Allocate error = %v, want 'no pending pod'", err)
	}
}

func TestAllocateWholeGPUsWithoutMPS(t *testing.T) {
	a := tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus[0].UUID, gpus[1].UUID}}}}
	pod := makePod("whole", 0, 2).Assignment(a).Obj()
	s := start(t, 1, nil, pod)
	resp, err := allocate(t, s, pod, gpus[0].UUID, gpus[1].UUID)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.ContainerResponses[0]
	if got := cdiNames(r); !slices.Equal(got, []string{"nvidia.com/gpu=" + gpus[0].UUID, "nvidia.com/gpu=" + gpus[1].UUID}) {
		t.Fatalf("CDI devices = %v", got)
	}
	envs := r.Envs
	if envs[EnvVisibleDevices] != VoidDevices || envs[EnvMemoryLimitMiB] != "81920" {
		t.Fatalf("envs = %v", envs)
	}
	if _, ok := envs[EnvMPSMemoryLimit]; ok || envs[EnvMPSPipeDir] != "" || len(r.Mounts) > 0 {
		t.Fatalf("MPS limit or pipe directory set without MPS: %v", r)
	}
}

// The kubelet admits pods in the order it receives them; each gets its own assignment,
// and a request matches only a container asking for as many devices. Pods that run,
// sit on another node, or that the kubelet has not received are never taken for the one
// it admits.
func TestAllocateFollowsThePodTheKubeletAdmits(t *testing.T) {
	older := makePod("older", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	newer := makePod("newer", 10, 1).Assignment(slice(gpus[1].UUID, 2000)).Obj()
	twoShares := makePod("two-shares", -10, 2).Assignment(slice(gpus[1].UUID, 3000)).Obj()
	running := makePod("running", -20, 1).Assignment(slice(gpus[1].UUID, 4000)).Phase(corev1.PodRunning).Obj()
	other := makePod("elsewhere", -30, 1).Assignment(slice(gpus[1].UUID, 5000)).NodeName("other").Obj()
	s := start(t, 4, nil, newer, older, twoShares, running, other)
	s.kubelet.receive(running, twoShares)
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{{newer, "2000"}, {older, "1000"}} {
		resp, err := allocate(t, s, tc.pod, gpus[0].UUID+"::0")
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.ContainerResponses[0].Envs[EnvMemoryLimitMiB]; got != tc.want {
			t.Fatalf("%s: allocated slice %s MiB, want %s", tc.pod.Name, got, tc.want)
		}
	}
	resp, err := allocate(t, s, twoShares, gpus[0].UUID+"::0", gpus[0].UUID+"::1")
	if err != nil || resp.ContainerResponses[0].Envs[EnvMemoryLimitMiB] != "3000" {
		t.Fatalf("2-share Allocate = %v, %v; want the two-shares pod", resp, err)
	}
}

func TestAllocateRefusesWithoutValidAssignment(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no annotation", makePod("plain", 0, 1).Obj(), "has no tessera.dev/gpu-assignment annotation"},
		{"malformed", makePod("bad", 0, 1).Annotation(tesserav1.AnnotationGPUAssign, `{"node":`).Obj(), "annotation tessera.dev/gpu-assignment"},
		{"other node", makePod("moved", 0, 1).Assignment(tesserav1.GPUAssignment{Node: "gpu-node-9",
			Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus[0].UUID}}}}).Obj(), `is for node "gpu-node-9"`},
		{"unknown GPU", makePod("ghost", 0, 1).Assignment(slice("GPU-ffff0000-0000-0000-0000-000000000000", 100)).Obj(), "is not on node gpu-node-1"},
		{"no entry for container", makePod("sidecar", 0, 1).Assignment(tesserav1.GPUAssignment{Node: node,
			Containers: []tesserav1.ContainerGPUs{{Container: "other", UUIDs: []string{gpus[0].UUID}}}}).Obj(), `no entry for container "main"`},
		{"no pod at all", makePod("cpu-only", 0, 0).Obj(), "no pending pod on node gpu-node-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, 1, nil, tc.pod)
			_, err := allocate(t, s, tc.pod, gpus[0].UUID)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Allocate error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestAllocateRefusesUnhealthyGPU(t *testing.T) {
	pod := makePod("p", 0, 1).Assignment(slice(gpus[1].UUID, 100)).Obj()
	s := start(t, 1, nil, pod)
	bad := append([]GPU(nil), gpus...)
	bad[1].Healthy = false
	s.plugin.SetGPUs(bad)
	if _, err := allocate(t, s, pod, gpus[0].UUID); err == nil || !strings.Contains(err.Error(), "is unhealthy") {
		t.Fatalf("Allocate error = %v, want 'is unhealthy'", err)
	}
}

func TestPreferredAllocationFollowsAssignment(t *testing.T) {
	a := tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus[1].UUID}}}}
	pod := makePod("p", 0, 2).Assignment(a).Obj()
	s := start(t, 2, nil, pod)
	s.kubelet.receive(pod)
	var avail []string
	for _, g := range gpus {
		avail = append(avail, g.UUID+"::0", g.UUID+"::1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.client.GetPreferredAllocation(ctx, &pb.PreferredAllocationRequest{ContainerRequests: []*pb.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: avail, AllocationSize: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.ContainerResponses[0].DeviceIDs
	if len(got) != 2 || gpuOf(got[0]) != gpus[1].UUID || gpuOf(got[1]) != gpus[1].UUID {
		t.Fatalf("preferred = %v, want both shares of %s", got, gpus[1].UUID)
	}
}

func TestReRegistersAfterKubeletRestart(t *testing.T) {
	s := start(t, 1, nil)
	// The kubelet deletes plugin sockets when it restarts.
	if err := os.Remove(s.plugin.SocketPath()); err != nil {
		t.Fatal(err)
	}
	_, client := s.kubelet.waitRegistration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.GetDevicePluginOptions(ctx, &pb.Empty{}); err != nil {
		t.Fatalf("plugin not serving after re-registration: %v", err)
	}
}

// cdiNames are the CDI devices of an Allocate response.
func cdiNames(r *pb.ContainerAllocateResponse) []string {
	var out []string
	for _, d := range r.CdiDevices {
		out = append(out, d.Name)
	}
	return out
}
