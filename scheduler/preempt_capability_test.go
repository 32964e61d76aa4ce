package scheduler_test

import (
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// A job held back only by its own queue's capability preempts lower-priority jobs of
// that queue: evicting them frees the capability.
func TestPreemptUnderQueueCapability(t *testing.T) {
	ns := nodes(2, 8)
	q := testutil.MakeQueue("train-dev").CapabilityGPUs(8).Obj()
	low := testutil.MakeJob("low").GPU(8).Queue(q).Priority(1).Obj()
	testutil.Run(low, testutil.Epoch, ns[0])
	high := testutil.MakeJob("high").GPU(8).Queue(q).Priority(100).Created(time.Minute).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(time.Hour, ns, []*framework.Job{low, high}, q))
	if len(r.Evictions) != 1 || r.Evictions[0].Task.Job != low {
		t.Fatalf("evictions %+v: want the low-priority job of the same queue", r.Evictions)
	}
	if boundTasks(r, high) != 1 {
		t.Fatalf("high not placed: %+v", high.Pending)
	}
	if q.Allocated.GPU > q.Capability.GPU {
		t.Fatalf("queue holds %d milli-GPUs over its capability %d", q.Allocated.GPU, q.Capability.GPU)
	}
}

// Reclaim from other queues does not help a job that its own queue caps.
func TestNoReclaimUnderOwnCapability(t *testing.T) {
	ns := nodes(2, 8)
	dev := testutil.MakeQueue("train-dev").CapabilityGPUs(8).Obj()
	prod := testutil.MakeQueue("train-prod").Obj()
	mine := testutil.MakeJob("mine").GPU(4).Queue(dev).Priority(200).Obj()
	testutil.Run(mine, testutil.Epoch, ns[1])
	other := testutil.MakeJob("other").GPU(8).Queue(prod).Obj()
	testutil.Run(other, testutil.Epoch, ns[0])
	big := testutil.MakeJob("big").GPU(8).Queue(dev).Priority(100).Created(time.Minute).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(time.Hour, ns, []*framework.Job{mine, other, big}, dev, prod))
	if big.Pending == nil || big.Pending.Code != framework.ReasonQueueCapability {
		t.Fatalf("big: %+v, want held back by its queue's capability", big.Pending)
	}
	if len(r.Evictions) != 0 {
		t.Fatalf("evicted %d tasks for a job its own queue's capability blocks", len(r.Evictions))
	}
}

// Pods alike (one queue, priority and shape) each reclaim their share while evictions
// make room; once an attempt evicts nothing, those after it wait for the same reason.
func TestReclaimPodsAlike(t *testing.T) {
	owner := testutil.MakeQueue("owner").DeservedGPUs(8).Obj()
	borrower := testutil.MakeQueue("borrower").DeservedGPUs(8).Obj()
	s := newTessera(t)
	snap := testutil.Snapshot(0, nodes(2, 8), jobsOf("borrow", 16, 1, borrower), owner, borrower)
	checkInvariants(t, "lend", true, snap, s.RunSession(snap))
	commitResult(snap)
	own := jobsOf("own", 12, 1, owner)
	snap.Jobs = append(snap.Jobs, own...)
	snap.Now = snap.Now.Add(time.Hour)
	waitedAnHour(snap.Now, own...)
	r := s.RunSession(snap)
	checkInvariants(t, "reclaim", true, snap, r)
	if len(r.Evictions) != 8 || held(snap, owner) != 8 {
		t.Fatalf("%d evictions, owner holds %g GPUs; want 8 and its deserved 8", len(r.Evictions), held(snap, owner))
	}
	var left []*framework.Job
	for _, j := range own {
		if boundTasks(r, j) == 0 {
			left = append(left, j)
		}
	}
	if len(left) != 4 {
		t.Fatalf("%d of the owner's pods left pending, want 4", len(left))
	}
	for _, j := range left[1:] {
		if j.Pending == nil || *j.Pending != *left[0].Pending {
			t.Fatalf("%s waits for %+v, %s for %+v: pods alike wait for the same reason", j.Name, j.Pending, left[0].Name, left[0].Pending)
		}
	}
}
