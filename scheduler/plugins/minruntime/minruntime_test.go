package minruntime_test

import (
	"strings"
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
	capped := func(j *framework.Job, max time.Duration) *framework.Job {
		j.Queue = testutil.MakeQueue("q").Obj()
		j.Queue.MaxMinRuntime = max
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
		{"queue caps the job's guard", 0, capped(running(24*time.Hour, time.Hour), 30*time.Minute), true},
		{"queue caps the default", 24 * time.Hour, capped(running(0, time.Hour), 30*time.Minute), true},
		{"guard within the cap", 0, capped(running(time.Hour, 10*time.Minute), 30*time.Minute), false},
	}
	for _, tc := range tests {
		if got := (minruntime.MinRuntime{Default: tc.def}).Evictable(tc.job, now); got != tc.evictble {
			t.Errorf("%s: Evictable = %v", tc.name, got)
		}
	}
}

func TestConfigure(t *testing.T) {
	m := minruntime.New()
	if err := m.Configure(map[string]string{"minruntime.default": "10m"}); err != nil || m.Default != 10*time.Minute {
		t.Fatalf("minruntime.default 10m: %v, default %s", err, m.Default)
	}
	if err := minruntime.New().Configure(nil); err != nil {
		t.Fatalf("no arguments: %v", err)
	}
	for args, want := range map[string]string{
		"minruntime.defualt=5m":   "unknown argument minruntime.defualt; known: minruntime.default",
		"minruntime.default=soon": `minruntime.default: "soon" is not a duration such as 10m`,
		"minruntime.default=-1m":  `minruntime.default: "-1m" is not a duration such as 10m`,
	} {
		k, v, _ := strings.Cut(args, "=")
		if err := minruntime.New().Configure(map[string]string{k: v}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", args, err, want)
		}
	}
}
