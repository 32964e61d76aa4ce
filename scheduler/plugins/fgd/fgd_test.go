package fgd_test

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/fgd"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// workload is half one-GPU pods, half half-GPU shares.
var workload = framework.Workload{
	{GPU: framework.GPURequest{Count: 1}, P: 0.5},
	{GPU: framework.GPURequest{Milli: 500}, P: 0.5},
}

func node(usedMilli ...int64) *framework.Node {
	return testutil.MakeNode("n").GPUs(2, "A100-80GB").UsedGPUs(usedMilli...).Obj()
}

func TestPlaceGPUs(t *testing.T) {
	tests := []struct {
		name     string
		task     *framework.Task
		node     *framework.Node
		wantGPUs []int
		want     float64
	}{
		// F = 0 before; a 600 share leaves 400 on one GPU, fragmented for both shapes:
		// F' = 400, floor(sigmoid(-0.4) x 100) = floor(40.13).
		{"share on an idle node", testutil.MakeJob("j").Share(600).Obj().Tasks[0], node(), []int{0}, 40},
		// GPU 0 has 400 free (F = 400). On GPU 0: F' = 100, sigmoid(0.3) -> 57. On GPU 1:
		// F' = 0.5 x 1100 + 0.5 x 400 = 750, sigmoid(-0.35) -> 41. GPU 0 wins.
		{"share fills the fragment", testutil.MakeJob("j").Share(300).Obj().Tasks[0], node(600), []int{0}, 57},
		// Fragmentation does not change: sigmoid(0) -> 50.
		{"whole GPU", testutil.MakeJob("j").GPU(1).Obj().Tasks[0], node(), []int{0}, 50},
		{"cpu only", testutil.MakeJob("j").CPU(4000).Obj().Tasks[0], node(), nil, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fgd.New()
			f.OnSessionOpen(&framework.Snapshot{Workload: workload})
			gpus, score, ok := f.PlaceGPUs(tc.task, tc.node)
			if !ok || score != tc.want || !slices.Equal(gpus.Indices(), append([]int{}, tc.wantGPUs...)) {
				t.Fatalf("got %v %v %v, want %v %v", gpus.Indices(), score, ok, tc.wantGPUs, tc.want)
			}
			// Scoring must leave the node as it was.
			if tc.node.FreeGPUMilli() != 2000-sum(tc.node) || tc.node.Used.MilliCPU != 0 {
				t.Fatal("node changed by scoring")
			}
		})
	}
	if _, _, ok := fgd.New().PlaceGPUs(testutil.MakeJob("j").Share(500).Obj().Tasks[0], node(600, 600)); ok {
		t.Fatal("500 share placed on GPUs with 400 free")
	}
}

func sum(n *framework.Node) int64 {
	var s int64
	for _, g := range n.GPUs {
		s += g.UsedMilli
	}
	return s
}
