package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/report"
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

// Every autoscaler removes the idle nodes and boots them back for the second burst,
// whose jobs then wait for the boot; always on, nobody waits and all 32 node-hours
// are paid. Tessera's policy sets minNodes 0 (its default keeps 1), as the other
// autoscalers' node groups here have no minimum.
func TestAutoscaledReplayRemovesAndBootsNodes(t *testing.T) {
	const boot = 5 * time.Minute
	zero := int32(0)
	pol := &tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "to-zero"}, Spec: tesserav1.ScaleDownPolicySpec{MinNodes: &zero}}
	for _, profile := range []string{"tessera", "volcano"} {
		res, err := RunAutoscaled(Replay{Input: burstsInput(), Profile: profile, Seed: 42}, Autoscaling{BootDelay: boot, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		a := res.Autoscale
		on := a.Arm(profile, report.AlwaysOn)
		if on == nil || on.GPUNodeHours != 32 || on.MeanWaitSeconds != 0 || on.SavedPct != 0 {
			t.Fatalf("%s always on: %+v; want 32 node-h, no wait, nothing saved", profile, on)
		}
		// The second burst's 4 jobs of 20 wait for the boot.
		wantWait := 4 * boot.Seconds() / 20
		for _, rule := range autoscalersOf(profile) {
			arm := a.Arm(profile, rule)
			t.Logf("%s: %.1f node-h (%.1f%%, net %.1f%%), wait %.0fs", arm.Name(), arm.GPUNodeHours, arm.SavedPct, arm.NetSavedPct, arm.MeanWaitSeconds)
			// Volcano's enqueue counts the cluster as it is: with every node removed, the
			// overcommit plugin admits the late jobs only in a session after the nodes booted.
			slack := 0.0
			if profile != "tessera" {
				slack = 60
			}
			if arm.SavedPct < 40 || arm.NetSavedPct != arm.SavedPct || arm.MeanWaitSeconds < wantWait || arm.MeanWaitSeconds > wantWait+slack {
				t.Errorf("%s: saved %.1f%% (net %.1f%%), mean wait %gs; want over 40%%, nothing lost, and %gs (the boot delay, for the 4 late jobs)",
					arm.Name(), arm.SavedPct, arm.NetSavedPct, arm.MeanWaitSeconds, wantWait)
			}
			nodes := res.Autoscaled[rule].Nodes
			night, late := nodes[5*6], nodes[7*6] // at 5 h and 7 h
			if night != 0 || late != 4 || slices.Max(nodes) != 4 {
				t.Errorf("%s: %d nodes at 5 h, %d at 7 h; want none, then all 4 back", arm.Name(), night, late)
			}
			if res.Autoscaled[rule].NodesRemoved < 4 {
				t.Errorf("%s: removed %d nodes", arm.Name(), res.Autoscaled[rule].NodesRemoved)
			}
		}
	}
}

// The result's replay is the always-on run, exactly RunReplay's.
func TestAutoscaledAlwaysOnIsThePlainReplay(t *testing.T) {
	in := burstsInput()
	plain := replay(t, "tessera", in)
	res, err := RunAutoscaled(Replay{Input: in, Profile: "tessera", Seed: 42}, Autoscaling{BootDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	on := res.Replay
	if on != res.Autoscaled[report.AlwaysOn] || !slices.Equal(on.WaitSeconds, plain.WaitSeconds) || on.MeanAllocPct != plain.MeanAllocPct || on.GPUNodeHours != plain.GPUNodeHours {
		t.Errorf("always-on run differs from the plain replay: %+v vs %+v", on, plain)
	}
}

func TestAutoscalingRejectsUnknownRule(t *testing.T) {
	if _, err := RunReplay(Replay{Input: burstsInput(), Profile: "tessera", Autoscale: &Autoscaling{Rule: "cluster-autoscaler"}}); err == nil {
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
