package gang_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/plugins/gang"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestMinAvailable(t *testing.T) {
	tests := []struct{ tasks, minMember, want int }{
		{4, 4, 4},
		{4, 2, 2},
		{1, 1, 1},
	}
	for _, tc := range tests {
		j := testutil.MakeJob("j").Tasks(tc.tasks).MinMember(tc.minMember).Obj()
		if got := (gang.Gang{}).MinAvailable(j); got != tc.want {
			t.Errorf("%d tasks, minMember %d: %d, want %d", tc.tasks, tc.minMember, got, tc.want)
		}
	}
	// A job without minMember is a gang of one; one asking more than it has waits for
	// the rest of its pods.
	j := testutil.MakeJob("j").Tasks(3).Obj()
	if j.MinMember = 0; (gang.Gang{}).MinAvailable(j) != 1 {
		t.Error("minMember 0")
	}
	if j.MinMember = 5; (gang.Gang{}).MinAvailable(j) != 5 {
		t.Error("minMember above the task count")
	}
}
