package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// burstsInput is 4 nodes of 8 GPUs: 16 jobs of 2 GPUs for an hour at 0, nothing, then
// 4 jobs of 8 GPUs for an hour at 6 h; an 8-hour window.
func burstsInput() ReplayInput {
	var nodes []trace.NodeSpec
	for i := range 4 {
		nodes = append(nodes, trace.NodeSpec{Name: fmt.Sprintf("n%d", i), MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "A100-80GB", GPUMemoryMiB: 81920})
	}
	in := ReplayInput{Name: "bursts", Nodes: nodes, Horizon: 8 * 3600}
	for i := range 16 {
		in.Jobs = append(in.Jobs, ReplayJob{Name: fmt.Sprintf("a%02d", i), MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 2}, MilliCPU: 1000, Duration: 3600})
	}
	for i := range 4 {
		in.Jobs = append(in.Jobs, ReplayJob{Name: fmt.Sprintf("b%d", i), MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 8}, MilliCPU: 1000, Arrival: 6 * 3600, Duration: 3600})
	}
	return in
}

// Both rules remove the idle nodes and boot them back for the second burst, whose
// jobs then wait for the boot; always on, nobody waits and all 32 node-hours are paid.
func TestAutoscaledReplayRemovesAndBootsNodes(t *testing.T) {
	const boot = 5 * time.Minute
	res, err := RunAutoscaled(Replay{Input: burstsInput(), Profile: "tessera", Seed: 42}, Autoscaling{BootDelay: boot})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Savings
	t.Logf("always on %.1f node-h, wait %.0fs; tessera %.1f node-h (%.1f%%), wait %.0fs; CA-like %.1f node-h (%.1f%%), wait %.0fs",
		s.GPUNodeHoursAlwaysOn, s.MeanWaitSecondsAlwaysOn, s.GPUNodeHours, s.SavedPct, s.MeanWaitSeconds, s.CALike.GPUNodeHours, s.CALike.SavedPct, s.CALike.MeanWaitSeconds)
	if s.GPUNodeHoursAlwaysOn != 32 || s.MeanWaitSecondsAlwaysOn != 0 {
		t.Errorf("always on: %g node-h, mean wait %gs; want 32 and 0", s.GPUNodeHoursAlwaysOn, s.MeanWaitSecondsAlwaysOn)
	}
	// The second burst's 4 jobs of 20 wait for the boot.
	wantWait := 4 * boot.Seconds() / 20
	for _, rule := range []struct {
		name        string
		saved, wait float64
	}{{"tessera", s.SavedPct, s.MeanWaitSeconds}, {"CA-like", s.CALike.SavedPct, s.CALike.MeanWaitSeconds}} {
		if rule.saved < 40 || rule.wait != wantWait {
			t.Errorf("%s: saved %.1f%%, mean wait %gs; want over 40%% and %gs (the boot delay, for the 4 late jobs)", rule.name, rule.saved, rule.wait, wantWait)
		}
	}
	for name, rp := range map[string][]int{"tessera": res.Replay.Nodes, "CA-like": s.CALikeReplay.Nodes} {
		night, late := rp[5*6], rp[7*6] // at 5 h and 7 h
		if night != 0 || late != 4 || slices.Max(rp) != 4 {
			t.Errorf("%s: %d nodes at 5 h, %d at 7 h; want none, then all 4 back", name, night, late)
		}
	}
	if res.Replay.NodesRemoved < 4 || res.Replay.GPUNodeHoursSaved != s.GPUNodeHoursAlwaysOn-s.GPUNodeHours {
		t.Errorf("removed %d nodes, saved %g node-h", res.Replay.NodesRemoved, res.Replay.GPUNodeHoursSaved)
	}
}

// Without an autoscaler the replay is the always-on run: the savings' always-on
// figures are exactly RunReplay's.
func TestAutoscaledAlwaysOnIsThePlainReplay(t *testing.T) {
	in := burstsInput()
	plain := replay(t, "tessera", in)
	res, err := RunAutoscaled(Replay{Input: in, Profile: "tessera", Seed: 42}, Autoscaling{BootDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	on := res.Savings.AlwaysOn
	if !slices.Equal(on.WaitSeconds, plain.WaitSeconds) || on.MeanAllocPct != plain.MeanAllocPct || on.GPUNodeHours != plain.GPUNodeHours {
		t.Errorf("always-on run differs from the plain replay: %+v vs %+v", on, plain)
	}
}

func TestAutoscalingRejectsUnknownRule(t *testing.T) {
	if _, err := RunReplay(Replay{Input: burstsInput(), Profile: "tessera", Autoscale: &Autoscaling{Rule: "karpenter"}}); err == nil {
		t.Error("an unknown rule was accepted")
	}
}

// Scale-up adds back the fewest removed nodes: one 8-GPU job waiting with three nodes
// removed boots one, and a job that fits on the node left boots none.
func TestScaleUpBootsTheFewestNodes(t *testing.T) {
	in := burstsInput()
	in.Jobs = []ReplayJob{
		{Name: "small", MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 2}, MilliCPU: 1000, Duration: 3600},
		{Name: "big", MinMember: 1, Tasks: 1, GPU: framework.GPURequest{Count: 8}, MilliCPU: 1000, Arrival: 60, Duration: 3600},
	}
	r, err := newReplayer(Replay{Input: in, Profile: "tessera", Seed: 42, Autoscale: &Autoscaling{Rule: RuleTessera, BootDelay: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	r.fleet.removed = append(r.fleet.removed, r.snap.Nodes[1:]...)
	r.snap.RemoveNodes("n1", "n2", "n3")
	r.arrive() // small, at 0
	r.schedule()
	if boot := r.nodesToBoot(); len(boot) != 0 || len(r.active) != 1 {
		t.Fatalf("booted %d nodes for a job that runs on the node left", len(boot))
	}
	r.now = 60
	r.arrive() // big; small holds 2 of n0's 8 GPUs
	r.schedule()
	boot := r.nodesToBoot()
	if len(boot) != 1 {
		t.Fatalf("booted %d nodes for one 8-GPU job, want 1", len(boot))
	}
	r.autoscale()
	if at, ok := r.fleet.nextReady(); !ok || at != 120 || r.paidNodes() != 2 {
		t.Fatalf("boot ready at %d (%v), %d nodes paid; want 120 and 2", at, ok, r.paidNodes())
	}
	for _, n := range append(r.fleet.removed, boot...) {
		if len(n.Tasks) != 0 || n.Used.GPU != 0 {
			t.Errorf("node %s holds %d tasks after the what-if sessions", n.Name, len(n.Tasks))
		}
	}
}
