package snapshot

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// buildOne builds a snapshot from the objects added by add.
func buildOne(t *testing.T, opts Options, add func(b *Builder)) (*framework.Snapshot, []error) {
	t.Helper()
	b := NewBuilder(epoch, opts)
	add(b)
	return b.Build()
}

// wantErrs checks that the errors are exactly those containing the given substrings, in order.
func wantErrs(t *testing.T, errs []error, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("errors = %v, want %d matching %q", errs, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
		}
	}
}

func TestNodeFromAllocatable(t *testing.T) {
	snap, errs := buildOne(t, Options{}, func(b *Builder) {
		b.AddNode(testNode("n1").GPUs(8, "A100-80GB", 81920).Allocatable("rdma/hca", "4").Label(tesserav1.LabelRack, "r1").Taint("dedicated", corev1.TaintEffectNoSchedule).Unschedulable().Obj(), nil)
	})
	wantErrs(t, errs)
	n := snap.Nodes[0]
	if n.Name != "n1" || n.GPUModel != "A100-80GB" || !n.Unschedulable || len(n.Taints) != 1 || n.Labels[tesserav1.LabelRack] != "r1" || n.Domains != nil {
		t.Errorf("node = %+v", n)
	}
	want := framework.Resources{MilliCPU: 64000, Memory: 512 << 30, Pods: 110, GPU: 8000, Scalar: map[corev1.ResourceName]int64{"rdma/hca": 4}}
	if n.Allocatable.String() != want.String() || n.Allocatable.Pods != 110 {
		t.Errorf("allocatable = %v, want %v", n.Allocatable, want)
	}
	if len(n.GPUs) != 8 || n.FreeWholeGPUs() != 8 {
		t.Fatalf("GPUs = %d, free %d", len(n.GPUs), n.FreeWholeGPUs())
	}
	for i, g := range n.GPUs {
		if g.Index != i || g.UUID != "GPU-n1-"+string(rune('0'+i)) || g.Model != "A100-80GB" || g.MemoryMiB != 81920 || !g.Healthy {
			t.Errorf("GPU %d = %+v", i, g)
		}
	}
	if snap.Total.GPU != 0 {
		t.Errorf("unschedulable node counted in total: %v", snap.Total)
	}
}

func TestNodeGPUSources(t *testing.T) {
	cases := []struct {
		name      string
		node      *corev1.Node
		gpuNode   *tesserav1.GPUNode
		wantGPUs  int
		wantMem   int64
		wantModel string
		wantErr   string
	}{
		{name: "cpu only", node: testNode("n").Obj()},
		{name: "nvidia device plugin", node: testNode("n").Allocatable(tesserav1.ResourceNvidiaGPU, "4").Label(tesserav1.LabelGPUModel, "T4").Obj(), wantGPUs: 4, wantModel: "T4"},
		{name: "feature discovery labels", node: testNode("n").Allocatable(tesserav1.ResourceNvidiaGPU, "2").Label("nvidia.com/gpu.product", "Tesla-V100").Label("nvidia.com/gpu.memory", "32510").Obj(),
			wantGPUs: 2, wantMem: 32510, wantModel: "Tesla-V100"},
		{name: "shares with a gpu-count label", node: testNode("n").GPUs(40, "A10", 4*23028/40).GPUCount(4).Obj(), wantGPUs: 4, wantMem: 23020, wantModel: "A10"},
		{name: "GPUNode wins", node: testNode("n").GPUs(8, "A100-80GB", 81920).Obj(), gpuNode: gpuNode("n", 4), wantGPUs: 4, wantMem: 81559, wantModel: "A100-80GB"},
		{name: "GPUNode without devices", node: testNode("n").GPUs(2, "L4", 23034).Obj(), gpuNode: &tesserav1.GPUNode{}, wantGPUs: 2, wantMem: 23034, wantModel: "L4"},
		{name: "model from GPUNode", node: testNode("n").Obj(), gpuNode: gpuNode("n", 2), wantGPUs: 2, wantMem: 81559, wantModel: "NVIDIA H100 80GB HBM3"},
		{name: "fractional GPUs", node: testNode("n").Allocatable(tesserav1.ResourceGPU, "1500m").Obj(), wantErr: "Node n: status.allocatable[tessera.dev/gpu]: 1500m is not a whole number"},
		{name: "too many GPUs", node: testNode("n").Allocatable(tesserav1.ResourceGPU, "65").Obj(), wantErr: "at most 64"},
		{name: "bad count label", node: testNode("n").Label(tesserav1.LabelGPUCount, "x").Obj(), wantErr: "metadata.labels[tessera.dev/gpu-count]"},
		{name: "negative cpu", node: testNode("n").Allocatable(corev1.ResourceCPU, "-1").Obj(), wantErr: "status.allocatable[cpu]: is negative"},
		{name: "GPUNode of another node", node: testNode("n").Obj(), gpuNode: gpuNode("m", 2), wantErr: `GPUNode m: metadata.name: differs from its node "n"`},
		{name: "GPUNode duplicate uuid", node: testNode("n").Obj(), gpuNode: func() *tesserav1.GPUNode {
			g := gpuNode("n", 2)
			g.Status.Devices[1].UUID = g.Status.Devices[0].UUID
			return g
		}(), wantErr: "status.devices[index=1].uuid: GPU-n-1 is also the uuid of device index 0"},
		{name: "GPUNode duplicate index", node: testNode("n").Obj(), gpuNode: func() *tesserav1.GPUNode {
			g := gpuNode("n", 2)
			g.Status.Devices[1].Index = 1
			return g
		}(), wantErr: "index 1 is listed twice"},
		{name: "GPUNode without memory", node: testNode("n").Obj(), gpuNode: func() *tesserav1.GPUNode {
			g := gpuNode("n", 2)
			g.Status.Devices[0].MemoryMiB = 0
			return g
		}(), wantErr: "status.devices[index=1].memoryMiB: must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, errs := buildOne(t, Options{}, func(b *Builder) { b.AddNode(tc.node, tc.gpuNode) })
			if tc.wantErr != "" {
				wantErrs(t, errs, tc.wantErr)
				if len(snap.Nodes) != 0 {
					t.Errorf("faulty node kept")
				}
				return
			}
			wantErrs(t, errs)
			n := snap.Nodes[0]
			if len(n.GPUs) != tc.wantGPUs || n.Allocatable.GPU != int64(tc.wantGPUs)*1000 || n.GPUModel != tc.wantModel {
				t.Fatalf("GPUs = %d, allocatable %d, model %q", len(n.GPUs), n.Allocatable.GPU, n.GPUModel)
			}
			for _, g := range n.GPUs {
				if g.MemoryMiB != tc.wantMem {
					t.Errorf("GPU memory = %d, want %d", g.MemoryMiB, tc.wantMem)
				}
			}
		})
	}
}

func TestNodeFromGPUNodeDevices(t *testing.T) {
	g := gpuNode("n", 8)
	g.Status.Devices[0].Healthy = false // index 7, listed first
	snap, errs := buildOne(t, Options{}, func(b *Builder) { b.AddNode(testNode("n").Obj(), g) })
	wantErrs(t, errs)
	n := snap.Nodes[0]
	for i, gpu := range n.GPUs {
		want := framework.GPU{Index: i, UUID: uuid("n", i), Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, Island: i / 4, NUMA: i / 4, Healthy: i != 7}
		if gpu != want {
			t.Errorf("GPU %d = %+v, want %+v", i, gpu, want)
		}
	}
	if n.FreeWholeGPUs() != 7 || snap.MaxGPUMemoryMiB != 81559 {
		t.Errorf("free whole = %d, max memory %d", n.FreeWholeGPUs(), snap.MaxGPUMemoryMiB)
	}
}

func TestNodeDefaults(t *testing.T) {
	n := testNode("n").Obj()
	n.Status.Capacity, n.Status.Allocatable = n.Status.Allocatable, nil
	delete(n.Status.Capacity, corev1.ResourcePods)
	snap, errs := buildOne(t, Options{}, func(b *Builder) { b.AddNode(n, nil); b.AddNode(nil, nil) })
	wantErrs(t, errs)
	if a := snap.Nodes[0].Allocatable; a.MilliCPU != 64000 || a.Pods != defaultMaxPods {
		t.Errorf("allocatable from capacity = %v, pods %d", a, a.Pods)
	}
}

func TestNodesSortedByName(t *testing.T) {
	snap, _ := buildOne(t, Options{}, func(b *Builder) {
		for _, name := range []string{"c", "a", "b"} {
			b.AddNode(testNode(name).Obj(), nil)
		}
		b.AddNode(testNode("a").GPUs(1, "T4", 15109).Obj(), nil) // replaces a
	})
	var names []string
	for i, n := range snap.Nodes {
		names = append(names, n.Name)
		if n.Index != i {
			t.Errorf("node %s index %d, want %d", n.Name, n.Index, i)
		}
	}
	if strings.Join(names, ",") != "a,b,c" || len(snap.Nodes[0].GPUs) != 1 {
		t.Errorf("nodes = %v (a has %d GPUs)", names, len(snap.Nodes[0].GPUs))
	}
}
