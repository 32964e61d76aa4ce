package nodeagent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/dra"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/nodeagent/pressure"
)

// pressureHarness runs the agent with pressure eviction on a simulated DGX H100 (80 GiB
// GPUs: the 95% threshold is 77824 MiB) against the real API server.
type pressureHarness struct {
	*harness
	t        *testing.T
	ns       string
	procRoot string
}

func startPressure(t *testing.T, node string, draOn bool) *pressureHarness {
	procRoot := t.TempDir()
	cfg := Config{NodeName: node, SampleInterval: 50 * time.Millisecond, ProcRoot: procRoot,
		RetryMin: 200 * time.Millisecond, RetryMax: 400 * time.Millisecond,
		PressureThresholdPercent: pressure.DefaultThresholdPercent, PressureArrivalWindow: time.Minute}
	if draOn {
		withDRA(t, &cfg)
	}
	h := startConfig(t, env.Config, cfg, nvidiatest.DGXH100())
	ns := apitest.MakeNamespace("team-" + node).Obj()
	if err := env.Client.Create(h.ctx, ns); err != nil {
		t.Fatal(err)
	}
	return &pressureHarness{harness: h, t: t, ns: ns.Name, procRoot: procRoot}
}

// slicePod creates a pod holding requestMiB of GPU index, with limit (a
// tessera.dev/gpu-memory-limit value) when set, whose process pid runs in its cgroup.
func (p *pressureHarness) slicePod(name string, index int, requestMiB int64, limit string, pid int) *corev1.Pod {
	p.t.Helper()
	assign := tesserav1.GPUAssignment{Node: p.node, Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container,
		UUIDs: []string{p.gpus.UUID(index)}, MemoryMiB: requestMiB}}}
	w := apitest.MakePod(name, p.ns).NodeName(p.node).GPUMemory(requestMiB).Assignment(assign)
	if limit != "" {
		w = w.Annotation(tesserav1.AnnotationGPUMemoryLimit, limit)
	}
	pod := w.Obj()
	if err := env.Client.Create(p.ctx, pod); err != nil {
		p.t.Fatal(err)
	}
	writeCgroup(p.t, p.procRoot, pid, "0::/kubepods.slice/kubepods-pod"+strings.ReplaceAll(string(pod.UID), "-", "_")+
		".slice/cri-containerd-"+strings.Repeat("cd", 32)+".scope\n")
	return pod
}

// use sets what the processes hold on GPU index, MiB by pid.
func (p *pressureHarness) use(index int, procs map[uint32]uint64) {
	var sum uint64
	for _, mib := range procs {
		sum += mib
	}
	p.gpus.SetUsage(index, nvidiatest.Usage{UtilizationPercent: 90, MemoryUsedMiB: sum, Processes: procs})
}

// evicted is "" once pod is marked for deletion by the Eviction API (the API server
// keeps a bound pod until its kubelet confirms, which this test has none of).
func (p *pressureHarness) evicted(pod *corev1.Pod) string {
	var got corev1.Pod
	if err := env.Client.Get(p.ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		return err.Error()
	}
	if got.DeletionTimestamp == nil {
		return pod.Name + " not evicted"
	}
	return ""
}

// untouched fails the test when any of pods was evicted.
func (p *pressureHarness) untouched(pods ...*corev1.Pod) {
	p.t.Helper()
	for _, pod := range pods {
		if p.evicted(pod) == "" {
			p.t.Fatalf("pod %s was evicted", pod.Name)
		}
	}
}

// pressureEvent is "" once pod has a GPUMemoryPressure event carrying want.
func (p *pressureHarness) pressureEvent(pod *corev1.Pod, want ...string) string {
	var events corev1.EventList
	if err := env.Client.List(p.ctx, &events, client.InNamespace(p.ns)); err != nil {
		return err.Error()
	}
	for _, e := range events.Items {
		if e.Reason != tesserav1.EventReasonGPUMemoryPressure || e.InvolvedObject.UID != pod.UID || e.Type != corev1.EventTypeWarning {
			continue
		}
		for _, w := range want {
			if !strings.Contains(e.Message, w) {
				return fmt.Sprintf("event %q lacks %q", e.Message, w)
			}
		}
		return ""
	}
	return fmt.Sprintf("no %s event on %s", tesserav1.EventReasonGPUMemoryPressure, pod.Name)
}

// Two pods share GPU 0, one bursting past its request into free memory: nothing
// happens. A third pod's request arrives on the GPU and no longer fits beside their
// use: the burster is evicted through the Eviction API, the two others are untouched,
// and the event and the counter say why. On GPU 1, a burster pushing the GPU past 95%
// is evicted the same way.
func TestPressureEvictsBurster(t *testing.T) {
	p := startPressure(t, "agent-pressure", false)
	burst := p.slicePod("burst", 0, 20000, "60000", 3001)
	steady := p.slicePod("steady", 0, 20000, "", 3002)
	arrival := p.arrivalEvictsBurster(burst, steady, 3001, 3002, 3003, 2)
	if got := testutil.ToFloat64(p.agent.metrics.PressureEvicted(0, pressure.TriggerArrival)); got != 1 {
		t.Fatalf("tessera_gpu_pressure_evictions_total{gpu=0,trigger=Arrival} = %v, want 1", got)
	}

	// GPU 1 nears full: the pod furthest above its request relative to it goes.
	grow := p.slicePod("grow", 1, 10000, "40Gi", 3004)
	big := p.slicePod("big", 1, 40000, "60000", 3005)
	within := p.slicePod("within", 1, 30000, "", 3006)
	p.use(1, map[uint32]uint64{3004: 25000, 3005: 45000, 3006: 9000}) // 79000 MiB; grow 1.5x above, big 0.125x
	eventually(t, "the furthest above its request evicted", func() string { return p.evicted(grow) })
	eventually(t, "the event on it", func() string {
		return p.pressureEvent(grow, "Threshold:", "uses 79000 MiB, above the pressure threshold of 77824 MiB", "request 10000 MiB, limit 40960 MiB")
	})
	// While it terminates, still holding its memory, the GPU waits: nobody else goes.
	time.Sleep(300 * time.Millisecond)
	p.untouched(big, within, steady, arrival)
	if got := testutil.ToFloat64(p.agent.metrics.PressureEvicted(1, pressure.TriggerThreshold)); got != 1 {
		t.Fatalf("tessera_gpu_pressure_evictions_total{gpu=1,trigger=Threshold} = %v, want 1", got)
	}
}

// claimPod creates a pod holding, through a ResourceClaim the test allocates as the
// scheduler would, a share of requestMiB of GPU index with limit (a GPUShareConfig
// memoryLimit) when set, whose process pid runs in its cgroup.
func (p *pressureHarness) claimPod(name string, index int, requestMiB int64, limit string, pid int) *corev1.Pod {
	p.t.Helper()
	claim := apitest.GPUClaim(name, p.ns, 0, fmt.Sprintf("%dMi", requestMiB))
	if err := env.Client.Create(p.ctx, claim); err != nil {
		p.t.Fatal(err)
	}
	pod := apitest.MakePod(name, p.ns).NodeName(p.node).Obj()
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	if err := env.Client.Create(p.ctx, pod); err != nil {
		p.t.Fatal(err)
	}
	share := types.UID(uuid.NewUUID())
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: dra.DriverName, Pool: p.node, Device: dra.DeviceName(index),
			ShareID: &share, ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{
				dra.CapacityMemory: *resource.NewQuantity(requestMiB<<20, resource.BinarySI)}}}}}
	if limit != "" {
		claim.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: dra.DriverName,
				Parameters: runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"memoryLimit":%q}`,
					tesserav1.GPUShareConfigAPIVersion, tesserav1.GPUShareConfigKind, limit))}}}}}
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if err := env.Client.Status().Update(p.ctx, claim); err != nil {
		p.t.Fatal(err)
	}
	writeCgroup(p.t, p.procRoot, pid, "0::/kubepods.slice/kubepods-pod"+strings.ReplaceAll(string(pod.UID), "-", "_")+
		".slice/cri-containerd-"+strings.Repeat("ef", 32)+".scope\n")
	return pod
}

// A share held through a DRA claim is weighed as a slice is: the claim's burster, above
// its request, is evicted when a slice's request arrives; a claim within its request
// and the others are untouched.
func TestPressureEvictsClaimBurster(t *testing.T) {
	p := startPressure(t, "agent-pressure-dra", true)
	burst := p.claimPod("claim-burst", 0, 20000, "60000Mi", 4001)
	steady := p.claimPod("claim-steady", 0, 20000, "", 4002)
	p.arrivalEvictsBurster(burst, steady, 4001, 4002, 4003, 0)
}

// arrivalEvictsBurster has burst (20000 MiB asked, limit 60000 MiB) use 50000 MiB and
// steady its 20000 on GPU 0: nothing happens. Then a slice's 20000 MiB arrive there: the
// burster is evicted, the two others are untouched, and the event says why. slicePods is
// how many pods the GPUNode lists (slices of the device plugin). It returns the arrival.
func (p *pressureHarness) arrivalEvictsBurster(burst, steady *corev1.Pod, burstPID, steadyPID, arrivalPID uint32, slicePods int) *corev1.Pod {
	t := p.t
	t.Helper()
	p.use(0, map[uint32]uint64{burstPID: 50000, steadyPID: 20000}) // 70000 MiB: below 77824
	eventually(t, "the bursting use sampled", func() string {
		gn := p.gpuNode(t)
		if gn == nil || len(gn.Status.Devices) == 0 || gn.Status.Devices[0].MemoryUsedMiB != 70000 || len(gn.Status.Pods) != slicePods {
			return "not yet"
		}
		return ""
	})
	time.Sleep(300 * time.Millisecond) // several samples
	p.untouched(burst, steady)

	arrival := p.slicePod("arrival-"+burst.Name, 0, 20000, "", int(arrivalPID))
	eventually(t, "the burster evicted", func() string { return p.evicted(burst) })
	p.untouched(steady, arrival)
	eventually(t, "the event on the burster", func() string {
		return p.pressureEvent(burst, "Arrival:", "GPU 0 ("+p.gpus.UUID(0)+", 81920 MiB) uses 70000 MiB and newly bound pods still need 20000 MiB",
			"uses 50000 MiB, request 20000 MiB, limit 60000 MiB")
	})
	return arrival
}
