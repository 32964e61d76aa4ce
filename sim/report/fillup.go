package report

import (
	"math"
	"strconv"
	"time"
)

// BinCurve reduces a fill-up curve to one point per whole arrived percent, the way
// the FGD paper's analysis scripts do: a sample belongs to bin k when its ArrivedPct
// rounds to k (half to even, like Python's round), and bin k is the mean of its
// samples; a bin without samples takes the mean of the samples in bins k-1..k+1 and
// is left out when those are empty too. Bins run from 0 to the highest sample's bin.
func BinCurve(curve []Point) []Point {
	if len(curve) == 0 {
		return nil
	}
	type acc struct {
		sum Point
		n   int
	}
	top := 0
	for _, p := range curve {
		top = max(top, bin(p.ArrivedPct))
	}
	bins := make([]acc, top+1)
	for _, p := range curve {
		k := bin(p.ArrivedPct)
		if k < 0 {
			continue
		}
		bins[k].sum.AllocPct += p.AllocPct
		bins[k].sum.FragPct += p.FragPct
		bins[k].n++
	}
	out := make([]Point, 0, len(bins))
	for k := range bins {
		var a acc
		if bins[k].n > 0 {
			a = bins[k]
		} else {
			for j := max(k-1, 0); j <= min(k+1, top); j++ {
				a.sum.AllocPct += bins[j].sum.AllocPct
				a.sum.FragPct += bins[j].sum.FragPct
				a.n += bins[j].n
			}
			if a.n == 0 {
				continue
			}
		}
		out = append(out, Point{ArrivedPct: float64(k), AllocPct: a.sum.AllocPct / float64(a.n), FragPct: a.sum.FragPct / float64(a.n)})
	}
	return out
}

func bin(arrivedPct float64) int { return int(math.RoundToEven(arrivedPct)) }

// ValueAt returns the binned curve's point at a whole arrived percent, and whether
// the curve has it.
func ValueAt(binned []Point, pct int) (Point, bool) {
	for _, p := range binned {
		if int(p.ArrivedPct) == pct {
			return p, true
		}
	}
	return Point{}, false
}

// NewFillUpResult builds a fill-up Result from a run's curve (samples in arrival
// order, e.g. one per arrived pod): AllocPctAt at 50, 90, 100 and 130% arrived,
// UnallocatedPctAt100 = 100 - AllocPctAt["100"] and FragPctAt90, each read from the
// binned curve (BinCurve). Percentages the run did not reach are left out of
// AllocPctAt and leave UnallocatedPctAt100 or FragPctAt90 nil. Curve keeps the
// samples as given.
func NewFillUpResult(policy, trace string, seed int64, curve []Point, wall time.Duration) Result {
	r := Result{Policy: policy, Seed: seed, Trace: trace, WallSeconds: wall.Seconds(), Curve: curve, AllocPctAt: map[string]float64{}}
	binned := BinCurve(curve)
	for _, k := range AllocKeys {
		pct, _ := strconv.Atoi(k)
		if p, ok := ValueAt(binned, pct); ok {
			r.AllocPctAt[k] = p.AllocPct
		}
	}
	if a, ok := r.AllocPctAt["100"]; ok {
		u := 100 - a
		r.UnallocatedPctAt100 = &u
	}
	if p, ok := ValueAt(binned, 90); ok {
		r.FragPctAt90 = &p.FragPct
	}
	return r
}
