package gpufit_test

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gpufit"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func node(gpus int, usedMilli ...int64) *framework.Node {
	return testutil.MakeNode("n").GPUs(gpus, "A100-80GB").UsedGPUs(usedMilli...).Obj()
}

func TestDoesNotFit(t *testing.T) {
	if _, _, ok := gpufit.New().PlaceGPUs(testutil.MakeJob("j").GPU(2).Obj().Tasks[0], node(2, 100)); ok {
		t.Fatal("2 whole GPUs placed where one is shared")
	}
}

// TestPacksWithoutWorkload: without a typical workload the fuller node scores higher.
func TestPacksWithoutWorkload(t *testing.T) {
	g := gpufit.New()
	g.OnSessionOpen(&framework.Snapshot{})
	task := testutil.MakeJob("j").GPU(1).Obj().Tasks[0]
	_, idle, ok1 := g.PlaceGPUs(task, node(8))
	_, half, ok2 := g.PlaceGPUs(task, node(8, 1000, 1000, 1000, 1000))
	if !ok1 || !ok2 || half <= idle {
		t.Fatalf("half-used node %v, idle node %v", half, idle)
	}
}

// TestPrefersLessFragmentation: with a workload of whole-GPU pods, a share goes to the
// GPU that is already shared rather than breaking a whole one.
func TestPrefersLessFragmentation(t *testing.T) {
	g := gpufit.New()
	g.OnSessionOpen(&framework.Snapshot{Workload: framework.Workload{{GPU: framework.GPURequest{Count: 1}, P: 1}}})
	n := node(4, 0, 0, 500)
	gpus, _, ok := g.PlaceGPUs(testutil.MakeJob("j").Share(400).Obj().Tasks[0], n)
	if !ok || !slices.Equal(gpus.Indices(), []int{2}) {
		t.Fatalf("share went to %v", gpus.Indices())
	}
}

// TestKeepsScarceModels: as many pods may use only T4s as only V100s, but the cluster
// has four times fewer T4s, so a pod that may use any model goes to the V100 node.
func TestKeepsScarceModels(t *testing.T) {
	g := gpufit.New()
	t4 := testutil.MakeNode("t4").GPUs(2, "T4").Obj()
	v100 := testutil.MakeNode("v100").GPUs(8, "V100M32").Obj()
	v100.Index = 1
	g.OnSessionOpen(&framework.Snapshot{Nodes: []*framework.Node{t4, v100}, Workload: framework.Workload{
		{GPU: framework.GPURequest{Count: 1}, P: 0.6},
		{GPU: framework.GPURequest{Count: 1, Models: []string{"T4"}}, P: 0.2},
		{GPU: framework.GPURequest{Count: 1, Models: []string{"V100M32"}}, P: 0.2},
	}})
	task := testutil.MakeJob("j").GPU(1).Obj().Tasks[0]
	_, onT4, ok1 := g.PlaceGPUs(task, t4)
	_, onV100, ok2 := g.PlaceGPUs(task, v100)
	if !ok1 || !ok2 || onV100 <= onT4 {
		t.Fatalf("score on the T4 node %v, on the V100 node %v", onT4, onV100)
	}
}
