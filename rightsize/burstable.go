package rightsize

import (
	"fmt"
	"maps"
	"math"
	"time"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Burstable is a GPU-memory request and limit for a workload's next run: the scheduler
// packs GPUs on the request, and the run may use memory above it, up to the limit,
// while its GPU has that memory free; above the limit it runs out of memory.
type Burstable struct {
	// RequestMiB is the memory to pack on: the workload's typical peak.
	RequestMiB int64
	// LimitMiB is the most it may use: near the workload's upper bound, at most the
	// GPU's memory. Both are 0 for a whole GPU.
	LimitMiB int64
	// Reason says how they were made.
	Reason string
}

// BurstableInput is what a burstable recommendation is made from besides the
// workload's own finished runs.
type BurstableInput struct {
	// GPUMiB is the memory of the GPU the run gets.
	GPUMiB int64
	// UserMiB is the user's own request: the limit of a run without history of its
	// own, and what a workload falls back to; 0 for a whole GPU.
	UserMiB int64
	// Live are the peaks so far of the workload's runs still running: they count as
	// history (a run that ends later only raises its peak).
	Live []int64
	// Now is when the live peaks were read.
	Now time.Time
	// Priors are the histories of similar workloads, the best first (the workload's
	// class, its image, its namespace): a workload with fewer runs than MinRuns gets
	// its request from the first prior that has MinRuns.
	Priors []*Profile
	// EvictedAtMiB is the use at which GPU-memory pressure evicted the run's last
	// attempt, 0 if none did: a run restarting from its checkpoint asks at least
	// that (up to its limit), so that it is not evicted again at once.
	EvictedAtMiB int64
}

// RecommendBurstable is the request and the limit of the workload's next run, as the
// Vertical Pod Autoscaler sizes memory, with runs in place of its samples:
//
//   - the request is the RequestPercentile (VPA's target; 0.5) of the decayed per-run
//     peaks, live peaks included, plus Margin;
//   - the limit is the LimitPercentile (VPA's upper bound, 0.95) plus Margin, times
//     1 + 1/confidence (VPA's confidence multiplier, confidence the runs seen over
//     ConfidenceRuns), at least the out-of-memory floor (a run that ran out at its
//     limit bumps the next limit by OOMBump), at most the GPU's memory;
//   - before MinRuns runs, the limit is the user's request (or the OOM floor, when a
//     run ran out of memory at it) and the request the best
//     prior's (or the workload's own percentile when larger), never above the limit;
//     without a prior the request is the user's;
//   - a workload that preallocates, or ran out of memory MaxOOMs runs in a row, keeps
//     the user's request as both.
//
// Both are rounded up as Recommend rounds; a request above MaxShare of the GPU takes
// the whole GPU.
func (p *Profile) RecommendBurstable(in BurstableInput, c Config) Burstable {
	c = c.withDefaults()
	b := p.recommendBurstable(in, c)
	if in.EvictedAtMiB > b.RequestMiB && b.RequestMiB > 0 {
		b.RequestMiB = min(c.round(in.EvictedAtMiB, in.GPUMiB), b.LimitMiB)
		b.Reason += fmt.Sprintf("; request raised to the %d MiB its last attempt was evicted at", in.EvictedAtMiB)
		if float64(b.RequestMiB) > c.MaxShare*float64(in.GPUMiB) && in.GPUMiB > 0 {
			return Burstable{Reason: b.Reason + ", more than a slice is worth; a whole GPU"}
		}
	}
	return b
}

func (p *Profile) recommendBurstable(in BurstableInput, c Config) Burstable {
	user := Burstable{RequestMiB: in.UserMiB, LimitMiB: in.UserMiB}
	switch {
	case p.Preallocates:
		user.Reason = "a run took the whole GPU from its start (a framework that preallocates); keep its request"
		return user
	case p.OOMs >= c.MaxOOMs:
		user.Reason = fmt.Sprintf("%d runs in a row ran out of GPU memory at the recommended limit; keep its request", p.OOMs)
		return user
	}
	peaks, runs := p.withLive(in.Live, in.Now, c.HalfLife)
	if runs >= c.MinRuns {
		req, _ := peaks.Percentile(c.RequestPercentile)
		upper, _ := peaks.Percentile(c.LimitPercentile)
		factor := c.Confidence(runs)
		limit := max(int64(float64(upper)*(1+c.Margin)*factor+0.5), p.FloorMiB)
		b := c.burstable(int64(float64(req)*(1+c.Margin)+0.5), limit, in.GPUMiB)
		b.Reason = fmt.Sprintf("request p%.0f of %d runs' peaks (%d MiB) + %.0f%%; limit p%.0f (%d MiB) + %.0f%%, x%.2f for %d runs",
			c.RequestPercentile*100, runs, req, c.Margin*100, c.LimitPercentile*100, upper, c.Margin*100, factor, runs)
		return b
	}
	limit := in.UserMiB
	if limit <= 0 {
		limit = in.GPUMiB
	}
	if p.FloorMiB > limit && in.UserMiB > 0 {
		limit = min(p.FloorMiB, max(in.GPUMiB, p.FloorMiB))
	}
	for i, prior := range in.Priors {
		if prior == nil || prior.Preallocates || prior.Runs < c.MinRuns {
			continue
		}
		req, ok := prior.Peaks.Percentile(c.RequestPercentile)
		if !ok {
			continue
		}
		if own, ok := peaks.Percentile(c.RequestPercentile); ok {
			req = max(req, own)
		}
		// The prior's upper bound widens the limit past a user's request that its
		// workloads outgrow: a limit only caps, the request is what is packed on.
		limitFrom := "the user's request"
		if upper, ok := prior.Peaks.Percentile(c.LimitPercentile); ok {
			if u := int64(float64(upper)*(1+c.Margin) + 0.5); u > limit {
				limit, limitFrom = u, fmt.Sprintf("p%.0f of the prior's runs + %.0f%%, above the user's request", c.LimitPercentile*100, c.Margin*100)
			}
		}
		b := c.burstable(min(int64(float64(req)*(1+c.Margin)+0.5), limit), limit, in.GPUMiB)
		b.Reason = fmt.Sprintf("%d of %d runs seen: request p%.0f of prior %d's %d runs + %.0f%%, limit %s",
			runs, c.MinRuns, c.RequestPercentile*100, i+1, prior.Runs, c.Margin*100, limitFrom)
		return b
	}
	user.Reason = fmt.Sprintf("%d of %d runs seen and no prior; keep its request", runs, c.MinRuns)
	return user
}

// burstable rounds a request and a limit on a GPU of gpuMiB: the request at least
// MinMiB, the limit at least the request and at most the GPU's memory; a request
// above MaxShare of the GPU is a whole GPU.
func (c Config) burstable(request, limit, gpuMiB int64) Burstable {
	request = c.round(max(request, c.MinMiB), gpuMiB)
	limit = max(c.round(limit, gpuMiB), request)
	if gpuMiB > 0 {
		limit = min(limit, gpuMiB)
		if float64(request) > c.MaxShare*float64(gpuMiB) {
			return Burstable{}
		}
	}
	return Burstable{RequestMiB: request, LimitMiB: limit}
}

// withLive is the profile's peaks with the live ones added at now, and the runs they
// make together; the profile is left as it is.
func (p *Profile) withLive(live []int64, now time.Time, halfLife time.Duration) (Histogram, int) {
	h := Histogram{Weights: maps.Clone(p.Peaks.Weights), Reference: p.Peaks.Reference}
	runs := p.Runs
	for _, mib := range live {
		if mib > 0 {
			h.Add(mib, now, halfLife)
			runs++
		}
	}
	return h, runs
}

// Confidence is VPA's confidence factor of a limit from runs: 1 + ConfidenceRuns/runs,
// +Inf without runs.
func (c Config) Confidence(runs int) float64 {
	c = c.withDefaults()
	if runs <= 0 {
		return math.Inf(1)
	}
	return 1 + c.ConfidenceRuns/float64(runs)
}

// PressurePercent is the GPU-memory pressure threshold the simulator's burstable arm
// applies, the node agent's default (tesserav1.GPUMemoryPressurePercent).
const PressurePercent = tesserav1.GPUMemoryPressurePercent
