package scheduler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// unqueued is the queue the snapshot charges refused jobs to.
func unqueued() *framework.Queue {
	q := testutil.MakeQueue(framework.UnqueuedQueue).Obj()
	q.Unqueued = true
	return q
}

// refuse marks j as refused by the queue it names, charged to q.
func refuse(j *framework.Job, q *framework.Queue) *framework.Job {
	j.Queue = q
	j.Refused = &framework.Reason{Code: framework.ReasonQueueRefused, Message: `queue "team-b" does not take workloads from namespace "tenant-a"`}
	for _, t := range j.Tasks {
		t.Job = j
	}
	return j
}

// TestRefusedJobWaits: a job its queue does not take is not placed, even on free
// nodes, and waits with the refusal as its reason.
func TestRefusedJobWaits(t *testing.T) {
	u := unqueued()
	j := refuse(testutil.MakeJob("refused").GPU(1).Obj(), u)
	snap := testutil.Snapshot(0, nodes(1, 8), []*framework.Job{j}, u)
	r := newTessera(t).RunSession(snap)
	if len(r.Bindings) != 0 {
		t.Fatalf("refused job bound %d tasks", len(r.Bindings))
	}
	wantReason(t, j, framework.ReasonQueueRefused, `does not take workloads from namespace "tenant-a"`)
}

// TestUnqueuedWorkReclaimed: what a refused job's running pods hold is charged to the
// unqueued queue, which deserves nothing: another queue's pending work reclaims it,
// whatever its eviction protection and min runtime.
func TestUnqueuedWorkReclaimed(t *testing.T) {
	ns := nodes(1, 8)
	u, team := unqueued(), testutil.MakeQueue("team-a").DeservedGPUs(8).Obj()
	relabelled := refuse(testutil.MakeJob("relabelled").GPU(8).Priority(100).MinRuntime(24*time.Hour).NotPreemptible().Obj(), u)
	testutil.Run(relabelled, testutil.Epoch, ns[0])
	waiting := testutil.MakeJob("waiting").GPU(8).Queue(team).Obj()
	snap := testutil.Snapshot(time.Minute, ns, []*framework.Job{relabelled, waiting}, u, team)
	waitedAnHour(snap.Now, waiting)
	r := newTessera(t).RunSession(snap)
	checkInvariants(t, "reclaim from the unqueued queue", true, snap, r)
	if got := evictedJobs(r); !slices.Equal(got, []string{"relabelled"}) || boundTasks(r, waiting) != 1 {
		t.Fatalf("evicted %v, waiting bound %d; want relabelled evicted and waiting bound", got, boundTasks(r, waiting))
	}
}

// TestProtectionWithinDeserved: eviction protection and min runtime hold for what a
// queue holds within its deserved share, never for what it borrows beyond: another
// queue reclaims the borrowed part and no more.
func TestProtectionWithinDeserved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		protect func(*testutil.JobWrapper) *testutil.JobWrapper
	}{
		{"eviction protection", (*testutil.JobWrapper).NotPreemptible},
		{"min runtime", func(w *testutil.JobWrapper) *testutil.JobWrapper { return w.MinRuntime(24 * time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := nodes(3, 8)
			borrower, owner := testutil.MakeQueue("borrower").DeservedGPUs(8).Obj(), testutil.MakeQueue("owner").DeservedGPUs(16).Obj()
			var jobs []*framework.Job
			for i, n := range ns {
				j := tc.protect(testutil.MakeJob("pinned-" + string(rune('a'+i))).GPU(8).Queue(borrower).Created(time.Duration(i) * time.Second)).Obj()
				testutil.Run(j, testutil.Epoch.Add(time.Duration(i)*time.Second), n)
				jobs = append(jobs, j)
			}
			mine := jobsOf("mine", 3, 8, owner)
			snap := testutil.Snapshot(time.Minute, ns, append(jobs, mine...), borrower, owner)
			waitedAnHour(snap.Now, mine...)
			r := newTessera(t).RunSession(snap)
			checkInvariants(t, tc.name, true, snap, r)
			// The borrower deserves 8 of 24 GPUs: two of its three jobs are beyond.
			if len(evictedJobs(r)) != 2 || held(snap, borrower) != 8 || held(snap, owner) != 16 {
				t.Fatalf("evicted %v; borrower holds %g, owner %g; want two evicted, 8 and 16", evictedJobs(r), held(snap, borrower), held(snap, owner))
			}
		})
	}
}
