package faults

import (
	"slices"
	"testing"
)

// TestScheduleVisitsEveryPoint: every seed's schedule visits each fault point once, with
// one of its actions, and the same seed gives the same schedule.
func TestScheduleVisitsEveryPoint(t *testing.T) {
	for seed := range uint64(20) {
		s := Schedule(seed)
		var points []string
		for _, f := range s {
			points = append(points, f.Point)
			if !slices.Contains(actions[f.Point], f.Action) {
				t.Errorf("seed %d: %s is not one of %s's actions", seed, f.Action, f.Point)
			}
		}
		slices.Sort(points)
		want := Points()
		slices.Sort(want)
		if !slices.Equal(points, want) {
			t.Errorf("seed %d visits %v, want %v", seed, points, want)
		}
		if !slices.Equal(s, Schedule(seed)) {
			t.Errorf("seed %d: two schedules differ", seed)
		}
	}
	t.Logf("seed 1: %v", Schedule(1))
}

func TestParseSeeds(t *testing.T) {
	got, err := ParseSeeds("1, 4-6,9")
	if err != nil || !slices.Equal(got, []uint64{1, 4, 5, 6, 9}) {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "x", "5-2", "1-y"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParsePoints(t *testing.T) {
	got, err := ParsePoints("process/kube-apiserver, process/etcd")
	if err != nil || !slices.Equal(got, []string{KillAPIServer, KillEtcd}) {
		t.Errorf("got %v %v", got, err)
	}
	if _, err := ParsePoints("process/kubelet"); err == nil {
		t.Error("an unknown point: no error")
	}
}
