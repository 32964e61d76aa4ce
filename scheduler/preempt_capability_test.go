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
