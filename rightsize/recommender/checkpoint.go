package recommender

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/rightsize"
)

// micros is the scale of the weights a GPUProfile's status keeps.
const micros = 1e6

// fromStatus is the profile a GPUProfile's status checkpoints.
func fromStatus(s tesserav1.GPUProfileStatus) rightsize.Profile {
	p := rightsize.Profile{Runs: int(s.Runs), MaxPeakMiB: s.MaxPeakMiB, OOMs: int(s.OOMs), FloorMiB: s.FloorMiB, Preallocates: s.Preallocates}
	if s.Reference != nil {
		p.Peaks.Reference = s.Reference.Time
	}
	if len(s.Peaks) > 0 {
		p.Peaks.Weights = make(map[int]float64, len(s.Peaks))
		for _, b := range s.Peaks {
			p.Peaks.Weights[int(b.Bucket)] = float64(b.WeightMicros) / micros
		}
	}
	return p
}

// toStatus writes p into s, its histogram rebased to at (second precision, as the
// API keeps times) in millionths; buckets that round to nothing are dropped.
func toStatus(p rightsize.Profile, at time.Time, halfLife time.Duration, s *tesserav1.GPUProfileStatus) {
	s.Runs, s.MaxPeakMiB, s.OOMs = int32(min(p.Runs, math.MaxInt32)), p.MaxPeakMiB, int32(min(p.OOMs, math.MaxInt32))
	s.FloorMiB, s.Preallocates = p.FloorMiB, p.Preallocates
	s.Peaks, s.Reference = nil, nil
	if len(p.Peaks.Weights) == 0 {
		return
	}
	at = at.Truncate(time.Second)
	p.Peaks.Rebase(at, halfLife)
	ref := metav1.NewTime(at)
	s.Reference = &ref
	for b := range maxBucket(p.Peaks.Weights) + 1 {
		if w := math.Round(p.Peaks.Weights[b] * micros); w >= 1 {
			s.Peaks = append(s.Peaks, tesserav1.GPUProfileBucket{Bucket: int32(b), WeightMicros: int64(min(w, math.MaxInt64/2))})
		}
	}
}

func maxBucket(w map[int]float64) int {
	m := -1
	for b := range w {
		m = max(m, b)
	}
	return m
}
