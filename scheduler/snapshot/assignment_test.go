package snapshot_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestAssignment(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(4, "A100-80GB").Obj()
	for _, tc := range []struct {
		name    string
		gpu     framework.GPURequest
		set     framework.GPUSet
		uuids   int
		sliceMi int64
	}{
		{"whole GPUs", framework.GPURequest{Count: 2}, framework.GPUSet(0).Add(1).Add(3), 2, 0},
		{"memory slice", framework.GPURequest{MemoryMiB: 12288}, framework.GPUSet(0).Add(2), 1, 12288},
		{"fractional share of a trace", framework.GPURequest{Milli: 500}, framework.GPUSet(0).Add(0), 1, n.GPUs[0].MemoryMiB / 2},
	} {
		task := &framework.Task{Name: "p", Container: "main", GPU: tc.gpu}
		a, ok := snapshot.Assignment(task, n, tc.set)
		if !ok || a.Node != "n" || len(a.Containers) != 1 {
			t.Fatalf("%s: %+v %v", tc.name, a, ok)
		}
		c := a.Containers[0]
		if c.Container != "main" || len(c.UUIDs) != tc.uuids || c.MemoryMiB != tc.sliceMi || c.UUIDs[0] != n.GPUs[tc.set.Indices()[0]].UUID {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
	if _, ok := snapshot.Assignment(&framework.Task{Name: "cpu"}, n, 0); ok {
		t.Error("a pod without GPUs got an assignment")
	}
}
