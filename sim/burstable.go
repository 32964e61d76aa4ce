package sim

import (
	"container/heap"
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/rightsize"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/curves"
)

// The burstable arm (ArmBurstable): each one-GPU job asks the recommender's request
// (rightsize.Profile.RecommendBurstable), which the scheduler packs GPUs on, and may
// use memory up to its limit: above the limit it runs out of memory, as in the other
// arms. A GPU is under pressure when the sum of its pods' use passes
// rightsize.PressurePercent of its memory; then the pod furthest above its request,
// relative to its request, is evicted, and the next, until the sum is below it again.
// Pods within their requests are never evicted this way. An evicted job loses the work
// since its last checkpoint, is recorded as an ended run (its peak so far), and waits
// again with its next request and limit.
//
// A GPU is checked when a pod starts on it (a request placed beside a pod using more
// than its own), when a pod's use first passes its request, and then at each
// 10-minute step of the curve of a pod above its request, as long as it stays above.

// EvictedByPressure counts the pods GPU-memory pressure evicted.
const EvictedByPressure = "gpu-memory-pressure"

// priorKeys name the histories a job's workload shares with others, the best prior
// first: its class within its queue, then its queue (a namespace's history). The
// replay's jobs carry no image.
func priorKeys(spec *ReplayJob) []string {
	return []string{"class/" + spec.Queue + "/" + spec.Class, "queue/" + spec.Queue}
}

// sizeBurstable gives the job its request (slice) and limit for its next run;
// evictedAt is the use at which pressure evicted its last run, 0 if none did.
func (s *rightSizer) sizeBurstable(r *replayer, j *sizedJob, evictedAt int64) {
	p := s.profiles[j.workload]
	if p == nil {
		p = &rightsize.Profile{}
	}
	keys := priorKeys(j.a.spec)
	priors := make([]*rightsize.Profile, len(keys))
	for i, k := range keys {
		priors[i] = s.priors[k]
	}
	b := p.RecommendBurstable(rightsize.BurstableInput{GPUMiB: s.gpuMiB, UserMiB: s.userRequest(j), Live: s.livePeaks(r, j.workload),
		Now: epoch.Add(time.Duration(r.now) * time.Second), Priors: priors, EvictedAtMiB: evictedAt}, s.Config)
	j.slice, j.limit = b.RequestMiB, b.LimitMiB
}

// livePeaks are the peaks so far of the workload's runs that have run at least one
// step of their curve, as the node agent reports a running pod's peak.
func (s *rightSizer) livePeaks(r *replayer, w string) []int64 {
	var out []int64
	for _, j := range s.live[w] {
		if ran := r.now - j.a.since; ran >= curves.Step {
			out = append(out, j.curve.peak(j.segment, j.segment+ran))
		}
	}
	return out
}

// stopLive drops the job from its workload's running runs.
func (s *rightSizer) stopLive(j *sizedJob) {
	if runs := s.live[j.workload]; len(runs) > 0 {
		s.live[j.workload] = slices.DeleteFunc(runs, func(x *sizedJob) bool { return x == j })
	}
}

// startBurstable notes the started run (which ends at curve time end) as live,
// checks its GPU once the session is over, and schedules a check for when its use
// first passes its request.
func (s *rightSizer) startBurstable(r *replayer, j *sizedJob, end int64) {
	j.runEnd = end
	s.live[j.workload] = append(s.live[j.workload], j)
	s.placed = append(s.placed, j)
	s.nextCheck(r, j, j.pos)
}

// nextCheck schedules the job's next pressure check from curve time pos: the end of
// the step when it uses more than its request, or else the first time it does.
func (s *rightSizer) nextCheck(r *replayer, j *sizedJob, pos int64) {
	at, ok := j.curve.stepEnd(pos), j.curve.memoryAt(pos) > j.slice
	if !ok {
		at, ok = j.curve.firstAbove(pos, j.runEnd, j.slice)
	}
	if ok && at < j.runEnd {
		heap.Push(&s.events, interrupt{at: r.now + at - pos, j: j, epoch: j.a.epoch, pressure: true})
	}
}

// checkPlaced checks the GPUs of the runs placed since the last call.
func (r *replayer) checkPlaced() {
	s := r.rs
	if s == nil || len(s.placed) == 0 {
		return
	}
	placed := s.placed
	s.placed = nil
	for _, j := range placed {
		if j.a.since >= 0 {
			r.relieveGPUsOf(j)
		}
	}
}

// pressureCheck is the job's check: its GPU, then its next check.
func (r *replayer) pressureCheck(j *sizedJob) {
	a := j.a
	if a.since < 0 {
		return
	}
	r.relieveGPUsOf(j)
	if a.since >= 0 {
		r.rs.nextCheck(r, j, j.pos+r.now-a.since)
	}
}

// relieveGPUsOf relieves the pressure on every GPU the job's tasks hold.
func (r *replayer) relieveGPUsOf(j *sizedJob) {
	for _, t := range j.a.job.Tasks {
		if t.Node == nil || t.Status != framework.TaskRunning {
			continue
		}
		for _, g := range t.GPUs.Indices() {
			r.relieve(t.Node, g)
		}
	}
}

// podUse is one running task of a sized job on a GPU and the memory it uses now.
type podUse struct {
	j   *sizedJob
	use int64
}

// relieve evicts, while the memory used on GPU g of n passes rightsize.PressurePercent
// of it, the job furthest above its request relative to its request.
func (r *replayer) relieve(n *framework.Node, g int) {
	s := r.rs
	var pods []podUse
	var total int64
	for _, t := range n.Tasks {
		if !t.GPUs.Has(g) || t.Status != framework.TaskRunning {
			continue
		}
		j := s.jobs[r.active[t.Job]]
		if j == nil || j.slice <= 0 {
			return // a whole GPU: nothing shares it
		}
		use := j.curve.memoryAt(j.pos)
		if j.a.since >= 0 {
			use = j.curve.memoryAt(j.pos + r.now - j.a.since)
		}
		pods = append(pods, podUse{j: j, use: use})
		total += use
	}
	limit := n.GPUs[g].MemoryMiB * rightsize.PressurePercent / 100
	for total > limit {
		i := furthestAbove(pods)
		if i < 0 {
			return // every pod within its request
		}
		victim := pods[i].j
		pods = slices.DeleteFunc(pods, func(p podUse) bool {
			if p.j == victim {
				total -= p.use
				return true
			}
			return false
		})
		r.pressureEvict(victim)
	}
}

// furthestAbove is the index of the pod whose use is furthest above its request,
// relative to the request (ties: the job first by name); -1 when none is above.
func furthestAbove(pods []podUse) int {
	best, bestOver := -1, 0.0
	for i, p := range pods {
		if p.use <= p.j.slice {
			continue
		}
		over := float64(p.use-p.j.slice) / float64(p.j.slice)
		if best < 0 || over > bestOver || over == bestOver && strings.Compare(p.j.a.spec.Name, pods[best].j.a.spec.Name) < 0 {
			best, bestOver = i, over
		}
	}
	return best
}

// pressureEvict ends the job's run for GPU-memory pressure: the run is recorded with
// its peak so far, the work since its last checkpoint is lost, and it waits again with
// its next request and limit.
func (r *replayer) pressureEvict(j *sizedJob) {
	s, a := r.rs, j.a
	pos := j.pos + r.now - a.since
	peak, use := j.curve.peak(j.segment, max(pos, j.segment+1)), j.curve.memoryAt(pos)
	r.evicted(EvictedByPressure, len(a.job.Tasks))
	lost := r.endRun(a)
	s.out.PressureEvictions++
	s.out.PressureLostGPUHours += lost
	s.record(r, j, rightsize.Run{PeakMiB: peak, LimitMiB: j.limit})
	s.sizeBurstable(r, j, use)
	j.pressureAt = r.now
	s.request(j)
}
