package rightsize

import (
	"fmt"
	"time"
)

// Config is how recommendations are made. The zero value of a field takes
// DefaultConfig's.
type Config struct {
	// Percentile of the decayed per-run peaks that the slice must hold (0.95).
	Percentile float64
	// Margin is added on top of the percentile, as a fraction of it (0.15, VPA's).
	Margin float64
	// MinRuns is how many runs must finish before a recommendation is given (3).
	MinRuns int
	// HalfLife is the age at which a run's peak counts half (7 days).
	HalfLife time.Duration
	// RoundMiB rounds a recommendation up to a multiple of it; 0 (the default) rounds
	// to a multiple of RoundDivisor-th of the GPU's memory: 1 GiB of an 80 GiB GPU,
	// 250 MiB of a 20 GB one, so that every GPU is sized as finely.
	RoundMiB int64
	// MinMiB is the smallest slice recommended (1024).
	MinMiB int64
	// OOMBump is the factor by which the slice of a run that ran out of GPU memory
	// grows for the next run (1.2, VPA's).
	OOMBump float64
	// MaxOOMs is how many runs in a row may run out of GPU memory at a recommended
	// slice before the workload falls back to its own request (2).
	MaxOOMs int
	// MaxShare is the largest share of the GPU that a slice is worth making; above
	// it the whole GPU is kept (0.9).
	MaxShare float64
	// RequestPercentile is the percentile of the decayed per-run peaks that a
	// burstable request holds, before Margin: the workload's typical peak
	// (RecommendBurstable). 0.5, where VPA's target memory percentile defaults to 0.9:
	// a run may use free memory above its request, so the request need not hold the
	// bursts (chosen in the simulator on seeds 1-3 among 0.5, 0.75 and 0.9).
	RequestPercentile float64
	// LimitPercentile is the percentile that a burstable limit holds, before Margin
	// and the confidence factor (0.95, VPA's upper-bound memory percentile).
	LimitPercentile float64
	// ConfidenceRuns is how many runs give a confidence of 1: the limit is its
	// percentile times 1 + 1/confidence, where confidence is the runs seen over
	// ConfidenceRuns (1: each run counts as VPA's day of history, so 3 runs give x1.33,
	// 10 runs x1.1).
	ConfidenceRuns float64
}

// RoundDivisor is the part of a GPU's memory that a recommendation is rounded up to,
// unless Config.RoundMiB says otherwise.
const RoundDivisor = 80

// DefaultConfig is the recommender's shipped configuration.
func DefaultConfig() Config {
	return Config{Percentile: 0.95, Margin: 0.15, MinRuns: 3, HalfLife: 7 * 24 * time.Hour,
		MinMiB: 1024, OOMBump: 1.2, MaxOOMs: 2, MaxShare: 0.9, RequestPercentile: 0.5, LimitPercentile: 0.95, ConfidenceRuns: 1}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	pick := func(v, def float64) float64 {
		if v > 0 {
			return v
		}
		return def
	}
	c.Percentile, c.Margin, c.OOMBump, c.MaxShare = pick(c.Percentile, d.Percentile), pick(c.Margin, d.Margin), pick(c.OOMBump, d.OOMBump), pick(c.MaxShare, d.MaxShare)
	c.RequestPercentile, c.LimitPercentile = pick(c.RequestPercentile, d.RequestPercentile), pick(c.LimitPercentile, d.LimitPercentile)
	c.ConfidenceRuns = pick(c.ConfidenceRuns, d.ConfidenceRuns)
	if c.MinRuns <= 0 {
		c.MinRuns = d.MinRuns
	}
	if c.HalfLife <= 0 {
		c.HalfLife = d.HalfLife
	}
	if c.MinMiB <= 0 {
		c.MinMiB = d.MinMiB
	}
	if c.MaxOOMs <= 0 {
		c.MaxOOMs = d.MaxOOMs
	}
	return c
}

// Profile is what is known of one workload's GPU-memory use: its checkpoint, kept in
// a GPUProfile's status by the recommender controller and in memory by the simulator.
type Profile struct {
	Peaks Histogram `json:"peaks"`
	// Runs counts the runs recorded, out-of-memory ones included.
	Runs int `json:"runs,omitempty"`
	// MaxPeakMiB is the largest peak recorded.
	MaxPeakMiB int64 `json:"maxPeakMiB,omitempty"`
	// OOMs counts the runs in a row that ran out of GPU memory at a recommended slice.
	OOMs int `json:"ooms,omitempty"`
	// FloorMiB is the least slice the next run gets: the bumped slice after running
	// out of memory, until a run succeeds at it.
	FloorMiB int64 `json:"floorMiB,omitempty"`
	// Preallocates is set once a run was seen taking the whole GPU from its start, as
	// TensorFlow and JAX do by default: its use says nothing of its need.
	Preallocates bool `json:"preallocates,omitempty"`
}

// Run is one finished run of the workload.
type Run struct {
	// PeakMiB is the most GPU memory the run used at once, summed over its GPUs'
	// processes (per GPU for a multi-GPU pod).
	PeakMiB int64
	// FirstMiB is its use at the first sample, for telling preallocation apart.
	FirstMiB int64
	// GPUMiB is the memory of the GPU it ran on.
	GPUMiB int64
	// LimitMiB is the slice it ran with; 0 for a whole GPU.
	LimitMiB int64
	// OOM is set when it failed for lack of GPU memory (see OutOfMemory).
	OOM bool
	End time.Time
}

// Record adds a finished run.
func (p *Profile) Record(r Run, c Config) {
	c = c.withDefaults()
	p.Runs++
	if Preallocated(r.FirstMiB, r.PeakMiB, r.GPUMiB) {
		p.Preallocates = true
		return
	}
	p.MaxPeakMiB = max(p.MaxPeakMiB, r.PeakMiB)
	if r.OOM {
		limit := max(r.LimitMiB, r.PeakMiB)
		bumped := int64(float64(limit)*c.OOMBump + 0.5)
		p.Peaks.Add(bumped, r.End, c.HalfLife)
		p.FloorMiB = max(p.FloorMiB, bumped)
		if r.LimitMiB > 0 {
			p.OOMs++
		}
		return
	}
	p.Peaks.Add(r.PeakMiB, r.End, c.HalfLife)
	if r.LimitMiB > 0 && r.LimitMiB >= p.FloorMiB {
		p.OOMs, p.FloorMiB = 0, 0
	}
}

// Recommendation is a GPU-memory request for a workload's next run.
type Recommendation struct {
	// MiB is the slice to ask for; 0 when there is none.
	MiB int64
	// Reason says how it was made, or why there is none.
	Reason string
}

// Recommend is the slice for the next run on a GPU of gpuMiB.
func (p *Profile) Recommend(gpuMiB int64, c Config) Recommendation {
	c = c.withDefaults()
	switch {
	case p.Preallocates:
		return Recommendation{Reason: "a run took the whole GPU from its start (a framework that preallocates); keep its request"}
	case p.OOMs >= c.MaxOOMs:
		return Recommendation{Reason: fmt.Sprintf("%d runs in a row ran out of GPU memory at the recommended slice; keep its request", p.OOMs)}
	case p.Runs < c.MinRuns:
		return Recommendation{Reason: fmt.Sprintf("%d of %d runs seen", p.Runs, c.MinRuns)}
	}
	pct, ok := p.Peaks.Percentile(c.Percentile)
	if !ok {
		return Recommendation{Reason: "no peak recorded"}
	}
	mib := c.round(max(int64(float64(pct)*(1+c.Margin)+0.5), p.FloorMiB, c.MinMiB), gpuMiB)
	if gpuMiB > 0 && float64(mib) > c.MaxShare*float64(gpuMiB) {
		return Recommendation{Reason: fmt.Sprintf("needs %d MiB, more than %.0f%% of the GPU's %d MiB; keep the whole GPU", mib, c.MaxShare*100, gpuMiB)}
	}
	return Recommendation{MiB: mib, Reason: fmt.Sprintf("p%.0f of %d runs' peaks (%d MiB) + %.0f%%, rounded up", c.Percentile*100, p.Runs, pct, c.Margin*100)}
}

// round rounds mib up to the configuration's step on a GPU of gpuMiB.
func (c Config) round(mib, gpuMiB int64) int64 {
	step := c.RoundMiB
	if step <= 0 {
		step = max(gpuMiB/RoundDivisor, 1)
		if gpuMiB <= 0 {
			step = 1024
		}
	}
	return (mib + step - 1) / step * step
}

// Preallocated reports whether a run took the whole GPU from its first sample, as
// TensorFlow (all of it) and JAX (75% by default) do unless told to grow on demand:
// its first sample is within 5% of its peak, and the peak is at least 70% of the GPU.
func Preallocated(firstMiB, peakMiB, gpuMiB int64) bool {
	return gpuMiB > 0 && peakMiB > 0 && firstMiB*100 >= peakMiB*95 && peakMiB*10 >= gpuMiB*7
}
