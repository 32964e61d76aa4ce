package sim

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// twoJobs is one 8-GPU node and two jobs of 4 GPUs: a at 0 for an hour, b at 600 for
// half an hour.
func twoJobs() ReplayInput {
	return ReplayInput{Name: "steps", Nodes: oneNode(8), Queues: []trace.QueueSpec{{Name: "q", Weight: 1, Reclaimable: true}}, Horizon: 7200,
		Jobs: []ReplayJob{
			{Name: "a", Queue: "q", MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 4}, MilliCPU: 1000, Duration: 3600},
			{Name: "b", Queue: "q", MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 4}, MilliCPU: 1000, Arrival: 600, Duration: 1800},
		}}
}

// The steps one at a time: arrivals join at their time, a session starts them, the
// next instant is the next arrival or completion, and completion frees the node.
func TestReplayerSteps(t *testing.T) {
	r, err := newReplayer(Replay{Input: twoJobs(), Profile: "tessera", Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if at, more := r.nextInstant(); at != 0 || !more {
		t.Fatalf("first instant %d (more %v), want 0", at, more)
	}
	r.arrive()
	if len(r.active) != 1 || r.next != 1 {
		t.Fatalf("after arrive at 0: %d active, next %d; want a only", len(r.active), r.next)
	}
	r.schedule()
	if r.anyWaiting() || r.snap.Nodes[0].Used.GPU != 4000 {
		t.Fatalf("a not running: node holds %d milli", r.snap.Nodes[0].Used.GPU)
	}
	if at, _ := r.nextInstant(); at != 600 {
		t.Fatalf("next instant %d, want b's arrival at 600", at)
	}
	r.measure(600)
	r.now = 600
	r.arrive()
	r.schedule()
	if got := r.snap.Nodes[0].Used.GPU; got != 8000 || r.anyWaiting() {
		t.Fatalf("at 600 the node holds %d milli (waiting %v), want both jobs on 8 GPUs", got, r.anyWaiting())
	}
	if at, _ := r.nextInstant(); at != 2400 {
		t.Fatalf("next instant %d, want b's completion at 2400", at)
	}
	r.measure(2400)
	r.now = 2400
	r.complete()
	if len(r.active) != 1 || r.snap.Nodes[0].Used.GPU != 4000 {
		t.Fatalf("after b completes: %d active, node holds %d milli", len(r.active), r.snap.Nodes[0].Used.GPU)
	}
	// 600 s of 4 GPUs, then 1800 s of 8, over the 2-hour window of 8 GPUs.
	if want := 600.0*4000 + 1800*8000; r.allocInt != want {
		t.Errorf("allocation integral %g, want %g", r.allocInt, want)
	}
	r.run()
	if r.out.AllDoneHours != 1 || len(r.out.WaitSeconds) != 2 || r.out.GPUNodeHours != 2 {
		t.Errorf("done at %gh, %d waits, %g GPU-node-hours; want 1h, 2, 2 (one node over the 2-hour window)", r.out.AllDoneHours, len(r.out.WaitSeconds), r.out.GPUNodeHours)
	}
}

// An evicted job keeps the work up to its last checkpoint: stopProgress rounds down,
// the rest is lost GPU-time, and its wait to restart counts.
func TestReplayerStopKeepsCheckpoint(t *testing.T) {
	in := twoJobs()
	in.Jobs[0].CheckpointEvery = 600
	r, err := newReplayer(Replay{Input: in, Profile: "tessera", Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	r.arrive()
	r.schedule()
	a := r.active[r.snap.Jobs[0]]
	r.now = 600*2 + 300
	r.stopProgress(a)
	if a.done != 2*600 || a.since != -1 || a.epoch != 1 || a.waitFrom != r.now {
		t.Errorf("after stop: done %d since %d epoch %d waiting from %d; want two checkpoints kept, stopped, epoch 1, waiting from %d", a.done, a.since, a.epoch, a.waitFrom, r.now)
	}
	if want := 300.0 * 4 / 3600; r.out.LostGPUHours != want {
		t.Errorf("lost %g GPU-hours, want %g (300 s of 4 GPUs)", r.out.LostGPUHours, want)
	}
	r.now += 900
	r.startProgress(a)
	if a.waited != 900 {
		t.Errorf("waited %d s, want the 900 s to restart", a.waited)
	}
}

// A job without checkpoints loses everything it did, and is protected from eviction.
func TestReplayerNoCheckpointLosesAll(t *testing.T) {
	r, err := newReplayer(Replay{Input: twoJobs(), Profile: "tessera", Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	r.arrive()
	r.schedule()
	a := r.active[r.snap.Jobs[0]]
	if a.job.Tasks[0].Preemptible {
		t.Error("a job without checkpoints is preemptible; want it protected")
	}
	r.now = 1500
	r.stopProgress(a)
	if a.done != 0 || r.out.LostGPUHours != 1500.0*4/3600 {
		t.Errorf("done %d, lost %g GPU-hours; want 0 kept and 1500 s of 4 GPUs lost", a.done, r.out.LostGPUHours)
	}
}

func TestReplayerRejectsUnknownQueue(t *testing.T) {
	in := twoJobs()
	in.Jobs[1].Queue = "nosuch"
	if _, err := newReplayer(Replay{Input: in, Profile: "tessera"}); err == nil {
		t.Fatal("a job naming an undefined queue was accepted")
	}
}
