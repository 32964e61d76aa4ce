package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestRightSizingPoolsArms(t *testing.T) {
	run := func(arm string, seed int64, gpuHours, idle, returned float64, ooms int) Result {
		return Result{Policy: arm, Seed: seed, Trace: "t", Replay: &Replay{}, RightSizing: &RightSizingRun{Arm: arm, GPUHours: gpuHours, AllocGPUHours: gpuHours,
			NodeHours: gpuHours / 8, Jobs: 100, SizedJobs: 50, OOMRestarts: ooms, OOMLostGPUHours: 1, IdleGPUHours: idle, ReturnedGPUHours: returned}}
	}
	results := []Result{
		run("p/whole", 1, 100, 10, 0, 0), run("p/whole", 2, 120, 10, 0, 0),
		run("p/rightsized", 1, 80, 10, 0, 1), run("p/rightsized", 2, 90, 10, 0, 0),
		run("p/rightsized+reclaim", 1, 70, 10, 6, 1), run("p/rightsized+reclaim", 2, 80, 10, 4, 0),
		run("p/perfect", 1, 50, 10, 0, 0), run("p/perfect", 2, 70, 10, 0, 0),
	}
	s := Summarize(results)
	if len(s) != 4 || s[0].RightSizing == nil || s[0].RightSizing != s[3].RightSizing {
		t.Fatalf("summaries %d, right-sizing %v", len(s), s[0].RightSizing)
	}
	sized := s[0].RightSizing.find("p/rightsized")
	// Means per run: whole 110, right-sized 85, perfect 60.
	if sized.GPUHours != 85 || math.Abs(*sized.SavingVsWhole-25.0/110) > 1e-9 || math.Abs(*sized.ShareOfPerfectSaving-0.5) > 1e-9 {
		t.Errorf("right-sized: %+v", *sized)
	}
	if sized.OOMRestarts != 1 || sized.OOMRestartShare != 0.01 || math.Abs(sized.LostShare-2.0/170) > 1e-9 {
		t.Errorf("OOM figures: %d restarts, share %g, lost %g", sized.OOMRestarts, sized.OOMRestartShare, sized.LostShare)
	}
	if r := s[0].RightSizing.find("p/rightsized+reclaim"); r.IdleReturnedShare != 0.5 || r.ReturnedGPUHours != 5 {
		t.Errorf("reclaim returned %g of the idle GPU-hours (%g per run)", r.IdleReturnedShare, r.ReturnedGPUHours)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, results, s); err != nil || !strings.Contains(b.String(), "GPU right-sizing and idle reclaim") {
		t.Fatalf("table (%v):\n%s", err, b.String())
	}
}
