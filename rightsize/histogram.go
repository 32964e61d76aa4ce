package rightsize

import (
	"math"
	"time"
)

// Bucket layout: exponential buckets of GPU memory, each bucketRatio times wider than
// the one before, the first ending at firstBucketMiB. The upper bound of the bucket a
// percentile falls in is its value, so a recommendation never lies below a peak seen.
const (
	firstBucketMiB = 64
	bucketRatio    = 1.05
	// maxExponent bounds the decay factors before the reference time moves forward.
	maxExponent = 100
)

// Histogram is a decaying histogram of per-run peaks: a run's weight doubles every
// half-life after Reference, so recent runs count more without old ones being dropped.
// Its exported fields are its checkpoint.
type Histogram struct {
	// Weights by bucket index.
	Weights map[int]float64 `json:"weights,omitempty"`
	// Reference is the time a weight of 1 stands for.
	Reference time.Time `json:"reference"`
}

func bucketOf(mib int64) int {
	if mib <= firstBucketMiB {
		return 0
	}
	return int(math.Ceil(math.Log(float64(mib)/firstBucketMiB) / math.Log(bucketRatio)))
}

// bucketEnd is the largest value bucket i holds, in MiB.
func bucketEnd(i int) int64 {
	return int64(math.Ceil(firstBucketMiB * math.Pow(bucketRatio, float64(i))))
}

// Add records one value at time at, decaying by halfLife.
func (h *Histogram) Add(mib int64, at time.Time, halfLife time.Duration) {
	if h.Weights == nil {
		h.Weights = map[int]float64{}
	}
	if h.Reference.IsZero() {
		h.Reference = at
	}
	exp := float64(at.Sub(h.Reference)) / float64(halfLife)
	if exp > maxExponent {
		h.rebase(at, halfLife)
		exp = 0
	}
	h.Weights[bucketOf(mib)] += math.Exp2(exp)
}

// rebase moves Reference to at, scaling every weight so that percentiles are kept.
func (h *Histogram) rebase(at time.Time, halfLife time.Duration) {
	scale := math.Exp2(-float64(at.Sub(h.Reference)) / float64(halfLife))
	for i, w := range h.Weights {
		if w *= scale; w < 1e-12 {
			delete(h.Weights, i)
		} else {
			h.Weights[i] = w
		}
	}
	h.Reference = at
}

// Percentile is the upper bound of the bucket holding the p-th weighted fraction
// (0 < p ≤ 1), and false for an empty histogram.
func (h *Histogram) Percentile(p float64) (int64, bool) {
	total, last := 0.0, -1
	for i, w := range h.Weights {
		total += w
		last = max(last, i)
	}
	if total <= 0 {
		return 0, false
	}
	seen := 0.0
	for i := 0; i <= last; i++ {
		if seen += h.Weights[i]; seen >= p*total {
			return bucketEnd(i), true
		}
	}
	return bucketEnd(last), true
}

// Rebase moves Reference to at, scaling every weight so that percentiles are kept. A
// checkpoint rebased to its latest run holds weights no larger than its run count.
func (h *Histogram) Rebase(at time.Time, halfLife time.Duration) {
	if h.Reference.IsZero() {
		h.Reference = at
		return
	}
	h.rebase(at, halfLife)
}
