package gpupacking_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gpupacking"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func node(usedMilli ...int64) *framework.Node {
	return testutil.MakeNode("n").GPUs(8, "A100-80GB").UsedGPUs(usedMilli...).Obj()
}

func TestPlaceGPUs(t *testing.T) {
	share := func(m int64) *framework.Task { return testutil.MakeJob("s").Share(m).Obj().Tasks[0] }
	whole := func(c int) *framework.Task { return testutil.MakeJob("w").GPU(c).Obj().Tasks[0] }
	tests := []testutil.PlacementCase{
		// Band 1, shared GPUs: 100 - freePercent/10, at least 50.
		testutil.Placement("share on a nearly full GPU", share(300), node(600), []int{0}, 96, true),
		testutil.Placement("share on a nearly free GPU", share(300), node(100), []int{0}, 91, true),
		testutil.Placement("share takes the least free GPU", share(300), node(100, 600), []int{1}, 96, true),
		// Band 2, a free GPU of a used node: 50 - free GPUs used, at least 33.
		testutil.Placement("share needs a free GPU of a used node", share(300), node(900), []int{1}, 49, true),
		testutil.Placement("whole GPUs of a used node", whole(2), node(1000, 1000), []int{2, 3}, 48, true),
		// Band 3, idle node: max(33 - free GPUs, free GPUs).
		testutil.Placement("idle node", whole(1), node(), []int{0}, 25, true),
		testutil.Placement("does not fit", whole(7), node(1000, 1000), nil, 0, false),
		testutil.Placement("cpu only", testutil.MakeJob("c").Obj().Tasks[0], node(500), nil, 0, true),
	}
	testutil.CheckPlacements(t, gpupacking.GPUPacking{}, tests)
}
