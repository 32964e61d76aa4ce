package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// TestEASYBackfill: nodes reserved for a waiting gang take work of any queue that is
// expected to end before the gang is expected to start (when the work on them ends),
// and nothing longer nor without an estimate.
func TestEASYBackfill(t *testing.T) {
	cfg, _ := scheduler.Profile("tessera")
	cfg.ReservationAfter = scheduler.Duration{Duration: time.Hour}
	cfg.ReservationDeadline, cfg.ReservationDrain = scheduler.Duration{}, scheduler.Duration{}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := nodes(2, 8)
	qa, qb := testutil.MakeQueue("qa").Obj(), testutil.MakeQueue("qb").Obj()
	big := testutil.MakeJob("big").Tasks(2).GPU(8).Priority(10).Queue(qa).Obj()
	big.WaitingSince = testutil.Epoch
	snap := testutil.Snapshot(0, ns, []*framework.Job{big}, qa, qb)
	for i, n := range ns {
		j := testutil.MakeJob(fmt.Sprintf("run-%d", i)).GPU(1).Priority(20).Queue(qa).Obj()
		j.ExpectedRuntime = 3 * time.Hour
		testutil.Run(j, testutil.Epoch, n)
		snap.Jobs = append(snap.Jobs, j)
	}
	snap.Now = testutil.Epoch.Add(70 * time.Minute)
	s.RunSession(snap)
	if ns[0].Reserved != big || ns[1].Reserved != big {
		t.Fatalf("nodes reserved for %v, %v; want big", ns[0].Reserved, ns[1].Reserved)
	}
	short := testutil.MakeJob("short").GPU(1).Queue(qb).Obj()
	short.ExpectedRuntime = time.Hour // ends at 2h10m, before the work there (3h)
	long := testutil.MakeJob("long").GPU(1).Queue(qb).Obj()
	long.ExpectedRuntime = 2 * time.Hour
	unknown := testutil.MakeJob("unknown").GPU(1).Queue(qb).Obj()
	snap.Jobs = append(snap.Jobs, short, long, unknown)
	snap.Now = testutil.Epoch.Add(71 * time.Minute)
	r := s.RunSession(snap)
	if boundTasks(r, short) != 1 || boundTasks(r, long) != 0 || boundTasks(r, unknown) != 0 {
		t.Fatalf("bound short %d, long %d, without estimate %d; want 1, 0, 0", boundTasks(r, short), boundTasks(r, long), boundTasks(r, unknown))
	}
}

// TestEstimateFromHistory: without a declared runtime a job's estimate is the 90th
// percentile of the runs of its class (queue, runtime class, shape) that ended, once
// there are enough of them; runs cut short by an eviction are not learnt.
func TestEstimateFromHistory(t *testing.T) {
	cfg, _ := scheduler.Profile("tessera")
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := testutil.MakeQueue("q").Obj()
	ns := nodes(1, 8)
	snap := testutil.Snapshot(0, ns, nil, q)
	probe := testutil.MakeJob("probe").GPU(1).Queue(q).Obj()
	other := testutil.MakeJob("other").GPU(2).Queue(q).Obj()
	for k := range 10 {
		j := testutil.MakeJob(fmt.Sprintf("j-%d", k)).GPU(1).Queue(q).Obj()
		start := testutil.Epoch.Add(time.Duration(k) * 24 * time.Hour)
		testutil.Run(j, start, ns[0])
		snap.Jobs, snap.Now = []*framework.Job{j}, start
		s.RunSession(snap)
		snap.Now = start.Add(time.Duration(k+1) * time.Hour)
		if k == 9 { // evicted after 10 hours: not a run's length
			for _, task := range j.Tasks {
				task.Node.Remove(task)
				task.Status = framework.TaskPending
			}
		} else {
			finishJob(j)
		}
		s.RunSession(snap)
		snap.Jobs = nil
		s.RunSession(snap)
		if got, want := s.Estimate(probe), map[bool]time.Duration{true: 0, false: time.Duration(k+1) * time.Hour}[k < 4]; k < 9 && got != want {
			t.Fatalf("after %d runs the estimate is %s, want %s", k+1, got, want)
		}
	}
	if got := s.Estimate(probe); got != 9*time.Hour {
		t.Fatalf("estimate %s after 9 runs and an eviction, want 9h", got)
	}
	if got := s.Estimate(other); got != 0 {
		t.Fatalf("a job of another shape is estimated %s, want none", got)
	}
	probe.ExpectedRuntime = 30 * time.Minute
	if got := s.Estimate(probe); got != 30*time.Minute {
		t.Fatalf("declared 30m, estimated %s", got)
	}
}
