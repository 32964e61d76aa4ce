package minruntime_test

import (
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/minruntime"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestEvictable(t *testing.T) {
	now := testutil.Epoch.Add(time.Hour)
	running := func(min, ran time.Duration) *framework.Job {
		j := testutil.MakeJob("j").Tasks(2).MinRuntime(min).Obj()
		testutil.Run(j, now.Add(-ran), testutil.MakeNode("n").Obj())
		return j
	}
	tests := []struct {
		name     string
		def      time.Duration
		job      *framework.Job
		evictble bool
	}{
		{"no guard", 0, running(0, time.Second), true},
		{"young job protected", 0, running(30*time.Minute, 10*time.Minute), false},
		{"guard served", 0, running(30*time.Minute, 30*time.Minute), true},
		{"default applies", 20 * time.Minute, running(0, 10*time.Minute), false},
		{"job's own guard wins over the default", time.Hour, running(5*time.Minute, 10*time.Minute), true},
		{"not started", time.Hour, testutil.MakeJob("p").Obj(), true},
	}
	for _, tc := range tests {
		if got := (minruntime.MinRuntime{Default: tc.def}).Evictable(tc.job, now); got != tc.evictble {
			t.Errorf("%s: Evictable = %v", tc.name, got)
		}
	}
}
