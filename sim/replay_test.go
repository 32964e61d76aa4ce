package sim

import (
	"math"
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// TestReplayOperatorScenario replays the built-in scenario with Tessera and the default
// scheduler's strategy: every job must start under Tessera, none may starve, and
// Tessera's useful GPU utilisation must beat the default's.
func TestReplayOperatorScenario(t *testing.T) {
	sc, err := trace.BuildScenario("operator", 42)
	if err != nil {
		t.Fatal(err)
	}
	in := ScenarioInput(sc)
	util := map[string]float64{}
	for _, p := range []string{"kube-default", "tessera"} {
		r, err := RunReplay(Replay{Input: in, Profile: p, Seed: 42})
		if err != nil {
			t.Fatal(err)
		}
		rp := r.Replay
		t.Logf("%-12s alloc=%.1f%% util=%.1f%% started=%d/%d preemptions=%d starved=%d wall=%.2fs",
			p, rp.MeanAllocPct, rp.MeanUtilPct, len(rp.WaitSeconds), len(in.Jobs), rp.Preemptions, rp.JobsStarved, r.WallSeconds)
		util[p] = rp.MeanUtilPct
		if p == "tessera" && (rp.JobsStarved != 0 || len(rp.WaitSeconds) != len(in.Jobs)) {
			t.Errorf("tessera: %d jobs starved, %d of %d started", rp.JobsStarved, len(rp.WaitSeconds), len(in.Jobs))
		}
		if rp.MeanAllocPct < rp.MeanUtilPct-1e-9 || rp.MeanAllocPct > 100 {
			t.Errorf("%s: allocation %.2f%% below utilisation %.2f%% or above 100", p, rp.MeanAllocPct, rp.MeanUtilPct)
		}
		// Per-queue series run with the samples; under Tessera no queue exceeds its capability.
		if len(rp.Queues) != len(in.Queues) {
			t.Fatalf("%s: %d queue series, want %d", p, len(rp.Queues), len(in.Queues))
		}
		for _, q := range rp.Queues {
			if len(q.AllocGPUs) != len(rp.Times) || len(q.PendingJobs) != len(rp.Times) {
				t.Errorf("%s: queue %s has %d/%d samples, want %d", p, q.Name, len(q.AllocGPUs), len(q.PendingJobs), len(rp.Times))
			}
			if p == "tessera" && q.CapabilityGPUs > 0 && slices.Max(q.AllocGPUs) > float64(q.CapabilityGPUs) {
				t.Errorf("tessera: queue %s holds %g GPUs, capability %d", q.Name, slices.Max(q.AllocGPUs), q.CapabilityGPUs)
			}
		}
	}
	if util["tessera"] <= util["kube-default"] {
		t.Errorf("tessera utilisation %.1f%% does not beat kube-default's %.1f%%", util["tessera"], util["kube-default"])
	}
}

func oneNode(gpus int) []trace.NodeSpec {
	return []trace.NodeSpec{{Name: "n0", MilliCPU: 128000, MemoryMiB: 1 << 20, GPUs: gpus, Model: "A100-80GB", GPUMemoryMiB: 81920}}
}

func replay(t *testing.T, profile string, in ReplayInput) *report.Replay {
	t.Helper()
	r, err := RunReplay(Replay{Input: in, Profile: profile, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	return r.Replay
}

func TestReplayGangProgressesOnlyWhenWhole(t *testing.T) {
	in := ReplayInput{Name: "gang", Nodes: oneNode(8), Queues: []trace.QueueSpec{{Name: "q", Weight: 1, Reclaimable: true}}, Horizon: 3600,
		Jobs: []ReplayJob{{Name: "two-nodes", Queue: "q", MinMember: 2, Tasks: 2, GPU: framework.GPURequest{Count: 8}, MilliCPU: 1000, Duration: 3600}}}
	// Without gangs one pod binds and holds all 8 GPUs for nothing.
	kd := replay(t, "kube-default", in)
	if kd.MeanAllocPct < 99 || kd.MeanUtilPct != 0 || kd.CensoredWaits != 1 || kd.JobsStarved != 1 {
		t.Errorf("kube-default: alloc %.1f%% util %.1f%% never started %d starved %d; want 100%% held, no work, starved",
			kd.MeanAllocPct, kd.MeanUtilPct, kd.CensoredWaits, kd.JobsStarved)
	}
	// The job that never started waits until the end of the run (48 hours after the
	// last arrival): a censored wait, counted rather than left out.
	if !slices.Equal(kd.WaitSeconds, []float64{drainAfter}) || !slices.Equal(kd.WaitGPUs, []float64{16}) {
		t.Errorf("kube-default: waits %v of %v GPUs, want the censored wait %d of 16 GPUs", kd.WaitSeconds, kd.WaitGPUs, drainAfter)
	}
	summary := report.Summarize([]report.Result{{Policy: "kube-default", Replay: kd}})[0].Replay
	if summary.MeanWaitSeconds != drainAfter || summary.CensoredWaits != 1 || summary.JobsWaitedOver12h != 1 || summary.MaxWaitSeconds != drainAfter {
		t.Errorf("summary: mean wait %v, censored %d, over 12h %d, max %v", summary.MeanWaitSeconds, summary.CensoredWaits, summary.JobsWaitedOver12h, summary.MaxWaitSeconds)
	}
	// Tessera never admits a gang that can never fit and holds nothing.
	ts := replay(t, "tessera", in)
	if ts.MeanAllocPct != 0 || ts.JobsStarved != 1 || ts.AllDoneHours != 0 {
		t.Errorf("tessera: alloc %.1f%% starved %d; want nothing held", ts.MeanAllocPct, ts.JobsStarved)
	}
}

func TestReplaySliceUtilisation(t *testing.T) {
	in := ReplayInput{Name: "slice", Nodes: oneNode(1), Queues: []trace.QueueSpec{{Name: "q", Weight: 1, Reclaimable: true}}, Horizon: 3600,
		Jobs: []ReplayJob{{Name: "notebook", Queue: "q", MinMember: 1, Tasks: 1, GPU: framework.GPURequest{MemoryMiB: 20480}, MilliCPU: 1000, Duration: 3600}}}
	kd, ts := replay(t, "kube-default", in), replay(t, "tessera", in)
	if kd.MeanAllocPct < 99.9 || kd.MeanUtilPct < 24.9 || kd.MeanUtilPct > 25.1 {
		t.Errorf("kube-default: alloc %.2f%% util %.2f%%; want the whole GPU held, a quarter used", kd.MeanAllocPct, kd.MeanUtilPct)
	}
	if ts.MeanAllocPct < 24.9 || ts.MeanAllocPct > 25.1 || ts.MeanUtilPct != ts.MeanAllocPct {
		t.Errorf("tessera: alloc %.2f%% util %.2f%%; want a quarter held and used", ts.MeanAllocPct, ts.MeanUtilPct)
	}
	// Its wait weighs as a quarter of a GPU, whatever GPU the scheduler gave it.
	if !slices.Equal(kd.WaitGPUs, []float64{0.25}) || !slices.Equal(ts.WaitGPUs, []float64{0.25}) {
		t.Errorf("wait weights %v, %v; want a quarter GPU", kd.WaitGPUs, ts.WaitGPUs)
	}
}

// A preempted job keeps the work up to its last 10-minute checkpoint, loses the rest,
// waits to restart and finishes later.
func TestReplayPreemptionKeepsCheckpoint(t *testing.T) {
	in := ReplayInput{Name: "preempt", Nodes: oneNode(8), Queues: []trace.QueueSpec{{Name: "q", Weight: 1, Reclaimable: true}}, Horizon: 4 * 3600,
		Jobs: []ReplayJob{
			{Name: "low", Queue: "q", Priority: 1, MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 8}, MilliCPU: 1000, Duration: 2 * 3600, CheckpointEvery: 600},
			{Name: "high", Queue: "q", Priority: 100, MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 8}, MilliCPU: 1000, Arrival: 35 * 60, Duration: 3600},
		}}
	rp := replay(t, "tessera", in)
	// Waits are recorded as jobs complete: high first, at once; low waited an hour to restart.
	if rp.Preemptions != 1 || !slices.Equal(rp.WaitSeconds, []float64{0, 3600}) {
		t.Fatalf("preemptions %d, waits %v; want high to start at once by preempting low, and low to wait 3600 s to restart", rp.Preemptions, rp.WaitSeconds)
	}
	if want := 5.0 / 60 * 8; math.Abs(rp.LostGPUHours-want) > 1e-9 || rp.Evictions[EvictedByPreemption] != 1 {
		t.Errorf("lost %g GPU-hours, evictions %v; want %g (5 minutes of 8 GPUs) and one preemption", rp.LostGPUHours, rp.Evictions, want)
	}
	// Busy for 35 min (low) + 60 min (high) + 90 min (low, from its 30-minute checkpoint).
	busyUntil := 0.0
	for i, a := range rp.AllocPct {
		if a > 0 {
			busyUntil = rp.Times[i]
		}
	}
	if busyUntil < 3 || busyUntil > 3+1.0/6+1e-9 {
		t.Errorf("cluster busy until %.2f h, want 3.0-3.17 h (185 minutes of work)", busyUntil)
	}
	if want := 185.0 / 60; math.Abs(rp.AllDoneHours-want) > 1e-9 {
		t.Errorf("all jobs done at %.3f h, want %.3f h", rp.AllDoneHours, want)
	}
	// Completion times, parallel to the waits: high ran its hour at once; low waited an
	// hour to restart and ran its 5 lost minutes again: 35 + 60 + 90 minutes.
	if !slices.Equal(rp.JCTSeconds, []float64{3600, 185 * 60}) || !slices.Equal(rp.WaitGPUs, []float64{8, 8}) {
		t.Errorf("JCTs %v, GPUs %v; want [3600 11100], [8 8]", rp.JCTSeconds, rp.WaitGPUs)
	}
}
