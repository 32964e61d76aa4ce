package sim

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/trace"
)

func whole(n int) *framework.Task {
	return &framework.Task{Request: framework.Resources{MilliCPU: 1000, Pods: 1}, GPU: framework.GPURequest{Count: n}}
}

func slice(mib int64) *framework.Task {
	return &framework.Task{Request: framework.Resources{MilliCPU: 1000, Pods: 1}, GPU: framework.GPURequest{MemoryMiB: mib}}
}

// twoGPUNodes is n nodes of 2 A100-80GB GPUs, named a, b, c ...
func twoGPUNodes(n int) []*framework.Node {
	var specs []trace.NodeSpec
	for i := range n {
		specs = append(specs, trace.NodeSpec{Name: string(rune('a' + i)), MilliCPU: 32000, MemoryMiB: 256 << 10, GPUs: 2, Model: "A100-80GB", GPUMemoryMiB: 81920})
	}
	return buildNodes(specs)
}

func TestRepackNodesFirstFitDecreasing(t *testing.T) {
	nodes := caNodes(4)
	// 2 + 4 + 2 + 4 + 4 GPUs: 4 + 4 on one node, 4 + 2 + 2 on another.
	tasks := []*framework.Task{whole(2), whole(4), whole(2), whole(4), whole(4)}
	if got := repackNodes(nodes, tasks); got != 2 {
		t.Errorf("%d nodes, want 2", got)
	}
	if got := repackNodes(nodes, nil); got != 0 {
		t.Errorf("%d nodes for no tasks, want 0", got)
	}
	// CPU counts too: four tasks of 40 CPUs need four 64-CPU nodes.
	var cpu []*framework.Task
	for range 4 {
		cpu = append(cpu, &framework.Task{Request: framework.Resources{MilliCPU: 40000, Pods: 1}})
	}
	if got := repackNodes(nodes, cpu); got != 4 {
		t.Errorf("%d nodes for four 40-CPU tasks, want 4", got)
	}
}

// Slices share a GPU: eight half-GPU slices and four whole GPUs fill one 8-GPU node.
func TestRepackNodesSharesGPUsBetweenSlices(t *testing.T) {
	tasks := []*framework.Task{whole(4)}
	for range 8 {
		tasks = append(tasks, slice(40960))
	}
	if got := repackNodes(caNodes(3), tasks); got != 1 {
		t.Errorf("%d nodes, want 1", got)
	}
	// A ninth half slice needs a GPU of its own, on a second node.
	if got := repackNodes(caNodes(3), append(tasks, slice(40960))); got != 2 {
		t.Errorf("%d nodes with a ninth slice, want 2", got)
	}
}

// GPUs are seen one by one: slices that do not fit one GPU together take a GPU each,
// and a whole GPU goes only on a GPU with nothing on it.
func TestRepackNodesSeesGPUsOneByOne(t *testing.T) {
	// Three 0.6 slices: 1.8 GPUs of share, which two GPUs hold in total, yet each
	// needs a GPU of its own.
	if got := repackNodes(twoGPUNodes(3), []*framework.Task{slice(49152), slice(49152), slice(49152)}); got != 2 {
		t.Errorf("%d nodes for three 0.6 slices on 2-GPU nodes, want 2", got)
	}
	// The whole GPU goes first, on GPU 0 of a; two 0.4 slices share GPU 1, and the
	// third goes to b.
	tasks := []*framework.Task{slice(32768), slice(32768), slice(32768), whole(1)}
	if got := repackNodes(twoGPUNodes(3), tasks); got != 2 {
		t.Errorf("%d nodes, want 2", got)
	}
}

// With mixed shapes the biggest nodes are used first.
func TestRepackNodesUsesBigNodesFirst(t *testing.T) {
	nodes := append(twoGPUNodes(4), caNodes(1)...) // four 2-GPU nodes, then an 8-GPU one
	tasks := []*framework.Task{whole(2), whole(2), whole(2), whole(2)}
	if got := repackNodes(nodes, tasks); got != 1 {
		t.Errorf("%d nodes, want the 8-GPU node alone", got)
	}
	// A task no node holds counts one extra node.
	if got := repackNodes(nodes, append(tasks, whole(16))); got != 2 {
		t.Errorf("%d nodes with a 16-GPU task, want 2", got)
	}
	h100 := whole(1)
	h100.GPU.Models = []string{"H100"}
	if got := repackNodes(nodes, []*framework.Task{h100}); got != 1 {
		t.Errorf("%d nodes for a task of a model no node has, want 1 (extra)", got)
	}
}

// Tasks stay where they started: when the first node frees up, the second keeps its
// task, and a new task goes to the first.
func TestNoMigrationNeverMovesATask(t *testing.T) {
	p := newNoMigration(caNodes(3))
	a, b, c := whole(6), whole(6), whole(2)
	p.start(a)
	p.start(b)
	if got := p.used(); got != 2 {
		t.Fatalf("%d nodes for 6 + 6 GPUs, want 2", got)
	}
	p.end(a)
	if got := p.used(); got != 1 {
		t.Fatalf("%d nodes after the first task ended, want 1", got)
	}
	p.start(c) // the lowest-indexed node where it fits: the first, now empty
	if got, packed := p.used(), repackNodes(caNodes(3), []*framework.Task{b, c}); got != 2 || packed != 1 {
		t.Errorf("%d nodes without migration (want 2), %d re-packed (want 1)", got, packed)
	}
	p.start(c) // already held: nothing changes
	p.end(whole(1))
	if got := p.used(); got != 2 {
		t.Errorf("%d nodes after a repeated start and an unknown end, want 2", got)
	}
	p.end(b)
	p.end(c)
	if got := p.used(); got != 0 {
		t.Errorf("%d nodes after every task ended, want 0", got)
	}
}

func TestNoMigrationSlicesShareAGPU(t *testing.T) {
	p := newNoMigration(twoGPUNodes(2))
	s1, s2, w := slice(40960), slice(40960), whole(1)
	p.start(s1)
	p.start(s2) // the same GPU as s1
	p.start(w)  // the other GPU of a
	if got := p.used(); got != 1 {
		t.Fatalf("%d nodes for two half slices and a whole GPU on 2 GPUs, want 1", got)
	}
	if p.at[s1].gpus != p.at[s2].gpus || p.at[w].gpus == p.at[s1].gpus || p.at[w].node != 0 {
		t.Errorf("placed %+v %+v %+v", p.at[s1], p.at[s2], p.at[w])
	}
	// With s2 gone, GPU 0 still holds s1: a whole GPU goes to the next node.
	p.end(s2)
	w2 := whole(1)
	p.start(w2)
	if got := p.at[w2].node; got != 1 {
		t.Errorf("a whole GPU went to node %d, onto a GPU holding a slice", got)
	}
	// A task that fits nowhere counts one node until it ends.
	big := whole(4)
	p.start(big)
	if got := p.used(); got != 3 {
		t.Errorf("%d nodes with a 4-GPU task on 2-GPU nodes, want 3", got)
	}
	p.end(big)
	if got := p.used(); got != 2 {
		t.Errorf("%d nodes after it ended, want 2", got)
	}
}
