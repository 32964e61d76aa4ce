package scheduler

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// waitsForCapacity reports whether the job waits for nodes, or for its queue's
// capability (which its queue's lower-priority work may hold), not for admission.
func waitsForCapacity(j *framework.Job) bool {
	if j.Pending == nil {
		return false
	}
	switch j.Pending.Code {
	case framework.ReasonUnschedulable, framework.ReasonGangIncomplete, framework.ReasonTopology, framework.ReasonWaitingInLine,
		framework.ReasonQueueCapability:
		return true
	}
	return false
}

// reserve holds nodes for a starving job, replacing any earlier reservation: the nodes
// that are closest to free and whose capacity, once their current tasks end, holds the
// job's pending tasks; nodes running work that does not yield to the job (which it
// could not preempt) come last. It reports false, changing nothing, when the nodes, all
// freed, could not hold them.
func (s *Session) reserve(j *framework.Job) bool {
	t := firstPending(j)
	room := 0
	for _, n := range s.Snap.Nodes {
		room += capacityFor(t, n)
	}
	if room == 0 || room < j.Count(framework.TaskPending) {
		// Not even every node freed would hold it (the cluster shrank since it was
		// enqueued): holding nodes would idle them without ever starting it.
		return false
	}
	for _, n := range s.Snap.Nodes {
		n.Reserved = nil
	}
	clear(s.reservations)
	s.reservedFor, s.shadowFor = j, nil
	need := j.Count(framework.TaskPending)
	type cand struct {
		n    *framework.Node
		busy int64
	}
	var cands []cand
	for _, n := range s.Snap.Nodes {
		if capacityFor(t, n) == 0 {
			continue
		}
		busy := n.Used.GPU*4 + n.Used.MilliCPU/1000
		if slices.ContainsFunc(n.Tasks, func(t *framework.Task) bool { return !yields(t.Job, j) }) {
			busy += math.MaxInt64 / 2
		}
		cands = append(cands, cand{n, busy})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		switch {
		case a.busy < b.busy:
			return -1
		case a.busy > b.busy:
			return 1
		}
		return 0
	})
	for _, c := range cands {
		if need <= 0 {
			break
		}
		c.n.Reserved = j
		s.reservations[c.n.Name] = j.Key()
		need -= capacityFor(t, c.n)
	}
	if j.Pending != nil {
		j.Pending.Message += "; nodes reserved until it fits"
		if d := s.cfg.ReservationDeadline.Duration; d > 0 {
			j.Pending.Message += fmt.Sprintf(", work that overtook it preempted there at %s", j.WaitingSince.Add(d).UTC().Format(time.DateTime))
		}
	}
	return true
}

// mayUseReserved reports whether job j may run on nodes reserved for r: work expected
// to end before r starts, at the end of the work on its nodes or at its deadline,
// whichever comes first (EASY backfill); and work without an estimate that yields to r,
// which r preempts at its deadline, until the drain before it.
func (s *Session) mayUseReserved(j, r *framework.Job) bool {
	if s.endsBefore(j, r) {
		return true
	}
	d := s.cfg.ReservationDeadline.Duration
	return d > 0 && s.estimate(j) == 0 && yields(j, r) && s.Snap.Now.Sub(r.WaitingSince) < d-s.cfg.ReservationDrain.Duration
}

// endsBefore reports whether job j, started now, is expected to end before r, which
// nodes are reserved for, is expected to start.
func (s *Session) endsBefore(j, r *framework.Job) bool {
	e := s.estimate(j)
	if e == 0 {
		return false
	}
	start := s.reservedStart(r)
	if d := s.cfg.ReservationDeadline.Duration; d > 0 && (start.IsZero() || r.WaitingSince.Add(d).Before(start)) {
		start = r.WaitingSince.Add(d)
	}
	return !start.IsZero() && !s.Snap.Now.Add(e).After(start)
}

// yields reports whether v makes way for a starving job j: v is of j's queue (a
// reservation never preempts across queues) and has lower priority, or j's priority
// and was submitted later (it overtook j).
func yields(v, j *framework.Job) bool {
	return v.Queue == j.Queue && (v.Priority < j.Priority || (v.Priority == j.Priority && v.Created.After(j.Created)))
}

// clearReserved evicts, for a job past its reservation deadline, the jobs that yield to
// it on its reserved nodes, then those of its queue elsewhere (they hold the queue's
// capability), as few as let it start. Work of another queue on the reserved nodes
// (there before the reservation) is evicted only where the job's queue may reclaim it.
func (s *Session) clearReserved(j *framework.Job) {
	var onNodes, inQueue []*framework.Job
	for _, v := range s.Snap.Jobs {
		if v == j || !s.evictable(v, v.Queue != j.Queue) {
			continue
		}
		onReserved := slices.ContainsFunc(v.Tasks, func(t *framework.Task) bool { return t.Node != nil && t.Node.Reserved == j })
		switch {
		case onReserved && (yields(v, j) || v.Queue != j.Queue):
			onNodes = append(onNodes, v)
		case !onReserved && yields(v, j):
			inQueue = append(inQueue, v)
		}
	}
	// Work that runs past its estimate goes first: the reservation counted on its end.
	slices.SortStableFunc(onNodes, func(a, b *framework.Job) int {
		if oa, ob := s.overran(a), s.overran(b); oa != ob {
			if oa {
				return -1
			}
			return 1
		}
		return s.compareVictims(a, b)
	})
	slices.SortStableFunc(inQueue, s.compareVictims)
	reclaimable := s.reclaimable()
	s.evictFor(j, append(onNodes, inQueue...), func(j, v *framework.Job) bool {
		return v.Queue == j.Queue || reclaimable(j, v)
	}, fmt.Sprintf("preempted from nodes reserved for %s", j.Key()))
}

// capacityFor is how many tasks like t an empty node could hold.
func capacityFor(t *framework.Task, n *framework.Node) int {
	if n.Unschedulable || (t.GPU.Any() && !t.GPU.AllowsModel(n.GPUModel)) {
		return 0
	}
	c := 1 << 30
	if t.Request.MilliCPU > 0 {
		c = min(c, int(n.Allocatable.MilliCPU/t.Request.MilliCPU))
	}
	if t.Request.Memory > 0 {
		c = min(c, int(n.Allocatable.Memory/t.Request.Memory))
	}
	if g := t.GPU.GPUs(); g > 0 {
		per := len(n.GPUs) / g
		if t.GPU.Shared() && len(n.GPUs) > 0 {
			per = len(n.GPUs) * int(framework.MilliPerGPU/max(1, t.GPU.MilliOn(&n.GPUs[0])))
		}
		c = min(c, per)
	}
	return c
}
