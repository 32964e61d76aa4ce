package testutil

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// PlacementCase is one expected verdict of a GPU placer: the GPUs it picks for Task on
// Node, its score and whether the task fits at all.
type PlacementCase struct {
	Name     string
	Task     *framework.Task
	Node     *framework.Node
	WantGPUs []int
	Want     float64
	OK       bool
}

// CheckPlacements runs p on every case as a subtest and fails on any difference.
func CheckPlacements(t *testing.T, p framework.GPUPlacer, cases []PlacementCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			gpus, score, ok := p.PlaceGPUs(tc.Task, tc.Node)
			if ok != tc.OK || score != tc.Want || !slices.Equal(gpus.Indices(), append([]int{}, tc.WantGPUs...)) {
				t.Fatalf("got GPUs %v score %v fits %v, want %v %v %v", gpus.Indices(), score, ok, tc.WantGPUs, tc.Want, tc.OK)
			}
		})
	}
}

// Placement builds a PlacementCase.
func Placement(name string, task *framework.Task, node *framework.Node, wantGPUs []int, want float64, ok bool) PlacementCase {
	return PlacementCase{Name: name, Task: task, Node: node, WantGPUs: wantGPUs, Want: want, OK: ok}
}
