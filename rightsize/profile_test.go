package rightsize

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func runs(p *Profile, peaks ...int64) {
	for i, mib := range peaks {
		p.Record(Run{PeakMiB: mib, FirstMiB: mib / 4, GPUMiB: 81920, End: t0.Add(time.Duration(i) * time.Hour)}, Config{})
	}
}

func TestRecommendAfterMinRuns(t *testing.T) {
	var p Profile
	runs(&p, 20000, 21000)
	if r := p.Recommend(81920, Config{}); r.MiB != 0 || r.Reason != "2 of 3 runs seen" {
		t.Fatalf("after 2 runs: %+v", r)
	}
	runs(&p, 22000)
	r := p.Recommend(81920, Config{})
	// p95 of {20000, 21000, 22000} is the bucket holding 22000 (upper bound < 23100),
	// + 15%, rounded up to GiB.
	if r.MiB < 22000*115/100 || r.MiB > 23100*115/100+1024 || r.MiB%1024 != 0 {
		t.Fatalf("recommendation %d MiB (%s)", r.MiB, r.Reason)
	}
}

// A recommendation is rounded up to an 80th of the GPU: 1 GiB of an 80 GiB GPU, 250 MiB
// of a 20000 MiB one; a configured step replaces it.
func TestRoundedToTheGPUsMemory(t *testing.T) {
	var p Profile
	runs(&p, 5000, 5000, 5000)
	for _, c := range []struct {
		gpuMiB, roundMiB, step int64
	}{{81920, 0, 1024}, {20000, 0, 250}, {20000, 512, 512}} {
		r := p.Recommend(c.gpuMiB, Config{RoundMiB: c.roundMiB})
		if r.MiB < 5000*115/100 || r.MiB%c.step != 0 || r.MiB-c.step >= 5250*115/100 {
			t.Errorf("GPU of %d MiB, RoundMiB %d: %d MiB, want 115%% of the p95 rounded up to %d MiB", c.gpuMiB, c.roundMiB, r.MiB, c.step)
		}
	}
}

func TestRecentRunsWeighMore(t *testing.T) {
	var p Profile
	c := Config{HalfLife: time.Hour, Percentile: 0.5}
	for i := range 10 {
		p.Record(Run{PeakMiB: 40000, GPUMiB: 81920, End: t0.Add(time.Duration(i) * time.Minute)}, c)
	}
	for i := range 3 {
		p.Record(Run{PeakMiB: 10000, GPUMiB: 81920, End: t0.Add(48*time.Hour + time.Duration(i)*time.Minute)}, c)
	}
	if r := p.Recommend(81920, c); r.MiB > 13*1024 {
		t.Fatalf("old peaks of 40000 MiB still decide the median two days later: %+v", r)
	}
}

func TestOOMBumpsThenFallsBack(t *testing.T) {
	var p Profile
	runs(&p, 10000, 10000, 10000)
	first := p.Recommend(81920, Config{}).MiB
	p.Record(Run{PeakMiB: first, GPUMiB: 81920, LimitMiB: first, OOM: true, End: t0.Add(10 * time.Hour)}, Config{})
	second := p.Recommend(81920, Config{}).MiB
	if second < first*12/10 {
		t.Fatalf("after an OOM at %d MiB the next slice is %d MiB, want ≥ 1.2x", first, second)
	}
	p.Record(Run{PeakMiB: second, GPUMiB: 81920, LimitMiB: second, OOM: true, End: t0.Add(11 * time.Hour)}, Config{})
	if r := p.Recommend(81920, Config{}); r.MiB != 0 {
		t.Fatalf("two OOMs in a row still recommend %+v", r)
	}
}

func TestSuccessClearsOOMs(t *testing.T) {
	var p Profile
	runs(&p, 10000, 10000, 10000)
	first := p.Recommend(81920, Config{}).MiB
	p.Record(Run{PeakMiB: first, LimitMiB: first, GPUMiB: 81920, OOM: true, End: t0.Add(5 * time.Hour)}, Config{})
	next := p.Recommend(81920, Config{}).MiB
	p.Record(Run{PeakMiB: first + 100, LimitMiB: next, GPUMiB: 81920, End: t0.Add(6 * time.Hour)}, Config{})
	if p.OOMs != 0 || p.FloorMiB != 0 {
		t.Fatalf("a run that succeeded at the bumped slice leaves OOMs=%d floor=%d", p.OOMs, p.FloorMiB)
	}
}

func TestNoSliceWorthMaking(t *testing.T) {
	var p Profile
	runs(&p, 70000, 70000, 70000)
	if r := p.Recommend(81920, Config{}); r.MiB != 0 {
		t.Fatalf("a workload using most of the GPU gets a slice: %+v", r)
	}
}

func TestPreallocation(t *testing.T) {
	var p Profile
	for i := range 3 {
		p.Record(Run{PeakMiB: 61440, FirstMiB: 61440, GPUMiB: 81920, End: t0.Add(time.Duration(i) * time.Hour)}, Config{})
	}
	if r := p.Recommend(81920, Config{}); r.MiB != 0 || !p.Preallocates {
		t.Fatalf("JAX-style preallocation (75%% from the start) gets %+v", r)
	}
	if Preallocated(2000, 61440, 81920) || Preallocated(30000, 30000, 81920) {
		t.Fatal("growth from a small start, or a small steady use, taken for preallocation")
	}
}

func TestOutOfMemory(t *testing.T) {
	for _, c := range []struct {
		msg         string
		peak, limit int64
		want        bool
	}{
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1000, 20480, true},
		{"RuntimeError: CUDA error: out of memory", 0, 0, true},
		{"exit 1", 20400, 20480, true},
		{"exit 1", 10000, 20480, false},
		{"exit 1", 80000, 0, false},
	} {
		if got := OutOfMemory(c.msg, c.peak, c.limit); got != c.want {
			t.Errorf("OutOfMemory(%q, %d, %d) = %v", c.msg, c.peak, c.limit, got)
		}
	}
}

func TestHistogramRebaseKeepsPercentiles(t *testing.T) {
	var h Histogram
	h.Add(1000, t0, time.Hour)
	h.Add(5000, t0.Add(time.Minute), time.Hour)
	before, _ := h.Percentile(0.5)
	h.rebase(t0.Add(10*time.Hour), time.Hour)
	after, _ := h.Percentile(0.5)
	if before != after {
		t.Fatalf("median %d before rebasing, %d after", before, after)
	}
	h.Add(5000, t0.Add(200*time.Hour), time.Hour) // forces a rebase
	if p, _ := h.Percentile(0.1); p < 5000 {
		t.Fatalf("a run 200 half-lives later does not dominate: p10 = %d", p)
	}
}
