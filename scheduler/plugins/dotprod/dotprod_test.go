package dotprod_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/dotprod"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func node(usedCPU int64, usedMilli ...int64) *framework.Node {
	return testutil.MakeNode("n").GPUs(8, "A100-80GB").UsedCPU(usedCPU).UsedGPUs(usedMilli...).Obj()
}

func TestPlaceGPUs(t *testing.T) {
	tests := []testutil.PlacementCase{
		// dot = (96000/128000 x 8000/128000 + 4000/8000 x 2000/8000) / 2 = 0.0859375 -> 91.4
		testutil.Placement("whole GPUs", testutil.MakeJob("j").CPU(8000).GPU(2).Obj().Tasks[0], node(32000, 1000, 1000, 1000, 1000), []int{4, 5}, 91, true),
		// dot = (1 x 1000/128000 + 7000/8000 x 500/8000) / 2 = 0.03125 -> 96.875
		testutil.Placement("share", testutil.MakeJob("j").CPU(1000).Share(500).Obj().Tasks[0], node(0, 600, 400), []int{1}, 96, true),
		// dot = (1 x 64000/128000 + 1 x 0) / 2 = 0.25
		testutil.Placement("cpu only", testutil.MakeJob("j").CPU(64000).Obj().Tasks[0], node(0), nil, 75, true),
		testutil.Placement("does not fit", testutil.MakeJob("j").Share(500).Obj().Tasks[0], node(0, 600, 600, 600, 600, 600, 600, 600, 600), nil, 0, false),
	}
	testutil.CheckPlacements(t, dotprod.DotProduct{}, tests)
}

// TestPrefersComplementaryNode: a CPU-heavy pod goes where CPU is scarce and GPUs are
// free rather than where both are free, which keeps aligned capacity for later pods.
func TestPrefersComplementaryNode(t *testing.T) {
	task := testutil.MakeJob("j").CPU(32000).Obj().Tasks[0]
	_, fresh, _ := dotprod.DotProduct{}.PlaceGPUs(task, node(0))
	_, cpuBusy, _ := dotprod.DotProduct{}.PlaceGPUs(task, node(64000))
	if cpuBusy <= fresh {
		t.Fatalf("cpu-busy node %v, fresh node %v", cpuBusy, fresh)
	}
}
