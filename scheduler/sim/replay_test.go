package sim

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/sim/trace"
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
		r, err := RunReplay(Replay{Input: in, Policy: p, Seed: 42})
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
	}
	if util["tessera"] <= util["kube-default"] {
		t.Errorf("tessera utilisation %.1f%% does not beat kube-default's %.1f%%", util["tessera"], util["kube-default"])
	}
}
