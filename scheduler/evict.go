package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// maxVictimJobs bounds how many jobs one preemptor may consider evicting.
const maxVictimJobs = 64

// preempt lets a pending job evict lower-priority jobs of its own queue.
type preempt struct{}

func (preempt) Name() string { return "preempt" }

func (preempt) Execute(s *Session) {
	// Victims of the same queue also free its capability, so jobs held back by their
	// queue's capability may preempt too.
	s.evictForFailed(true, 0, func(j, v *framework.Job) bool {
		return v.Queue == j.Queue && v.Priority < j.Priority
	}, nil, "preempted by higher-priority job %s")
}

// reclaim lets a job of a queue below its entitlement take back resources from
// reclaimable queues above theirs, whatever the priorities, once it has waited
// reclaimAfter.
type reclaim struct{}

func (reclaim) Name() string { return "reclaim" }

func (reclaim) Execute(s *Session) {
	if s.reclaim == nil {
		return
	}
	s.evictForFailed(false, s.cfg.ReclaimAfter.Duration, func(j, v *framework.Job) bool {
		return v.Queue != nil && j.Queue != nil && v.Queue != j.Queue
	}, s.reclaimable(), "reclaimed by queue of job %s")
}

// noteReclaimWait tells jobs that wait for room, and whose queue may reclaim once they
// have waited reclaimAfter, when that is, while some queue borrows.
func (s *Session) noteReclaimWait() {
	after := s.cfg.ReclaimAfter.Duration
	if after == 0 || s.reclaim == nil || !s.anyBorrowing() {
		return
	}
	for _, j := range s.failed {
		if !s.starving(j, false) || j.Queue == nil || s.waited(j, after) {
			continue
		}
		at := s.Snap.Now.Add(after)
		if !j.WaitingSince.IsZero() {
			at = j.WaitingSince.Add(after)
		}
		r := *j.Pending
		r.Message += fmt.Sprintf("; may reclaim from queues beyond their share at %s (reclaimAfter %s)", at.UTC().Format(time.DateTime), after)
		j.Pending = &r
	}
}

// waited reports whether j has waited at least d (a job seen for the first time has
// not waited at all).
func (s *Session) waited(j *framework.Job, d time.Duration) bool {
	return d == 0 || (!j.WaitingSince.IsZero() && s.Snap.Now.Sub(j.WaitingSince) >= d)
}

// anyBorrowing reports whether a reclaimable queue holds more GPUs than its entitlement.
func (s *Session) anyBorrowing() bool {
	if s.shares == nil {
		return false
	}
	return slices.ContainsFunc(s.Snap.Queues, func(q *framework.Queue) bool {
		_, entitled := s.shares.Share(q)
		return q.Reclaimable && q.Allocated.GPU > entitled.GPU
	})
}

// reclaimable returns the check that j's queue may take back what v holds now, for
// victims of other queues; without a reclaim policy none may be taken.
func (s *Session) reclaimable() func(j, v *framework.Job) bool {
	var last *framework.Job
	var req framework.Resources
	return func(j, v *framework.Job) bool {
		if s.reclaim == nil || v.Queue == nil || j.Queue == nil {
			return false
		}
		if j != last { // asked for one job's victims in a row
			last, req = j, s.minRequest(j)
		}
		freed := holdingResources(v)
		return s.reclaim.CanReclaim(j.Queue, &req, v.Queue, &freed)
	}
}

// evictForFailed tries, for each job allocate could not place that has waited at
// least after, to make room by evicting candidate victims. eligible is static and
// depends only on the two jobs' queues and priorities; check is re-evaluated as
// victims are evicted.
// Jobs held back by their queue's capability take part only when sameQueue is set
// (evicting from other queues cannot make room under it).
func (s *Session) evictForFailed(sameQueue bool, after time.Duration, eligible, check func(j, v *framework.Job) bool, reason string) {
	ready := func(j *framework.Job) bool { return s.starving(j, sameQueue) && s.waited(j, after) }
	// Only evictions change who starves, so when none starves now, none will below.
	if !slices.ContainsFunc(s.failed, ready) {
		return
	}
	var running []*framework.Job
	for _, v := range s.Snap.Jobs {
		if s.evictable(v, !sameQueue) {
			running = append(running, v)
		}
	}
	if len(running) == 0 {
		return
	}
	// Sorted once: a job's victim order does not change while it stays evictable, and
	// the candidates of each failed job, taken in this order, are what sorting them
	// stably would give.
	slices.SortStableFunc(running, s.compareVictims)
	s.forgetGoneJobs()
	s.sortJobs(s.failed)
	victims := make([]*framework.Job, 0, maxVictimJobs)
	// failedAlike remembers, until an eviction changes the cluster, how attempts for
	// single pods ended without one: the next pod alike ends the same way.
	failedAlike := map[podLike]attempt{}
	// none holds the queues and priorities for which no running job is eligible: the
	// evictable jobs only become fewer, so none stays none.
	none := map[rank]bool{}
	for _, j := range s.failed {
		if !ready(j) {
			continue
		}
		evictedBy := s.evictedBy[j.Key()]
		like, memo := s.podLike(j)
		memo = memo && len(evictedBy) == 0
		if a, ok := failedAlike[like]; ok && memo {
			if a.changed {
				reason := *a.reason
				j.Pending = &reason
			}
			continue
		}
		r := rank{j.Queue, j.Priority}
		if none[r] {
			continue
		}
		victims, anyEligible := victims[:0], false
		for _, v := range running {
			if v == j || !eligible(j, v) || !s.evictable(v, !sameQueue) {
				continue
			}
			anyEligible = true
			if len(evictedBy) == 0 || !evictedBy[v.Key()] {
				if victims = append(victims, v); len(victims) == maxVictimJobs {
					break
				}
			}
		}
		if !anyEligible {
			none[r] = true
		}
		before := j.Pending
		if len(victims) > 0 && s.evictFor(j, victims, check, fmt.Sprintf(reason, j.Key())) {
			clear(failedAlike)
			continue
		}
		if memo && (j.Pending == before || j.Pending != nil) { // an attempt sets a reason, never clears one
			failedAlike[like] = attempt{changed: j.Pending != before, reason: j.Pending}
		}
	}
}

// rank is what decides whether a job is an eligible victim for another.
type rank struct {
	queue    *framework.Queue
	priority int32
}

// podLike identifies a job of one pod by what its eviction attempt depends on: its
// queue, priority and shape.
type podLike struct {
	queue    *framework.Queue
	priority int32
	shape    shapeKey
}

// attempt is how an eviction attempt that evicted nothing ended: whether it changed
// the job's pending reason, and to what.
type attempt struct {
	changed bool
	reason  *framework.Reason
}

// podLike returns j's podLike, and false when the outcome of its eviction attempt may
// depend on more: a job of several pods, one with running pods, node constraints or
// its own minimum resources. Reserved nodes take some jobs and not others, which the
// shape tells apart as it does for placement.
func (s *Session) podLike(j *framework.Job) (podLike, bool) {
	if len(j.Tasks) != 1 || j.Tasks[0].Status != framework.TaskPending || !j.MinResources.IsZero() || topologyLevel(j) != "" {
		return podLike{}, false
	}
	k, ok := keyOf(j.Tasks[0])
	if s.reservedFor != nil {
		k.yields, k.holder, k.ends = yields(j, s.reservedFor), j == s.reservedFor, s.endsBefore(j, s.reservedFor)
	}
	return podLike{queue: j.Queue, priority: j.Priority, shape: k}, ok
}

// starving reports whether evicting others may help the failed job j: it waits for
// room, not to be enqueued nor, unless sameQueue, under its queue's capability, and
// its gang does not run (its pending tasks are not extras beyond minMember, for which
// no job is evicted, as with Volcano's gang plugin).
func (s *Session) starving(j *framework.Job, sameQueue bool) bool {
	if j.Count(framework.TaskPending) == 0 || j.Pending == nil {
		return false
	}
	switch j.Pending.Code {
	case framework.ReasonNotEnqueued, framework.ReasonClusterTooSmall, framework.ReasonGangPodsMissing:
		return false
	case framework.ReasonQueueCapability:
		if !sameQueue {
			return false
		}
	}
	return holding(j) < s.minAvailable(j)
}

// compareVictims orders victims by the victim-order plugins.
func (s *Session) compareVictims(a, b *framework.Job) int {
	for _, o := range s.victimOrder {
		if c := o.CompareVictims(a, b); c != 0 {
			return c
		}
	}
	return 0
}

// rememberEviction records that victim was evicted for by.
func (s *Session) rememberEviction(victim, by *framework.Job) {
	if by == nil || victim == nil {
		return
	}
	if s.evictedBy == nil {
		s.evictedBy = map[string]map[string]bool{}
	}
	m := s.evictedBy[victim.Key()]
	if m == nil {
		m = map[string]bool{}
		s.evictedBy[victim.Key()] = m
	}
	m[by.Key()] = true
}

// forgetGoneJobs drops the eviction history of jobs no longer in the snapshot.
func (s *Session) forgetGoneJobs() {
	if len(s.evictedBy) == 0 {
		return
	}
	present := make(map[string]bool, len(s.Snap.Jobs))
	for _, j := range s.Snap.Jobs {
		present[j.Key()] = true
	}
	for k := range s.evictedBy {
		if !present[k] {
			delete(s.evictedBy, k)
		}
	}
}

// evictable reports whether v runs now and may be evicted: none of its tasks was
// placed in this session and none is protected (eviction-protection annotations, an
// exhausted disruption budget, a victim filter such as min runtime). For another
// queue (reclaiming), protection holds only for what v's queue holds within its
// deserved share: a queue's protected work never keeps others from reclaiming what it
// borrows beyond.
func (s *Session) evictable(v *framework.Job, reclaiming bool) bool {
	running, protected := false, false
	for _, t := range v.Tasks {
		if t.Status == framework.TaskAllocated {
			// Placed in this session: evicting its running tasks would leave these alone.
			return false
		}
		if t.Status == framework.TaskRunning {
			running = true
			protected = protected || !t.Preemptible
		}
	}
	if !running {
		return false
	}
	for i := 0; !protected && i < len(s.victimFilter); i++ {
		protected = !s.victimFilter[i].Evictable(v, s.Snap.Now)
	}
	return !protected || (reclaiming && s.beyondDeserved(v))
}

// beyondDeserved reports whether v's queue holds at least its deserved share without
// what v holds, in the dimension v holds (GPUs, else cpu and memory): v runs on what
// the queue borrows. Another scheduler's jobs have no queue and never do.
func (s *Session) beyondDeserved(v *framework.Job) bool {
	q := v.Queue
	if q == nil {
		return false
	}
	d := s.deserved(q)
	left := q.Allocated.Clone()
	freed := holdingResources(v)
	left.Sub(&freed)
	if freed.GPU > 0 {
		return left.GPU >= d.GPU
	}
	return left.MilliCPU >= d.MilliCPU && left.Memory >= d.Memory
}

// deserved is what q deserves in this session: the queue-share plugin's figure, or
// without one, the larger of its spec's deserved and guarantee.
func (s *Session) deserved(q *framework.Queue) framework.Resources {
	if s.shares != nil {
		d, _ := s.shares.Share(q)
		return d
	}
	return framework.Resources{MilliCPU: max(q.Deserved.MilliCPU, q.Guarantee.MilliCPU), Memory: max(q.Deserved.Memory, q.Guarantee.Memory),
		GPU: max(q.Deserved.GPU, q.Guarantee.GPU)}
}

func holdingResources(j *framework.Job) framework.Resources {
	var r framework.Resources
	for _, t := range j.Tasks {
		if t.Status == framework.TaskRunning {
			r.Add(&t.Placed)
		}
	}
	return r
}

// evictFor evicts whole victim jobs, in order, until j fits; a gang is never left
// below its minMember because it is evicted whole. Victims whose GPUs the preemptor
// did not need are then restored, so only the necessary ones are evicted.
func (s *Session) evictFor(j *framework.Job, victims []*framework.Job, check func(j, v *framework.Job) bool, reason string) bool {
	if placed, fits := s.fitsWithoutEviction(j); fits {
		return placed
	}
	// Fewest gangs broken: one victim of the lowest priority that makes room on its own
	// beats several (victims come lowest priority, then youngest, first).
	for _, v := range victims {
		if len(victims) == 1 || v.Priority != victims[0].Priority {
			break
		}
		if !s.mayEvict(j, v, check) {
			continue
		}
		st := s.NewStatement()
		evictJob(st, v, j, reason)
		clear(s.unfit)
		if s.placeJob(j, st, true) {
			s.restoreUnneeded(st, []*framework.Job{v})
			st.Commit()
			return true
		}
		st.Discard()
	}
	st := s.NewStatement()
	var evicted []*framework.Job
	for _, v := range victims {
		if !s.mayEvict(j, v, check) {
			continue
		}
		evictJob(st, v, j, reason)
		evicted = append(evicted, v)
		clear(s.unfit)
		if s.placeJob(j, st, true) {
			s.restoreUnneeded(st, evicted)
			st.Commit()
			return true
		}
	}
	st.Discard()
	return false
}

// fitsWithoutEviction reports whether j fits in free capacity as things stand, so
// that no eviction is made for it: a job allocate never tried (waiting behind its
// queue's head) or one that evictions for other jobs in this session made room for. A
// job allocate tried fits only after such evictions, and is placed then (placed is
// true); a job waiting in line is left to backfill, which keeps its queue's order.
func (s *Session) fitsWithoutEviction(j *framework.Job) (placed, fits bool) {
	inLine := j.Pending != nil && j.Pending.Code == framework.ReasonWaitingInLine
	if !inLine && len(s.Result.Evictions) == 0 {
		return false, false // allocate tried it, and capacity only shrank since
	}
	before := j.Pending
	st := s.NewStatement()
	if !s.placeJob(j, st, true) {
		j.Pending = before
		return false, false
	}
	if inLine {
		st.Discard()
		return false, true
	}
	st.Commit()
	return true, true
}

// mayEvict reports whether v may still be evicted for j once the victims before it
// were: it passes check, and it is still evictable (a protected victim's queue may
// have dropped to its deserved share).
func (s *Session) mayEvict(j, v *framework.Job, check func(j, v *framework.Job) bool) bool {
	return (check == nil || check(j, v)) && s.evictable(v, v.Queue != j.Queue)
}

// evictJob evicts every running task of v, for j.
func evictJob(st *Statement, v, j *framework.Job, reason string) {
	for _, t := range v.Tasks {
		if t.Status == framework.TaskRunning {
			st.Evict(t, j, reason)
		}
	}
}

// restoreUnneeded puts back victims whose tasks still fit where they were, all of a
// victim's tasks together (several may share a node or a GPU) or none.
func (s *Session) restoreUnneeded(st *Statement, evicted []*framework.Job) {
	for i := len(evicted) - 1; i >= 0; i-- {
		v := evicted[i]
		var restored []op
		fits := true
		for _, o := range st.ops {
			if !o.evict || o.task.Job != v {
				continue
			}
			if !stillFits(o) {
				fits = false
				break
			}
			o.node.Place(o.task, o.gpus, o.milli)
			restored = append(restored, o)
		}
		if !fits {
			for k := len(restored) - 1; k >= 0; k-- {
				restored[k].node.Remove(restored[k].task)
			}
			continue
		}
		if len(restored) == 0 {
			continue
		}
		if !s.withinCapability(v.Queue, restored) {
			// The preemptor took the victim's room under its queue's capability.
			for k := len(restored) - 1; k >= 0; k-- {
				restored[k].node.Remove(restored[k].task)
			}
			continue
		}
		for _, o := range restored {
			o.task.Status = o.status
			s.charge(o.task, &o.task.Placed, +1)
		}
		st.ops = slices.DeleteFunc(st.ops, func(o op) bool { return o.evict && o.task.Job == v })
	}
}

// withinCapability reports whether the queue and its parents can take the restored
// tasks back without exceeding a capability (queues are enforced when a queue plugin is).
func (s *Session) withinCapability(q *framework.Queue, restored []op) bool {
	if q == nil || s.admission == nil {
		return true
	}
	var sum framework.Resources
	for _, o := range restored {
		sum.Add(&o.task.Placed)
	}
	for _, a := range q.Ancestors() {
		if ok, _ := sum.FitsCapability(&a.Allocated, &a.Capability); !ok {
			return false
		}
	}
	return true
}

func stillFits(o op) bool {
	n := o.node
	req := o.task.Request
	req.GPU = int64(o.gpus.Len()) * o.milli
	if ok, _ := req.FitsIn(&n.Used, &n.Allocatable); !ok {
		return false
	}
	for _, i := range o.gpus.Indices() {
		if n.GPUs[i].FreeMilli() < o.milli {
			return false
		}
	}
	return true
}
