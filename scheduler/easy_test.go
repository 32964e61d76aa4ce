package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// TestEASYBackfill: a 2 x 8-GPU gang waits for two nodes, one expected to be free in 1h,
// the other in 3h. Both are reserved from 3h; until then only a job expected to end by
// then may use the reserved room; a longer one, or one of unknown runtime, waits.
func TestEASYBackfill(t *testing.T) {
	s := newTessera(t) // reservations after 30 minutes
	ns := nodes(2, 8)
	q := testutil.MakeQueue("q").Obj()
	a := testutil.MakeJob("a").GPU(8).Queue(q).Obj()
	a.ExpectedRuntime = time.Hour
	testutil.Run(a, testutil.Epoch, ns[0])
	b := testutil.MakeJob("b").GPU(4).Queue(q).Obj()
	b.ExpectedRuntime = 3 * time.Hour
	testutil.Run(b, testutil.Epoch, ns[1])
	big := testutil.MakeJob("big").Tasks(2).GPU(8).Queue(q).Obj()
	big.WaitingSince = testutil.Epoch.Add(-time.Hour)
	snap := testutil.Snapshot(0, ns, []*framework.Job{a, b, big}, q)
	if r := s.RunSession(snap); len(r.Bindings) != 0 {
		t.Fatalf("bound %d tasks", len(r.Bindings))
	}
	if !strings.Contains(big.Pending.Message, "2 node(s) reserved, expected to start at 03:00") {
		t.Fatalf("big: %v", big.Pending)
	}
	short := testutil.MakeJob("short").GPU(4).Queue(q).Created(time.Minute).Obj()
	short.ExpectedRuntime = 2 * time.Hour
	long := testutil.MakeJob("long").GPU(4).Queue(q).Created(2 * time.Minute).Obj()
	long.ExpectedRuntime = 4 * time.Hour
	unknown := testutil.MakeJob("unknown").GPU(4).Queue(q).Created(3 * time.Minute).Obj()
	snap.Jobs = append(snap.Jobs, long, unknown, short)
	snap.Now = testutil.Epoch.Add(5 * time.Minute)
	r := s.RunSession(snap)
	checkInvariants(t, "second session", true, snap, r)
	if boundTasks(r, short) != 1 || boundTasks(r, long) != 0 || boundTasks(r, unknown) != 0 {
		t.Fatalf("short=%d long=%d unknown=%d", boundTasks(r, short), boundTasks(r, long), boundTasks(r, unknown))
	}
	for _, bd := range r.Bindings {
		if want := "backfilled until 02:05, before the reservation for default/big"; bd.Task.Job == short && bd.Note != want {
			t.Fatalf("note %q, want %q", bd.Note, want)
		}
	}
	wantReason(t, long, framework.ReasonUnschedulable, "reserved")
}

// TestRuntimeHistory: jobs of a shape that declare nothing are expected to run as long
// as their like ran, once enough of them finished; then they may backfill.
func TestRuntimeHistory(t *testing.T) {
	s := newTessera(t) // reservations after 30 minutes
	ns := nodes(2, 8)
	q := testutil.MakeQueue("q").Obj()
	// Six 1-GPU jobs run 20 minutes each, one after the other, on node 1.
	snap := testutil.Snapshot(0, ns, nil, q)
	for i := range 6 {
		j := testutil.MakeJob("h" + string(rune('a'+i))).GPU(1).Queue(q).Obj()
		snap.Jobs = []*framework.Job{j}
		snap.Now = testutil.Epoch.Add(time.Duration(i) * 20 * time.Minute)
		s.RunSession(snap)
		commitResult(snap)
		snap.Now = snap.Now.Add(time.Minute)
		s.RunSession(snap) // sees it run
		finishJob(j)
	}
	now := 2 * time.Hour
	a := testutil.MakeJob("a").GPU(8).Queue(q).Obj()
	a.ExpectedRuntime = time.Hour
	testutil.Run(a, testutil.Epoch.Add(now), ns[0])
	b := testutil.MakeJob("b").GPU(7).Queue(q).Obj()
	b.ExpectedRuntime = time.Hour
	testutil.Run(b, testutil.Epoch.Add(now), ns[1])
	big := testutil.MakeJob("big").Tasks(2).GPU(8).Queue(q).Obj()
	big.WaitingSince = testutil.Epoch
	snap = testutil.Snapshot(now, ns, []*framework.Job{a, b, big}, q)
	s.RunSession(snap)
	small := testutil.MakeJob("small").GPU(1).Queue(q).Created(now + time.Minute).Obj()
	snap.Jobs = append(snap.Jobs, small)
	snap.Now = snap.Now.Add(time.Minute)
	if r := s.RunSession(snap); boundTasks(r, small) != 1 {
		t.Fatalf("small did not backfill: %v", small.Pending)
	}
}
