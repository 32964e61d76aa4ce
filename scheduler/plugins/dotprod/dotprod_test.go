package dotprod_test

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/dotprod"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func node(usedCPU int64, usedMilli ...int64) *framework.Node {
	return testutil.MakeNode("n").GPUs(8, "A100-80GB").UsedCPU(usedCPU).UsedGPUs(usedMilli...).Obj()
}

func TestPlaceGPUs(t *testing.T) {
	tests := []struct {
		name     string
		task     *framework.Task
		node     *framework.Node
		wantGPUs []int
		want     float64
		ok       bool
	}{
		// dot = (96000/128000 x 8000/128000 + 4000/8000 x 2000/8000) / 2 = 0.0859375 -> 91.4
		{"whole GPUs", testutil.MakeJob("j").CPU(8000).GPU(2).Obj().Tasks[0], node(32000, 1000, 1000, 1000, 1000), []int{4, 5}, 91, true},
		// dot = (1 x 1000/128000 + 7000/8000 x 500/8000) / 2 = 0.03125 -> 96.875
		{"share", testutil.MakeJob("j").CPU(1000).Share(500).Obj().Tasks[0], node(0, 600, 400), []int{1}, 96, true},
		// dot = (1 x 64000/128000 + 1 x 0) / 2 = 0.25
		{"cpu only", testutil.MakeJob("j").CPU(64000).Obj().Tasks[0], node(0), nil, 75, true},
		{"does not fit", testutil.MakeJob("j").Share(500).Obj().Tasks[0], node(0, 600, 600, 600, 600, 600, 600, 600, 600), nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gpus, score, ok := dotprod.DotProduct{}.PlaceGPUs(tc.task, tc.node)
			if ok != tc.ok || score != tc.want || !slices.Equal(gpus.Indices(), append([]int{}, tc.wantGPUs...)) {
				t.Fatalf("got %v %v %v, want %v %v %v", gpus.Indices(), score, ok, tc.wantGPUs, tc.want, tc.ok)
			}
		})
	}
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
