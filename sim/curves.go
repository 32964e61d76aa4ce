package sim

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/tessera-gpu/tessera/sim/curves"
)

// genaiGPUMiB is the GPU memory the genai2026 curves are taken to be measured on (80
// GiB; the trace does not name the model, its largest peak is about 47 GiB): on a GPU
// of other memory, a curve's memory is scaled by its memory over this, so that a pod
// keeps its share of the GPU.
const genaiGPUMiB = 81920

// jobCurve is a job's GPU curve: the curve of its workload, read from an offset of its
// own, cyclically, scaled to the cluster's GPU.
type jobCurve struct {
	c      *curves.Curve
	offset int64
	scale  float64
}

// step is the index of the curve's step at pos seconds of the job's curve time.
func (j jobCurve) step(pos int64) int {
	n := int64(len(j.c.MemoryMiB))
	return int(((j.offset+pos)/curves.Step%n + n) % n)
}

// memoryAt is the GPU memory used at pos, in MiB of the cluster's GPU.
func (j jobCurve) memoryAt(pos int64) int64 {
	return j.scaled(j.c.MemoryMiB[j.step(pos)])
}

// scaled is mib of the curve's GPU in MiB of the cluster's GPU.
func (j jobCurve) scaled(mib int64) int64 {
	return int64(math.Ceil(float64(mib) * j.scale))
}

// busyAt reports whether the GPU is used above threshold (percent) at pos.
func (j jobCurve) busyAt(pos int64, threshold int) bool {
	return j.c.Utilization[j.step(pos)] > threshold
}

// stepEnd is the curve time at which the step holding pos ends.
func (j jobCurve) stepEnd(pos int64) int64 {
	return pos + curves.Step - (j.offset+pos)%curves.Step
}

// peak is the most memory used over [from, to).
func (j jobCurve) peak(from, to int64) int64 {
	var p int64
	for pos := from; pos < to; pos = j.stepEnd(pos) {
		p = max(p, j.memoryAt(pos))
	}
	return p
}

// firstAbove is the first curve time in [from, to) whose step uses more than mib,
// placed in the middle of that step (of what is left of it when from lies within it);
// ok is false when none does.
func (j jobCurve) firstAbove(from, to, mib int64) (at int64, ok bool) {
	for pos := from; pos < to; pos = j.stepEnd(pos) {
		if j.memoryAt(pos) > mib {
			return min(pos+(j.stepEnd(pos)-pos)/2, to-1), true
		}
	}
	return 0, false
}

// busySeconds is the part of [from, to) above threshold.
func (j jobCurve) busySeconds(from, to int64, threshold int) int64 {
	var s int64
	for pos := from; pos < to; {
		next := min(j.stepEnd(pos), to)
		if j.busyAt(pos, threshold) {
			s += next - pos
		}
		pos = next
	}
	return s
}

// reclaimAt is when the rule suspends the job if it runs from from to to: the first
// time it has been idle (at or below threshold) since its start or since it was last
// busy for longer than idleFor + grace; end is when it turns busy again (to or later:
// the end of the stretch, bounded by limit). ok is false when no stretch is that long.
func (j jobCurve) reclaimAt(from, to int64, rule IdleRule, limit int64) (at, end int64, ok bool) {
	idleSince := int64(-1)
	for pos := from; pos < to; pos = j.stepEnd(pos) {
		if j.busyAt(pos, rule.Threshold) {
			idleSince = -1
			continue
		}
		if idleSince < 0 {
			idleSince = pos
		}
		if at := idleSince + rule.IdleFor + rule.Grace; at < min(j.stepEnd(pos), to) {
			end := at
			for end < limit && !j.busyAt(end, rule.Threshold) {
				end = j.stepEnd(end)
			}
			return at, min(end, limit), true
		}
	}
	return 0, 0, false
}

// idleSeconds is the part of [from, to) in idle stretches longer than idleFor: steps at
// or below threshold, within a run of such steps (along the curve, cyclically) that
// lasts longer than idleFor.
func (j jobCurve) idleSeconds(from, to int64, long []bool) int64 {
	var s int64
	for pos := from; pos < to; {
		next := min(j.stepEnd(pos), to)
		if long[j.step(pos)] {
			s += next - pos
		}
		pos = next
	}
	return s
}

// longIdle marks the steps of c that lie in a run of idle steps longer than idleFor,
// the curve read cyclically.
func longIdle(c *curves.Curve, rule IdleRule) []bool {
	n := len(c.Utilization)
	idle := func(i int) bool { return c.Utilization[(i%n+n)%n] <= rule.Threshold }
	out := make([]bool, n)
	for i := 0; i < n; i++ {
		if !idle(i) {
			continue
		}
		lo, hi := i, i
		for lo > i-n && idle(lo-1) {
			lo--
		}
		for hi < i+n && idle(hi+1) {
			hi++
		}
		out[i] = int64(hi-lo+1)*curves.Step > rule.IdleFor
	}
	return out
}

// draw is a uniform number in [0, n) from the seed and the parts, the same for the
// same inputs in every arm.
func draw(seed int64, n int64, parts ...string) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d", seed)
	for _, p := range parts {
		fmt.Fprintf(h, "/%s", p)
	}
	return int64(h.Sum64() % uint64(n))
}
