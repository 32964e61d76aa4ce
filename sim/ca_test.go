package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// caNodes is n nodes of 8 GPUs, 64 CPUs and 512 GiB, named a, b, c ...
func caNodes(n int) []*framework.Node {
	var specs []trace.NodeSpec
	for i := range n {
		specs = append(specs, trace.NodeSpec{Name: string(rune('a' + i)), MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "A100-80GB", GPUMemoryMiB: 81920})
	}
	return buildNodes(specs)
}

var taskSeq int

// put places a task asking gpus whole GPUs and cpu milli-CPU on n; it may be evicted.
func put(n *framework.Node, gpus int, cpu int64) *framework.Task {
	taskSeq++
	t := &framework.Task{Name: fmt.Sprintf("t%d", taskSeq), UID: fmt.Sprintf("t%d", taskSeq), Preemptible: true,
		Request: framework.Resources{MilliCPU: cpu, Pods: 1}, GPU: framework.GPURequest{Count: gpus}}
	var set framework.GPUSet
	k := 0
	for g := range n.GPUs {
		if k < gpus && n.GPUs[g].UsedMilli == 0 {
			set |= 1 << g
			k++
		}
	}
	n.Place(t, set, framework.MilliPerGPU)
	return t
}

// noFleet is a fleet that never grew.
func noFleet() *fleet { return &fleet{lastGrow: -1} }

func TestRequestUtilizationOfAGPUNodeIsItsGPUs(t *testing.T) {
	n := caNodes(1)[0]
	put(n, 2, 48000) // a quarter of the GPUs, three quarters of the CPUs
	if got := requestUtilization(n); got != 0.25 {
		t.Errorf("utilization %g, want 0.25 (GPU only)", got)
	}
	cpu := buildNodes([]trace.NodeSpec{{Name: "cpu", MilliCPU: 64000, MemoryMiB: 512 << 10}})[0]
	put(cpu, 0, 16000)
	if got := requestUtilization(cpu); got != 0.25 {
		t.Errorf("utilization of a CPU node %g, want 0.25 (CPU)", got)
	}
}

func TestFirstFitPlacesPodByPod(t *testing.T) {
	nodes := caNodes(3)
	put(nodes[0], 6, 1000)
	put(nodes[2], 8, 1000) // c is full
	put(nodes[1], 2, 1000)
	put(nodes[1], 4, 1000)
	// b's 2 + 4 GPUs do not fit the 2 GPUs left on a.
	ff := newFirstFit(nodes)
	if ff.move("b") {
		t.Error("b's 2 + 4 GPUs fit the 2 GPUs left on a")
	}
	if ff.nodes[0].whole != 2 || ff.nodes[1].gone {
		t.Errorf("a failed move changed the nodes: %+v", ff.nodes[:2])
	}
	// a's 6 GPUs do not fit the 2 GPUs left on b either.
	if ff.fits("a") {
		t.Error("a's 6 GPUs fit the 2 GPUs left on b")
	}
	// Slices are summed over the node: four half-GPU slices fill a's two free GPUs, a
	// fifth does not fit.
	half := &framework.Task{GPU: framework.GPURequest{MemoryMiB: 40960}}
	ff = newFirstFit(nodes[:1])
	for i := range 4 {
		if ff.place(half) != 0 {
			t.Fatalf("half-GPU slice %d does not fit a's two free GPUs", i)
		}
	}
	if ff.place(half) >= 0 {
		t.Errorf("a fifth half-GPU slice fits: %+v", ff.nodes[0])
	}
	// Which GPU a slice sits on is not seen: with a 0.3 slice on each of eight GPUs, no
	// GPU is free, yet 4 whole GPUs "fit" in the 5.6 GPUs of share left.
	ff = newFirstFit(caNodes(1))
	for range 8 {
		ff.place(&framework.Task{GPU: framework.GPURequest{MemoryMiB: 24576}})
	}
	if ff.place(&framework.Task{GPU: framework.GPURequest{Count: 4}}) != 0 {
		t.Errorf("4 whole GPUs do not fit the node's totals: %+v", ff.nodes[0])
	}
}

func TestFirstFitMoveKeepsPodsWhereTheyWent(t *testing.T) {
	nodes := caNodes(3)
	put(nodes[0], 2, 1000)
	put(nodes[1], 4, 1000)
	put(nodes[2], 4, 1000)
	ff := newFirstFit(nodes)
	if !ff.fits("a") || ff.nodes[1].whole != 4 || ff.nodes[0].gone {
		t.Fatalf("fits changed the nodes: %+v", ff.nodes)
	}
	if !ff.move("a") || ff.nodes[1].whole != 2 || len(ff.nodes[1].tasks) != 2 {
		t.Fatalf("a's pod did not move to b: %+v", ff.nodes)
	}
	// b now carries a's pod too: its 6 GPUs do not fit the 4 left on c, and c's 4 do
	// not fit the 2 left on b.
	if ff.move("b") || ff.move("c") {
		t.Errorf("a's pod did not stay on b: %+v", ff.nodes)
	}
}

// A node under half its GPUs used for 10 minutes whose pods fit elsewhere goes; not
// before, not when its pods fit nowhere, and not within 10 minutes of a scale-up.
func TestCARemovesUnneededNodes(t *testing.T) {
	nodes := caNodes(3)
	put(nodes[0], 6, 1000) // busy
	put(nodes[1], 2, 1000) // a quarter used; its pod fits on a
	snap := &framework.Snapshot{Nodes: nodes}
	c, f := newCALike(), noFleet()
	if got := c.pick(snap, 0, f); len(got) != 0 {
		t.Fatalf("removed %v at once", got)
	}
	if got := c.pick(snap, caUnneededAfter-1, f); len(got) != 0 {
		t.Fatalf("removed %v before 10 minutes", got)
	}
	f.lastGrow = 100
	if got := c.pick(snap, caUnneededAfter, f); len(got) != 0 {
		t.Fatalf("removed %v within 10 minutes of a node joining", got)
	}
	// A node asked for at 100 that boots for 5 minutes: the delay runs from the ask.
	f.lastGrow, f.bootDelay, f.booting = -1, 300, []bootingNode{{ready: 400}}
	if got := c.pick(snap, 100+caDelayAfterAdd-1, f); len(got) != 0 {
		t.Fatalf("removed %v within 10 minutes of a scale-up", got)
	}
	if got := c.pick(snap, 100+caDelayAfterAdd, f); !slices.Equal(got, []string{"c", "b"}) {
		t.Fatalf("removed %v 10 minutes after a scale-up, want c then b", got)
	}
	// With a full, b's pod would fit only on c, which goes: b stays, and is not
	// simulated again for 5 minutes.
	put(nodes[0], 2, 1000)
	c, f = newCALike(), noFleet()
	c.pick(snap, 0, f)
	if until := c.unremovable["b"]; until != caUnremovableRecheck {
		t.Errorf("b is unremovable until %d, want %d", until, caUnremovableRecheck)
	}
	if got := c.pick(snap, caUnneededAfter, f); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("removed %v, want c only", got)
	}
}

// CA judges a GPU node by its GPUs only: at a quarter of its GPUs and three quarters
// of its CPUs, it is unneeded.
func TestCAGPUNodeAtAQuarterOfItsGPUsIsUnneeded(t *testing.T) {
	nodes := caNodes(2)
	put(nodes[0], 2, 48000)
	put(nodes[1], 4, 1000)
	snap := &framework.Snapshot{Nodes: nodes}
	c, f := newCALike(), noFleet()
	c.pick(snap, 0, f)
	if _, ok := c.since["a"]; !ok {
		t.Fatalf("a is not unneeded: %v", c.since)
	}
	if got := c.pick(snap, caUnneededAfter, f); !slices.Equal(got, []string{"a"}) {
		t.Errorf("removed %v, want a", got)
	}
}

// A node running a pod that may not be evicted is never removed.
func TestCANeverRemovesANodeWithAProtectedPod(t *testing.T) {
	nodes := caNodes(2)
	put(nodes[0], 1, 1000).Preemptible = false
	snap := &framework.Snapshot{Nodes: nodes}
	c, f := newCALike(), noFleet()
	for now := int64(0); now <= 4*caUnneededAfter; now += 60 {
		for _, name := range c.pick(snap, now, f) {
			if name == "a" {
				t.Fatalf("removed a, which runs a protected pod, at %d", now)
			}
		}
	}
}

// Empty nodes go 10 at once; nodes with pods one at a time.
func TestCARemovesTenEmptyNodesAndOneDrainedAtOnce(t *testing.T) {
	nodes := caNodes(15)
	put(nodes[0], 8, 1000) // a is full
	put(nodes[1], 1, 1000)
	put(nodes[2], 1, 1000)
	snap := &framework.Snapshot{Nodes: nodes}
	c, f := newCALike(), noFleet()
	c.pick(snap, 0, f)
	got := c.pick(snap, caUnneededAfter, f)
	if len(got) != caMaxEmptyParallel+caMaxDrainParallel {
		t.Fatalf("removed %v, want %d empty and %d with pods", got, caMaxEmptyParallel, caMaxDrainParallel)
	}
	if want := []string{"d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "b"}; !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
}
