package rightsize

import (
	"math"
	"testing"
	"time"
)

const gpu80 = 81920

// history is a profile of runs with the given peaks, an hour apart.
func history(peaks ...int64) *Profile {
	p := &Profile{}
	runs(p, peaks...)
	return p
}

// The request is the target percentile of the runs' peaks plus the margin (p50 by
// default; p90 with VPA's target-memory-percentile), the limit the upper-bound
// percentile (p95) plus the margin, widened by the confidence factor, as VPA's target
// and upper bound.
func TestBurstablePercentiles(t *testing.T) {
	// 20 runs ending at once (equal weights) with peaks 10000 ... 29000 MiB.
	var p Profile
	for i := range 20 {
		p.Record(Run{PeakMiB: int64(10000 + 1000*i), FirstMiB: 1000, GPUMiB: gpu80, End: t0}, Config{})
	}
	// p50 of 20 equally weighted runs is the 10th peak (19000), in a bucket ending
	// below 19950.
	if b := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{}); b.RequestMiB < 19000*115/100 || b.RequestMiB > 19950*115/100+1024 {
		t.Errorf("request %d MiB, want p50 (19000) + 15%% (%s)", b.RequestMiB, b.Reason)
	}
	b := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{RequestPercentile: 0.9})
	// p90 is the 18th peak (27000), in a bucket ending below 28350; p95 the 19th
	// (28000), below 29400.
	if b.RequestMiB < 27000*115/100 || b.RequestMiB > 28350*115/100+1024 {
		t.Errorf("request %d MiB, want p90 (27000) + 15%% (%s)", b.RequestMiB, b.Reason)
	}
	wantLimit := func(upper float64) float64 { return upper * 1.15 * (1 + 1.0/20) }
	if float64(b.LimitMiB) < wantLimit(28000) || float64(b.LimitMiB) > wantLimit(29400)+1024 {
		t.Errorf("limit %d MiB, want p95 (28000) + 15%% x1.05 (%s)", b.LimitMiB, b.Reason)
	}
	if b.RequestMiB%1024 != 0 || b.LimitMiB%1024 != 0 {
		t.Errorf("request %d, limit %d MiB not rounded to 1 GiB", b.RequestMiB, b.LimitMiB)
	}
}

// With few runs the limit widens (x1.33 at 3 runs, x1.1 at 10), the request does not.
func TestBurstableConfidenceWidensTheLimit(t *testing.T) {
	few := history(20000, 20000, 20000).RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{})
	many := history(20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000).RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{})
	if few.RequestMiB != many.RequestMiB {
		t.Errorf("request %d MiB after 3 runs, %d after 10: the confidence changes only the limit", few.RequestMiB, many.RequestMiB)
	}
	ratio := float64(few.LimitMiB) / float64(many.LimitMiB)
	if want := (1 + 1.0/3) / (1 + 1.0/10); math.Abs(ratio-want) > 0.05 {
		t.Errorf("limit %d MiB after 3 runs, %d after 10: ratio %.3f, want %.3f", few.LimitMiB, many.LimitMiB, ratio, want)
	}
	// Its confidence never lifts the limit above the GPU.
	if b := history(60000, 60000, 60000).RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{}); b.LimitMiB != gpu80 || b.RequestMiB >= gpu80 {
		t.Errorf("60000 MiB peaks on an 80 GiB GPU: %+v", b)
	}
	if got := (Config{}).Confidence(0); !math.IsInf(got, 1) {
		t.Errorf("confidence factor without runs %g, want +Inf", got)
	}
}

// A run that ran out of memory at its limit raises the next limit by the OOM bump;
// two in a row fall back to the user's request.
func TestBurstableOOMBumpRaisesTheLimit(t *testing.T) {
	p := history(10000, 10000, 10000, 10000, 10000, 10000, 10000, 10000, 10000, 10000)
	first := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{})
	p.Record(Run{PeakMiB: first.LimitMiB, LimitMiB: first.LimitMiB, GPUMiB: gpu80, OOM: true, End: t0.Add(20 * time.Hour)}, Config{})
	next := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{})
	if next.LimitMiB < first.LimitMiB*12/10 {
		t.Errorf("after running out at a limit of %d MiB the next limit is %d, want at least 1.2x", first.LimitMiB, next.LimitMiB)
	}
	if next.RequestMiB >= next.LimitMiB {
		t.Errorf("after one OOM the request %d MiB reaches the limit %d", next.RequestMiB, next.LimitMiB)
	}
	p.Record(Run{PeakMiB: next.LimitMiB, LimitMiB: next.LimitMiB, GPUMiB: gpu80, OOM: true, End: t0.Add(21 * time.Hour)}, Config{})
	if b := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768}, Config{}); b.RequestMiB != 32768 || b.LimitMiB != 32768 {
		t.Errorf("two OOMs in a row: %+v, want the user's 32768 MiB as request and limit", b)
	}
}

// From its first run a workload gets its request from the first prior with enough runs
// and, as its limit, the user's request or the prior's upper bound if that is more;
// with no prior, the user's request.
func TestBurstableFirstRunPriors(t *testing.T) {
	var none Profile
	class := history(8000, 8000, 9000, 9000)
	namespace := history(30000, 30000, 30000)
	young := history(5000)
	b := none.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768, Priors: []*Profile{young, class, namespace}}, Config{})
	if b.LimitMiB != 32768 || b.RequestMiB < 9000*115/100 || b.RequestMiB > 9450*115/100+1024 {
		t.Errorf("first run with a class prior: %+v, want request p90 of the class + 15%%, limit 32768", b)
	}
	b = none.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 16384, Priors: []*Profile{namespace}}, Config{})
	if b.LimitMiB < 30000*115/100 || b.RequestMiB > b.LimitMiB || b.RequestMiB < 30000 {
		t.Errorf("a prior above the user's request: %+v, want the prior's p95 + 15%% as the limit, its p50 + 15%% as the request", b)
	}
	b = none.RecommendBurstable(BurstableInput{GPUMiB: gpu80, Priors: []*Profile{class}}, Config{})
	if b.LimitMiB != gpu80 || b.RequestMiB >= 20000 {
		t.Errorf("a user asking a whole GPU: %+v, want the prior's request and the GPU as limit", b)
	}
	b = none.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768, Priors: []*Profile{young}}, Config{})
	if b.RequestMiB != 32768 || b.LimitMiB != 32768 {
		t.Errorf("no prior with enough runs: %+v, want the user's request", b)
	}
	// The workload's own runs, fewer than MinRuns, raise a prior's request.
	own := history(20000)
	if b := own.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768, Priors: []*Profile{class}}, Config{}); b.RequestMiB < 20000 {
		t.Errorf("a run of 20000 MiB seen, the prior's 9000: request %d MiB", b.RequestMiB)
	}
}

// Live peaks of running runs count as history: two finished runs and one running
// make a recommendation, and a live peak above the others raises it; the profile
// itself is left as it was.
func TestBurstableLivePeaks(t *testing.T) {
	p := history(10000, 10000)
	if b := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768}, Config{}); b.RequestMiB != 32768 {
		t.Fatalf("2 runs and no prior: %+v", b)
	}
	b := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768, Live: []int64{10000}, Now: t0.Add(3 * time.Hour)}, Config{})
	if b.RequestMiB >= 32768 || b.RequestMiB < 10000 {
		t.Errorf("2 runs and a live one: %+v, want a recommendation", b)
	}
	raised := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80, UserMiB: 32768, Live: []int64{20000, 20000, 20000}, Now: t0.Add(3 * time.Hour)}, Config{})
	if raised.RequestMiB < 20000 {
		t.Errorf("live peaks of 20000 MiB: request %d MiB", raised.RequestMiB)
	}
	if p.Runs != 2 || len(p.Peaks.Weights) != 1 {
		t.Errorf("live peaks were recorded into the profile: %d runs, %d buckets", p.Runs, len(p.Peaks.Weights))
	}
}

func TestBurstablePreallocatesKeepsTheRequest(t *testing.T) {
	p := &Profile{}
	for i := range 3 {
		p.Record(Run{PeakMiB: 61440, FirstMiB: 61440, GPUMiB: gpu80, End: t0.Add(time.Duration(i) * time.Hour)}, Config{})
	}
	if b := p.RecommendBurstable(BurstableInput{GPUMiB: gpu80}, Config{}); b.RequestMiB != 0 || b.LimitMiB != 0 {
		t.Errorf("a preallocating workload asking a whole GPU: %+v", b)
	}
}
