package bestfit_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/bestfit"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// node is a 128-CPU, 8-GPU node with usedCPU millicores and the given GPU shares in use.
func node(usedCPU int64, usedMilli ...int64) *framework.Node {
	return testutil.MakeNode("n").GPUs(8, "A100-80GB").UsedCPU(usedCPU).UsedGPUs(usedMilli...).Obj()
}

func TestPlaceGPUs(t *testing.T) {
	tests := []testutil.PlacementCase{
		// 100 x (1 - (0.5 x (96000-8000)/128000 + 0.5 x (4000-2000)/8000)) = 53.125
		testutil.Placement("whole GPUs", testutil.MakeJob("j").CPU(8000).GPU(2).Obj().Tasks[0], node(32000, 1000, 1000, 1000, 1000), []int{4, 5}, 53, true),
		// best-fitting GPU is 1 (600 free); 100 x (1 - (0.5 x 127000/128000 + 0.5 x 6500/8000)) = 9.77
		testutil.Placement("share to the best-fitting GPU", testutil.MakeJob("j").CPU(1000).Share(500).Obj().Tasks[0], node(0, 600, 400), []int{1}, 9, true),
		// 100 x (1 - (0.5 x 64000/128000 + 0.5 x 8000/8000)) = 25
		testutil.Placement("cpu only", testutil.MakeJob("j").CPU(64000).Obj().Tasks[0], node(0), nil, 25, true),
		testutil.Placement("does not fit", testutil.MakeJob("j").GPU(3).Obj().Tasks[0], node(0, 1000, 1000, 1000, 1000, 1000, 1000), nil, 0, false),
	}
	testutil.CheckPlacements(t, bestfit.BestFit{}, tests)
}
