package nodeagent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/cgroup"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
)

// usageRig samples a simulated DGX A100 (go-nvml's mock) and feeds the pods' use to a
// usageHistory, as the agent's sample loop does.
type usageRig struct {
	t     *testing.T
	gpus  *nvidiatest.Node
	agent *Agent
	now   time.Time
}

func newUsageRig(t *testing.T) *usageRig {
	gpus := nvidiatest.DGXA100()
	src := gpus.Source()
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Shutdown() })
	a := &Agent{cfg: Config{NodeName: "dgx"}, cgroups: cgroup.Resolver{ProcRoot: t.TempDir()}, deps: Deps{GPUs: src, Log: testr.New(t)}}
	return &usageRig{t: t, gpus: gpus, agent: a, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// pod is a pod of the node with GPUs assigned to its container; its processes are the
// given PIDs.
func (r *usageRig) pod(name string, sliceMiB int64, gpus []int, pids ...int) *corev1.Pod {
	uid := fmt.Sprintf("%08d-0000-4000-8000-000000000000", len(name)*1000+int(name[len(name)-1]))
	as := tesserav1.GPUAssignment{Node: "dgx", Containers: []tesserav1.ContainerGPUs{{Container: "main", MemoryMiB: sliceMiB}}}
	for _, i := range gpus {
		as.Containers[0].UUIDs = append(as.Containers[0].UUIDs, r.gpus.UUID(i))
	}
	p := apitest.MakePod(name, "team").UID(uid).NodeName("dgx").Assignment(as).ControlledBy("Job", name).Phase(corev1.PodRunning).Obj()
	for _, pid := range pids {
		writeCgroup(r.t, r.agent.cgroups.ProcRoot, pid, "0::/kubepods.slice/kubepods-pod"+uid+".slice/cri-containerd-"+fmt.Sprintf("%064d", pid)+".scope\n")
	}
	return p
}

// use has process pid hold mib MiB of GPU i, all the memory used on it.
func (r *usageRig) use(i int, pid uint32, mib uint64) {
	r.gpus.SetUsage(i, nvidiatest.Usage{MemoryUsedMiB: mib, Processes: map[uint32]uint64{pid: mib}})
}

// sample reads the GPUs with the pods listed on the node, a sample interval later.
func (r *usageRig) sample(h *usageHistory, pods ...*corev1.Pod) map[types.UID]tesserav1.GPUPodMemory {
	r.t.Helper()
	r.now = r.now.Add(10 * time.Second)
	samples, err := r.agent.deps.GPUs.Sample()
	if err != nil {
		r.t.Fatal(err)
	}
	var listed []corev1.Pod
	for _, p := range pods {
		listed = append(listed, *p)
	}
	gpuMiB := map[string]int64{}
	for i := range 8 {
		gpuMiB[r.gpus.UUID(i)] = 40960
	}
	h.observe(assignedPods(listed, "dgx"), r.agent.podGPUUse(samples), gpuMiB, r.now)
	out := map[types.UID]tesserav1.GPUPodMemory{}
	for _, e := range h.entries() {
		out[types.UID(e.UID)] = e
	}
	return out
}

func TestUsagePeakOfMultiGPUPodIsItsLargestGPU(t *testing.T) {
	r := newUsageRig(t)
	var h usageHistory
	train := r.pod("train", 0, []int{0, 1}, 100, 101, 102)
	// GPU 0: 10000 MiB; GPU 1: two processes, 12000 + 1000 MiB; pid 7 is a host process.
	r.use(0, 100, 10000)
	r.gpus.SetUsage(1, nvidiatest.Usage{MemoryUsedMiB: 13000, Processes: map[uint32]uint64{101: 12000, 102: 1000, 7: 500}})
	got := r.sample(&h, train)[train.UID]
	want := tesserav1.GPUPodMemory{Namespace: "team", Name: "train", UID: string(train.UID), Workload: "Job/train",
		PeakMiB: 13000, FirstMiB: 13000, GPUMemoryMiB: 40960}
	if got != want {
		t.Fatalf("entry %+v, want %+v", got, want)
	}
}

func TestUsagePeakStepsAndFinalPeak(t *testing.T) {
	r := newUsageRig(t)
	var h usageHistory
	slice := r.pod("slice", 10240, []int{2}, 200)
	idle := r.pod("idle", 0, []int{3}) // holds a GPU, never uses it: no entry
	step := func(mib uint64, wantPeak int64, pods ...*corev1.Pod) tesserav1.GPUPodMemory {
		t.Helper()
		r.use(2, 200, mib)
		entries := r.sample(&h, pods...)
		if _, ok := entries[idle.UID]; ok {
			t.Fatalf("a pod that used no GPU memory has an entry")
		}
		e, ok := entries[slice.UID]
		if !ok || e.PeakMiB != wantPeak {
			t.Fatalf("at %d MiB: entry %+v, want peak %d", mib, e, wantPeak)
		}
		return e
	}
	step(4000, 4000, slice, idle)
	step(4150, 4000, slice, idle) // +150 MiB, under 5%: the published peak stays
	step(3000, 4000, slice, idle)
	step(4200, 4200, slice, idle) // +5%
	e := step(4300, 4200, slice, idle)
	if e.FirstMiB != 4000 || e.LimitMiB != 10240 || e.GPUMemoryMiB != 40960 || e.EndedTime != nil {
		t.Fatalf("running entry %+v", e)
	}
	done := slice.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	r.gpus.SetUsage(2, nvidiatest.Usage{})
	e = step(0, 4300, done, idle) // ended: the exact peak
	if e.EndedTime == nil || !e.EndedTime.Time.Equal(r.now) {
		t.Fatalf("ended entry %+v at %v", e, r.now)
	}
	ended := e.EndedTime
	for r.now.Sub(ended.Time) < endedKeep-10*time.Second {
		if e = step(0, 4300, idle); !e.EndedTime.Equal(ended) {
			t.Fatalf("end moved: %+v", e)
		}
	}
	r.sample(&h, idle)
	if n := len(h.entries()); n != 0 {
		t.Fatalf("%d entries %s after the pod ended, want none", n, endedKeep)
	}
}

func TestUsageGonePodEnds(t *testing.T) {
	r := newUsageRig(t)
	var h usageHistory
	p := r.pod("serve", 20480, []int{4}, 300)
	r.use(4, 300, 9000)
	r.sample(&h, p)
	r.gpus.SetUsage(4, nvidiatest.Usage{})
	e := r.sample(&h)[p.UID] // deleted: not listed any more
	if e.EndedTime == nil || e.PeakMiB != 9000 || e.LimitMiB != 20480 {
		t.Fatalf("entry of a deleted pod %+v", e)
	}
}

func TestUsageEntriesBounded(t *testing.T) {
	h := usageHistory{pods: map[types.UID]*podMemory{}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxPodEntries + 40 {
		m := &podMemory{published: tesserav1.GPUPodMemory{Namespace: "ns", Name: fmt.Sprintf("p%03d", i), UID: fmt.Sprint(i), PeakMiB: 1}}
		if i%2 == 0 {
			m.end(at.Add(time.Duration(i) * time.Second))
		}
		h.pods[types.UID(m.published.UID)] = m
	}
	got := h.entries()
	if len(got) != maxPodEntries {
		t.Fatalf("%d entries, want %d", len(got), maxPodEntries)
	}
	running, oldestEnd := 0, at.Add(time.Hour)
	for i, e := range got {
		if i > 0 && got[i-1].Name >= e.Name {
			t.Fatalf("not sorted by name at %d", i)
		}
		if e.EndedTime == nil {
			running++
		} else if e.EndedTime.Time.Before(oldestEnd) {
			oldestEnd = e.EndedTime.Time
		}
	}
	// Every running pod is kept; the ended ones dropped are the oldest.
	if running != (maxPodEntries+40)/2 || oldestEnd != at.Add(80*time.Second) {
		t.Fatalf("kept %d running, oldest end %v", running, oldestEnd)
	}
}

func TestGPUNodePublishesPodPeaks(t *testing.T) {
	gpus := nvidiatest.DGXA100()
	procRoot := t.TempDir()
	h := start(t, "agent-peaks", gpus, procRoot)
	ns := apitest.MakeNamespace("team-peaks").Obj()
	if err := env.Client.Create(h.ctx, ns); err != nil {
		t.Fatal(err)
	}
	// A whole-GPU pod of the Job "finetune" on GPUs 5 and 6.
	assign := tesserav1.GPUAssignment{Node: h.node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus.UUID(5), gpus.UUID(6)}}}}
	pod := apitest.MakePod("finetune-0", ns.Name).NodeName(h.node).Assignment(assign).ControlledBy("Job", "finetune").Obj()
	if err := env.Client.Create(h.ctx, pod); err != nil {
		t.Fatal(err)
	}
	writeCgroup(t, procRoot, 5151, "0::/kubepods.slice/kubepods-pod"+strings.ReplaceAll(string(pod.UID), "-", "_")+".slice/cri-containerd-"+strings.Repeat("cd", 32)+".scope\n")
	gpus.SetUsage(5, nvidiatest.Usage{UtilizationPercent: 90, MemoryUsedMiB: 30000, Processes: map[uint32]uint64{5151: 30000}})
	entry := func(want string) func() string {
		return func() string {
			gn := h.gpuNode(t)
			if gn == nil || len(gn.Status.Pods) != 1 {
				return fmt.Sprintf("GPUNode pods: %v", gn)
			}
			e := gn.Status.Pods[0]
			if got := fmt.Sprintf("%s/%s %s peak=%d first=%d gpu=%d limit=%d ended=%v", e.Namespace, e.Name, e.Workload, e.PeakMiB, e.FirstMiB,
				e.GPUMemoryMiB, e.LimitMiB, e.EndedTime != nil); got != want {
				return got
			}
			return ""
		}
	}
	eventually(t, "the running pod's peak", entry("team-peaks/finetune-0 Job/finetune peak=30000 first=30000 gpu=40960 limit=0 ended=false"))
	gpus.SetUsage(5, nvidiatest.Usage{UtilizationPercent: 90, MemoryUsedMiB: 31000, Processes: map[uint32]uint64{5151: 31000}})
	eventually(t, "the grown peak", entry("team-peaks/finetune-0 Job/finetune peak=31000 first=30000 gpu=40960 limit=0 ended=false"))
	pod.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(h.ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ended pod's final peak", entry("team-peaks/finetune-0 Job/finetune peak=31000 first=30000 gpu=40960 limit=0 ended=true"))
}

func TestUsageSeededFromAPreviousAgent(t *testing.T) {
	r := newUsageRig(t)
	var before usageHistory
	p := r.pod("serve", 20480, []int{4}, 300)
	r.use(4, 300, 9000)
	r.sample(&before, p)
	// The agent restarts while the pod uses less: the peak so far is kept.
	var after usageHistory
	after.seed(before.entries())
	r.use(4, 300, 5000)
	if e := r.sample(&after, p)[p.UID]; e.PeakMiB != 9000 || e.FirstMiB != 9000 || e.LimitMiB != 20480 || e.EndedTime != nil {
		t.Fatalf("entry after a restart %+v", e)
	}
	r.gpus.SetUsage(4, nvidiatest.Usage{})
	if e := r.sample(&after)[p.UID]; e.PeakMiB != 9000 || e.EndedTime == nil {
		t.Fatalf("ended entry after a restart %+v", e)
	}
}
