package sim

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// caNodes is n nodes of 8 GPUs, 64 CPUs and 512 GiB.
func caNodes(n int) []*framework.Node {
	var specs []trace.NodeSpec
	for i := range n {
		specs = append(specs, trace.NodeSpec{Name: string(rune('a' + i)), MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "A100-80GB", GPUMemoryMiB: 81920})
	}
	return buildNodes(specs)
}

// put places a task asking gpus whole GPUs and cpu milli-CPU on n.
func put(n *framework.Node, gpus int, cpu int64) *framework.Task {
	t := &framework.Task{Name: "t", Request: framework.Resources{MilliCPU: cpu, Pods: 1}, GPU: framework.GPURequest{Count: gpus}}
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

func TestRequestUtilizationIsTheLargestShare(t *testing.T) {
	n := caNodes(1)[0]
	put(n, 2, 48000) // a quarter of the GPUs, three quarters of the CPUs
	if got := requestUtilization(n); got != 0.75 {
		t.Errorf("utilization %g, want 0.75 (CPU)", got)
	}
}

func TestFirstFitPlacesPodByPod(t *testing.T) {
	nodes := caNodes(2)
	put(nodes[0], 6, 1000)
	moving := []*framework.Task{
		{Request: framework.Resources{MilliCPU: 1000}, GPU: framework.GPURequest{Count: 2}},
		{Request: framework.Resources{MilliCPU: 1000}, GPU: framework.GPURequest{Count: 4}},
	}
	if !newFirstFit(nodes).without("a").placeAll(moving) {
		t.Error("2 + 4 GPUs do not fit an empty 8-GPU node")
	}
	if newFirstFit(nodes).without("b").placeAll(moving) {
		t.Error("2 + 4 GPUs fit the 2 GPUs left on node a")
	}
	// Slices are summed over the node: four half-GPU slices fill a's two free GPUs, a
	// fifth does not fit.
	half := &framework.Task{GPU: framework.GPURequest{MemoryMiB: 40960}}
	ff := newFirstFit(nodes).without("b")
	if !ff.placeAll([]*framework.Task{half, half, half, half}) || ff.place(half) {
		t.Errorf("four half-GPU slices on two free GPUs: %+v", ff[0])
	}
	// Which GPU a slice sits on is not seen: with a 0.3 slice on each of b's GPUs, no
	// GPU is free, yet 4 whole GPUs "fit" in the 5.6 GPUs of share left.
	ff = newFirstFit(nodes).without("a")
	for range 8 {
		ff.place(&framework.Task{GPU: framework.GPURequest{MemoryMiB: 24576}})
	}
	if !ff.place(&framework.Task{GPU: framework.GPURequest{Count: 4}}) {
		t.Errorf("4 whole GPUs do not fit b's totals: %+v", ff[0])
	}
}

// A node under half used for 10 minutes whose pods fit elsewhere goes; not before, not
// when its pods fit nowhere, and not within 10 minutes of a node joining.
func TestCALikeRemovesUnneededNodes(t *testing.T) {
	nodes := caNodes(3)
	put(nodes[0], 6, 1000) // busy
	put(nodes[1], 2, 1000) // a quarter used; its pod fits on c
	snap := &framework.Snapshot{Nodes: nodes}
	c, f := newCALike(), &fleet{lastGrow: -1, lastShrink: -1}
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
	f.lastGrow = -1
	// Empty c goes first, then b, whose pod fits on a (2 GPUs left).
	if got := c.pick(snap, caUnneededAfter, f); !slices.Equal(got, []string{"c", "b"}) {
		t.Fatalf("removed %v, want c then b", got)
	}
	// With a full, b's pod would fit only on c, which goes: b stays.
	put(nodes[0], 2, 1000)
	c = newCALike()
	c.pick(snap, 0, f)
	if got := c.pick(snap, caUnneededAfter, f); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("removed %v, want c only", got)
	}
}
