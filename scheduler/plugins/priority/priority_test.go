package priority_test

import (
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/priority"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func job(name string, prio int32, created, started time.Duration) *framework.Job {
	j := testutil.MakeJob(name).Priority(prio).Created(created).Obj()
	for _, task := range j.Tasks {
		task.Status, task.StartTime = framework.TaskRunning, testutil.Epoch.Add(started)
	}
	return j
}

func TestCompareJobs(t *testing.T) {
	tests := []struct {
		name string
		a, b *framework.Job
	}{
		{"higher priority first", job("a", 5, time.Hour, 0), job("b", 1, 0, 0)},
		{"then older first", job("a", 1, 0, 0), job("b", 1, time.Minute, 0)},
		{"then by name", job("a", 1, 0, 0), job("b", 1, 0, 0)},
	}
	for _, tc := range tests {
		if (priority.Priority{}).CompareJobs(tc.a, tc.b) >= 0 || (priority.Priority{}).CompareJobs(tc.b, tc.a) <= 0 {
			t.Errorf("%s: a does not go first", tc.name)
		}
	}
}

func TestCompareVictims(t *testing.T) {
	tests := []struct {
		name string
		a, b *framework.Job // a is evicted first
	}{
		{"lower priority first", job("a", 1, 0, 0), job("b", 5, 0, time.Hour)},
		{"then youngest first", job("a", 1, 0, time.Hour), job("b", 1, 0, time.Minute)},
		{"then by name", job("a", 1, 0, 0), job("b", 1, 0, 0)},
	}
	for _, tc := range tests {
		if (priority.Priority{}).CompareVictims(tc.a, tc.b) >= 0 || (priority.Priority{}).CompareVictims(tc.b, tc.a) <= 0 {
			t.Errorf("%s: a is not evicted first", tc.name)
		}
	}
}
