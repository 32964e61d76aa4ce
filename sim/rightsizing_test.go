package sim

import (
	"time"

	"reflect"
	"testing"

	"github.com/tessera-gpu/tessera/rightsize"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/curves"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

func TestJobCurveReads(t *testing.T) {
	c := &curves.Curve{Pod: "p", MemoryMiB: []int64{1000, 2000, 3000, 4000}, Utilization: []int{50, 0, 0, 50}}
	j := jobCurve{c: c, offset: 300, scale: 1}
	if j.step(0) != 0 || j.step(300) != 1 || j.memoryAt(300) != 2000 || j.stepEnd(0) != 300 || j.step(2400) != 0 {
		t.Fatalf("curve read at the wrong steps: step(0)=%d step(300)=%d stepEnd(0)=%d", j.step(0), j.step(300), j.stepEnd(0))
	}
	if p := j.peak(0, 600); p != 2000 {
		t.Errorf("peak of the first 600 s %d, want 2000", p)
	}
	// The third step (curve time 900 to 1500) is the first above 2500 MiB: the run
	// fails in its middle.
	if at, ok := j.firstAbove(0, 2400, 2500); !ok || at != 1200 {
		t.Errorf("first above 2500 MiB at %d (%v), want 1200", at, ok)
	}
	if _, ok := j.firstAbove(0, 2400, 4000); ok {
		t.Error("a slice holding the peak ran out of memory")
	}
	// Idle from 300 to 1500: told at 900, suspended at 1200, busy again at 1500.
	rule := IdleRule{Threshold: 1, IdleFor: 600, Grace: 300}
	if at, end, ok := j.reclaimAt(0, 2400, rule, 2400); !ok || at != 1200 || end != 1500 {
		t.Errorf("reclaim at %d until %d (%v), want 1200 until 1500", at, end, ok)
	}
	if _, _, ok := j.reclaimAt(0, 2400, IdleRule{Threshold: 1, IdleFor: 1200, Grace: 300}, 2400); ok {
		t.Error("a stretch of 1200 s reclaimed under idleFor 1200 s + grace")
	}
	if got := longIdle(c, rule); !reflect.DeepEqual(got, []bool{false, true, true, false}) {
		t.Errorf("long idle steps %v", got)
	}
	scaled := jobCurve{c: c, scale: 0.5}
	if scaled.memoryAt(0) != 500 {
		t.Errorf("on a GPU of half the memory the curve reads %d MiB, want 500", scaled.memoryAt(0))
	}
}

func TestPowerOfTwoSlices(t *testing.T) {
	s, err := newRightSizer(RightSizing{Arm: ArmUser, Config: rightsize.DefaultConfig()}, 1, 81920, false)
	if err != nil {
		t.Fatal(err)
	}
	for mib, want := range map[int64]int64{1: 1024, 1024: 1024, 1025: 2048, 20000: 32768, 40000: 65536, 70000: 0} {
		if got := s.powerOfTwo(mib); got != want {
			t.Errorf("user slice for a peak of %d MiB: %d, want %d", mib, got, want)
		}
	}
	if _, err := newRightSizer(RightSizing{Arm: "tailored"}, 1, 81920, false); err == nil {
		t.Error("an unknown arm accepted")
	}
	if _, err := newRightSizer(RightSizing{Arm: ArmRightSized}, 1, 81920, true); err == nil {
		t.Error("a profile without slices accepted for a right-sized arm")
	}
	if _, err := newRightSizer(RightSizing{Arm: ArmUser}, 1, 81920, true); err != nil {
		t.Errorf("a profile without slices refused the users' requests: %v", err)
	}
}

// oneWorkload is one 8-GPU node and n runs of one single-GPU workload, one every
// every seconds, each lasting duration.
func oneWorkload(n int, every, duration, checkpoint int64) ReplayInput {
	in := ReplayInput{Name: "workload", Nodes: oneNode(8), Queues: []trace.QueueSpec{{Name: "q", Weight: 1}}, Horizon: int64(n) * every}
	for i := range n {
		in.Jobs = append(in.Jobs, ReplayJob{Name: string(rune('a'+i/26)) + string(rune('a'+i%26)), Class: "train", Queue: "q", MinMember: 1, Tasks: 1,
			GPU: framework.GPURequest{Count: 1}, MilliCPU: 1000, Arrival: int64(i) * every, Duration: duration, CheckpointEvery: checkpoint})
	}
	return in
}

// sizedReplay runs arm on in with the jobs' curves drawn from cs only; prepare may
// change the arm's state first.
func sizedReplay(t *testing.T, in ReplayInput, arm string, cs []curves.Curve, prepare func(*rightSizer)) *report.RightSizingRun {
	t.Helper()
	r, err := newReplayer(Replay{Input: in, Profile: "tessera", Seed: 7, RightSizing: &RightSizing{Arm: arm, Config: rightsize.DefaultConfig()}})
	if err != nil {
		t.Fatal(err)
	}
	r.rs.curves = cs
	if prepare != nil {
		prepare(r.rs)
	}
	r.run()
	out := r.out.RightSizing
	if out == nil || out.Unfinished != 0 || out.Jobs != len(in.Jobs) {
		t.Fatalf("%s: %+v", arm, out)
	}
	return out
}

func steady(mib int64, steps int) []curves.Curve {
	c := curves.Curve{Pod: "steady"}
	for i := range steps {
		c.MemoryMiB = append(c.MemoryMiB, mib+int64(i%3)*500)
		c.Utilization = append(c.Utilization, 60)
	}
	return []curves.Curve{c}
}

// Runs of a workload using 10-11 GiB: whole GPUs take a GPU each; after three runs the
// recommender gives slices that share GPUs; knowing the workload's peak does at least as
// well, and knowing each run's does at least as well again.
func TestRightSizingSavesGPUHours(t *testing.T) {
	in := oneWorkload(24, 900, 3600, 1800)
	cs := steady(10000, 12)
	whole := sizedReplay(t, in, ArmWhole, cs, nil)
	sized := sizedReplay(t, in, ArmRightSized, cs, nil)
	workloadPeak := sizedReplay(t, in, ArmWorkloadPeak, cs, nil)
	perfect := sizedReplay(t, in, ArmPerfect, cs, nil)
	if workloadPeak.GPUHours > sized.GPUHours || perfect.GPUHours > workloadPeak.GPUHours || workloadPeak.OOMRestarts != 0 || workloadPeak.WholeJobs != 0 {
		t.Errorf("GPU-hours: right-sized %.2f, workload peak %.2f (%d OOM restarts, %d whole), perfect %.2f",
			sized.GPUHours, workloadPeak.GPUHours, workloadPeak.OOMRestarts, workloadPeak.WholeJobs, perfect.GPUHours)
	}
	if whole.GPUHours < 23.9 || whole.GPUHours > 24.1 || whole.AllocGPUHours != whole.GPUHours {
		t.Errorf("whole GPUs: %.2f GPU-hours (%.2f allocated), want 24, one per run-hour", whole.GPUHours, whole.AllocGPUHours)
	}
	if sized.GPUHours >= whole.GPUHours || perfect.GPUHours > sized.GPUHours || sized.OOMRestarts != 0 {
		t.Errorf("GPU-hours: whole %.2f, right-sized %.2f (%d OOM restarts), perfect %.2f", whole.GPUHours, sized.GPUHours, sized.OOMRestarts, perfect.GPUHours)
	}
	if again := sizedReplay(t, in, ArmRightSized, cs, nil); !reflect.DeepEqual(again, sized) {
		t.Errorf("the same arm and seed measured %+v, then %+v", sized, again)
	}
	// A request and a limit: the first runs ask the user's slice as their limit and
	// pack on it rather than on a whole GPU; later runs pack on the median peak and
	// burst into the GPU's free memory without pressure.
	burstable := sizedReplay(t, in, ArmBurstable, cs, nil)
	if burstable.WholeJobs != 0 || burstable.GPUHours > sized.GPUHours || burstable.OOMRestarts != 0 || burstable.PressureEvictions != 0 {
		t.Errorf("burstable: %.2f GPU-hours against right-sized %.2f, %d whole first, %d OOM restarts, %d pressure evictions",
			burstable.GPUHours, sized.GPUHours, burstable.WholeJobs, burstable.OOMRestarts, burstable.PressureEvictions)
	}
	if burstable.AllocGPUHours >= sized.AllocGPUHours {
		t.Errorf("burstable requests hold %.2f GPU-hours of slices, right-sized %.2f", burstable.AllocGPUHours, sized.AllocGPUHours)
	}
}

// Two pods share a GPU, one using far more than its request; a third pod's request
// fits beside them, and the memory used then passes 95% of the GPU: the pod furthest
// above its request is evicted, the others keep running.
func TestPressureEvictsTheBurster(t *testing.T) {
	in := ReplayInput{Name: "pressure", Nodes: oneNode(1), Queues: []trace.QueueSpec{{Name: "q", Weight: 1}}, Horizon: 3600}
	for i, name := range []string{"burster", "steady", "late"} {
		in.Jobs = append(in.Jobs, ReplayJob{Name: name, Class: "train", Queue: "q", MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 1},
			MilliCPU: 1000, Arrival: int64(i/2) * 600, Duration: 7200, CheckpointEvery: 1800})
	}
	r, err := newReplayer(Replay{Input: in, Profile: "tessera", Seed: 7, RightSizing: &RightSizing{Arm: ArmBurstable, Config: rightsize.DefaultConfig()}})
	if err != nil {
		t.Fatal(err)
	}
	use := map[string]int64{"burster": 50000, "steady": 15000, "late": 18000}
	limit := map[string]int64{"burster": 81920, "steady": 20000, "late": 20000}
	arriveAt := func(now int64) {
		r.now = now
		r.arrive()
		for a, j := range r.rs.jobs {
			if a.since < 0 && !a.started {
				j.curve = jobCurve{c: &steady(use[a.spec.Name], 24)[0], scale: 1}
				j.slice, j.limit = 20000, limit[a.spec.Name]
				r.rs.request(j)
			}
		}
		r.schedule()
		r.checkPlaced()
	}
	arriveAt(0)
	if r.rs.out.PressureEvictions != 0 {
		t.Fatalf("65,000-66,000 MiB used of 81,920: %d pressure evictions", r.rs.out.PressureEvictions)
	}
	arriveAt(600)
	running := map[string]bool{}
	for a := range r.rs.jobs {
		running[a.spec.Name] = a.since >= 0
	}
	if r.rs.out.PressureEvictions != 1 || running["burster"] || !running["steady"] || !running["late"] {
		t.Fatalf("a third request placed beside a burster: %d pressure evictions, running %v; want the burster evicted and the others running",
			r.rs.out.PressureEvictions, running)
	}
	for a, j := range r.rs.jobs {
		if a.spec.Name == "burster" && (j.slice < min(50000, j.limit) || j.pressureAt != 600) {
			t.Errorf("the evicted burster asks %d MiB next, limit %d (evicted at %d); want the 50,000 MiB it was evicted at, up to its limit", j.slice, j.limit, j.pressureAt)
		}
	}
}

// A run whose use passes its recommended slice fails, restarts with the bumped slice,
// and after two failures in a row gets the whole GPU back, and finishes.
func TestOutOfMemoryRestartsBumped(t *testing.T) {
	in := oneWorkload(1, 900, 3600, 0)
	w := workloadOf(&in.Jobs[0])
	var slices []int64
	out := sizedReplay(t, in, ArmRightSized, steady(20000, 6), func(s *rightSizer) {
		p := &rightsize.Profile{}
		for i := range 3 {
			p.Record(rightsize.Run{PeakMiB: 10000, FirstMiB: 2000, GPUMiB: 81920, End: epoch.Add(-timeHours(i + 1))}, s.Config)
		}
		s.profiles[w] = p
		slices = append(slices, s.recommend(w))
	})
	if out.OOMRestarts != 2 || out.OOMLostGPUHours <= 0 {
		t.Fatalf("a run using 20000 MiB on a %d MiB slice: %d OOM restarts, %.3f GPU-hours lost; want 2 (bumped once, then the whole GPU)",
			slices[0], out.OOMRestarts, out.OOMLostGPUHours)
	}
}

// idleLate is a curve busy for 40 minutes, then idle for 200.
func idleLate() []curves.Curve {
	c := curves.Curve{Pod: "idle"}
	for i := range 24 {
		c.MemoryMiB = append(c.MemoryMiB, 8000)
		u := 0
		if i < 4 {
			u = 80
		}
		c.Utilization = append(c.Utilization, u)
	}
	return []curves.Curve{c}
}

// An idle job is suspended after idleFor and the grace period, gives its GPU back
// until its curve turns busy, and finishes; a job that never checkpoints is spared by
// the opt-out arm.
func TestReclaimSuspendsIdleJobs(t *testing.T) {
	in := oneWorkload(2, 600, 8*3600, 1800)
	held := sizedReplay(t, in, ArmRightSized, idleLate(), nil)
	reclaimed := sizedReplay(t, in, ArmReclaim, idleLate(), nil)
	if reclaimed.Reclaims == 0 || reclaimed.ReturnedGPUHours <= 0 || reclaimed.GPUHours >= held.GPUHours {
		t.Fatalf("reclaim: %d suspensions returned %.2f GPU-hours; %.2f GPU-hours against %.2f held", reclaimed.Reclaims, reclaimed.ReturnedGPUHours, reclaimed.GPUHours, held.GPUHours)
	}
	if held.IdleGPUHours <= 0 || reclaimed.ReturnedGPUHours > reclaimed.IdleGPUHours {
		t.Errorf("idle GPU-hours %.2f held, %.2f with reclaim of which %.2f returned", held.IdleGPUHours, reclaimed.IdleGPUHours, reclaimed.ReturnedGPUHours)
	}
	if reclaimed.ReclaimLostGPUHours != 0 {
		t.Errorf("checkpoints every 30 minutes in a stretch idle for 90 lose %.3f GPU-hours", reclaimed.ReclaimLostGPUHours)
	}
	protected := oneWorkload(2, 600, 8*3600, 0)
	if out := sizedReplay(t, protected, ArmReclaimOptOut, idleLate(), nil); out.Reclaims != 0 {
		t.Errorf("jobs without checkpoints suspended %d times under the opt-out arm", out.Reclaims)
	}
	if out := sizedReplay(t, protected, ArmReclaim, idleLate(), nil); out.Reclaims == 0 || out.ReclaimLostGPUHours <= 0 {
		t.Errorf("jobs without checkpoints: %d suspensions losing %.3f GPU-hours", out.Reclaims, out.ReclaimLostGPUHours)
	}
}

func timeHours(h int) time.Duration { return time.Duration(h) * time.Hour }
