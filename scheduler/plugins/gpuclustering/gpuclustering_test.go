package gpuclustering_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gpuclustering"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// node is an 8-GPU node running one task per GPU count given (whole GPUs).
func node(running ...int) *framework.Node {
	n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Obj()
	for i, c := range running {
		task := testutil.MakeJob(string(rune('a' + i))).GPU(c).Obj().Tasks[0]
		n.Place(task, framework.PickGPUs(&task.GPU, n), framework.MilliPerGPU)
	}
	return n
}

func TestPlaceGPUs(t *testing.T) {
	one := testutil.MakeJob("j").GPU(1).Obj().Tasks[0]
	tests := []struct {
		name string
		node *framework.Node
		want float64
	}{
		// 75 + 25 x (8000 - free) / 8000, integer arithmetic.
		{"only the same shape", node(1), 75 + 3},
		// 50 + 25 x 3000 / 8000
		{"the same shape among others", node(1, 2), 50 + 9},
		// 25 + 0
		{"idle", node(), 25},
		// 0 + 25 x 2000 / 8000
		{"only other shapes", node(2), 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gpus, score, ok := gpuclustering.GPUClustering{}.PlaceGPUs(one, tc.node)
			if !ok || gpus.Len() != 1 || score != tc.want {
				t.Fatalf("got %v %v %v, want score %v", gpus.Indices(), score, ok, tc.want)
			}
		})
	}
	if _, _, ok := (gpuclustering.GPUClustering{}).PlaceGPUs(testutil.MakeJob("big").GPU(8).Obj().Tasks[0], node(1)); ok {
		t.Fatal("8 GPUs placed on a node with 7 free")
	}
}
