package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func newTessera(t testing.TB) *scheduler.Scheduler { return testutil.Scheduler(t, "tessera") }

func nodes(n int, gpus int) []*framework.Node {
	out := make([]*framework.Node, n)
	for i := range out {
		out[i] = testutil.MakeNode("n"+string(rune('a'+i))).GPUs(gpus, "A100-80GB").Obj()
	}
	return out
}

func boundTasks(r *scheduler.Result, j *framework.Job) int {
	c := 0
	for _, b := range r.Bindings {
		if b.Task.Job == j {
			c++
		}
	}
	return c
}

func TestGangAllOrNothing(t *testing.T) {
	ns := nodes(4, 8)
	small := testutil.MakeJob("small").GPU(2).Obj()
	testutil.Run(small, testutil.Epoch, ns[3])
	big := testutil.MakeJob("big").Tasks(4).GPU(8).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(0, ns, []*framework.Job{small, big}))
	if len(r.Bindings) != 0 {
		t.Fatalf("partial gang bound: %d bindings", len(r.Bindings))
	}
	if big.Pending == nil || big.Pending.Code != framework.ReasonGangIncomplete || !strings.Contains(big.Pending.Message, "gang needs 4 x 8 GPUs, only 3 fit") {
		t.Fatalf("reason: %+v", big.Pending)
	}
	for _, n := range ns[:3] {
		if n.FreeWholeGPUs() != 8 {
			t.Fatalf("node %s left with %d free GPUs after a discarded gang", n.Name, n.FreeWholeGPUs())
		}
	}
}

func TestTwoGangsNeverDeadlock(t *testing.T) {
	ns := nodes(4, 8)
	a := testutil.MakeJob("a").Tasks(3).GPU(8).Created(0).Obj()
	b := testutil.MakeJob("b").Tasks(3).GPU(8).Created(time.Second).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(0, ns, []*framework.Job{a, b}))
	if got := boundTasks(r, a); got != 3 {
		t.Fatalf("older gang a: %d of 3 bound", got)
	}
	if got := boundTasks(r, b); got != 0 {
		t.Fatalf("gang b partially bound: %d", got)
	}
}

func TestQueueCapability(t *testing.T) {
	q := testutil.MakeQueue("train-dev").CapabilityGPUs(10).Obj()
	a := testutil.MakeJob("a").GPU(8).Queue(q).Obj()
	b := testutil.MakeJob("b").GPU(8).Queue(q).Created(time.Second).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(0, nodes(4, 8), []*framework.Job{a, b}, q))
	if boundTasks(r, a) != 1 || boundTasks(r, b) != 0 {
		t.Fatalf("bindings a=%d b=%d", boundTasks(r, a), boundTasks(r, b))
	}
	if b.Pending == nil || b.Pending.Code != framework.ReasonQueueCapability || !strings.Contains(b.Pending.Message, "queue train-dev at capability 8/10 GPU") {
		t.Fatalf("reason: %+v", b.Pending)
	}
}

func TestPreemptLowerPriority(t *testing.T) {
	ns := nodes(1, 8)
	q := testutil.MakeQueue("q").Obj()
	low := testutil.MakeJob("low").Tasks(2).GPU(4).Queue(q).Priority(0).Obj()
	testutil.Run(low, testutil.Epoch, ns[0], ns[0])
	high := testutil.MakeJob("high").GPU(4).Queue(q).Priority(100).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(time.Hour, ns, []*framework.Job{low, high}, q))
	if len(r.Evictions) != 2 {
		t.Fatalf("want the whole low gang (2 tasks) evicted, got %d evictions", len(r.Evictions))
	}
	if boundTasks(r, high) != 1 || !r.Bindings[0].Pipelined {
		t.Fatalf("high not pipelined onto the freed GPUs: %+v", r.Bindings)
	}
}

// A job whose gang already runs does not evict others for its extra pods (beyond
// minMember): only jobs that cannot run preempt, as with Volcano's gang plugin. Here
// the running job waits in line behind a gang that does not fit now; evicting "low"
// for it would place nothing.
func TestNoPreemptionForExtraTasks(t *testing.T) {
	ns := nodes(2, 8)
	q := testutil.MakeQueue("q").Obj()
	low := testutil.MakeJob("low").GPU(4).Queue(q).Priority(0).Obj()
	testutil.Run(low, testutil.Epoch, ns[0])
	peer := testutil.MakeJob("peer").GPU(8).Queue(q).Priority(100).Obj()
	testutil.Run(peer, testutil.Epoch, ns[1])
	blocker := testutil.MakeJob("blocker").Tasks(2).GPU(8).Queue(q).Priority(100).Created(0).Obj()
	high := testutil.MakeJob("high").Tasks(2).MinMember(1).GPU(4).Queue(q).Priority(100).Created(time.Minute).Obj()
	first := high.Tasks[0] // the gang (one pod) runs; the second pod is an extra
	ns[0].Place(first, framework.PickGPUs(&first.GPU, ns[0]), framework.MilliPerGPU)
	first.Status, first.StartTime = framework.TaskRunning, testutil.Epoch
	r := newTessera(t).RunSession(testutil.Snapshot(time.Hour, ns, []*framework.Job{low, peer, blocker, high}, q))
	if len(r.Evictions) != 0 || len(r.Bindings) != 0 {
		t.Fatalf("evictions %v, bindings %d; want low left running and high's extra pod pending", evictedJobs(r), len(r.Bindings))
	}
}

// Pods alike but for their tolerations fit different nodes: that one finds no room
// must not keep the other, which tolerates the tainted node, from being placed.
func TestUnfitShapeTellsTolerationsApart(t *testing.T) {
	ns := []*framework.Node{
		testutil.MakeNode("busy").GPUs(1, "A100-80GB").Obj(),
		testutil.MakeNode("tainted").GPUs(1, "A100-80GB").Taint("dedicated", "gpu").Obj(),
	}
	busy := testutil.MakeJob("busy").GPU(1).Obj()
	testutil.Run(busy, testutil.Epoch, ns[0])
	plain := testutil.MakeJob("plain").GPU(1).Created(time.Second).Obj()
	tolerant := testutil.MakeJob("tolerant").GPU(1).Tolerate("dedicated").Created(2 * time.Second).Obj()
	r := newTessera(t).RunSession(testutil.Snapshot(time.Minute, ns, []*framework.Job{busy, plain, tolerant}))
	if boundTasks(r, plain) != 0 || boundTasks(r, tolerant) != 1 || r.Bindings[0].Node.Name != "tainted" {
		t.Fatalf("bindings %v: want only the tolerant pod, on the tainted node", r.Bindings)
	}
}
