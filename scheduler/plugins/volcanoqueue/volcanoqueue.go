package volcanoqueue

import (
	"cmp"
	"fmt"
	"math"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Plugin names in configuration.
const (
	ProportionName = "volcano-proportion"
	CapacityName   = "volcano-capacity"
)

// Mode says which of Volcano's queue plugins the Queues follow.
type Mode int

// Modes.
const (
	Proportion Mode = iota
	Capacity
)

// Queues is the queue-share plugin in one of Volcano's two modes.
type Queues struct {
	mode  Mode
	attrs map[*framework.Queue]*attr
}

// attr is what one session knows of a queue: vectors over cpu, memory and GPU.
type attr struct {
	deserved, realCapability vec
	// inqueue is what the queue's admitted jobs that do not run yet need.
	inqueue vec
}

var (
	_ framework.QueueOrder       = (*Queues)(nil)
	_ framework.QueueAdmission   = (*Queues)(nil)
	_ framework.ReclaimPolicy    = (*Queues)(nil)
	_ framework.SnapshotObserver = (*Queues)(nil)
	_ framework.QueueShares      = (*Queues)(nil)
	_ framework.EnqueueGate      = (*Queues)(nil)
	_ framework.QueueOverused    = (*Queues)(nil)
)

// New returns the plugin in mode.
func New(mode Mode) *Queues { return &Queues{mode: mode} }

// Name implements framework.Plugin.
func (p *Queues) Name() string {
	if p.mode == Capacity {
		return CapacityName
	}
	return ProportionName
}

// OnSessionOpen implements framework.SnapshotObserver.
func (p *Queues) OnSessionOpen(s *framework.Snapshot) {
	p.attrs = make(map[*framework.Queue]*attr, len(s.Queues))
	total := of(&s.Total)
	var guarantees vec
	for _, q := range s.Queues {
		guarantees = guarantees.add(of(&q.Guarantee))
	}
	// Volcano's session knows only the queues that have jobs.
	withJobs := map[*framework.Queue]bool{}
	for _, j := range s.Jobs {
		if j.Queue != nil {
			withJobs[j.Queue] = true
		}
	}
	var queues []*framework.Queue
	for _, q := range s.Queues {
		a := &attr{realCapability: total.sub(guarantees).atLeastZero().add(of(&q.Guarantee)).min(of(&q.Capability))}
		if p.mode == Capacity {
			a.deserved = of(&q.Deserved).min(a.realCapability).max(of(&q.Guarantee))
		}
		p.attrs[q] = a
		if withJobs[q] {
			queues = append(queues, q)
		}
	}
	if p.mode == Proportion {
		p.waterFill(queues, total)
	}
}

// waterFill gives each queue, round after round, its weight's part of what is left,
// capped by its real capability and its request and floored at its guarantee, until
// every queue is met or nothing is left (proportion.go's OnSessionOpen).
func (p *Queues) waterFill(queues []*framework.Queue, total vec) {
	remaining := total
	met := map[*framework.Queue]bool{}
	for {
		var weights float64
		for _, q := range queues {
			if !met[q] {
				weights += float64(weight(q))
			}
		}
		if weights == 0 {
			return
		}
		before := remaining
		var increased, decreased vec
		for _, q := range queues {
			if met[q] {
				continue
			}
			a := p.attrs[q]
			old := a.deserved
			request := of(&q.Request)
			a.deserved = a.deserved.add(remaining.scale(float64(weight(q)) / weights)).
				min(a.realCapability).min(request).max(of(&q.Guarantee))
			if request.lessEqual(a.deserved) || a.deserved == old {
				met[q] = true
			}
			increased = increased.add(a.deserved.sub(old).atLeastZero())
			decreased = decreased.add(old.sub(a.deserved).atLeastZero())
		}
		remaining = remaining.add(decreased).sub(increased).atLeastZero()
		if remaining.empty() || remaining == before {
			return
		}
	}
}

func weight(q *framework.Queue) int32 { return max(q.Weight, 1) }

// Share implements framework.QueueShares: what the queue deserves, both under
// contention and in all (Volcano lends nothing beyond it by weight).
func (p *Queues) Share(q *framework.Queue) (deserved, entitled framework.Resources) {
	if a := p.attrs[q]; a != nil {
		deserved = a.deserved.resources()
	}
	return deserved, deserved
}

// share is the queue's largest ratio of allocated to deserved over the resources it
// deserves some of (updateQueueAttrShare); in capacity mode a queue that deserves
// nothing is best-effort and its share is 1.
func (p *Queues) share(q *framework.Queue) float64 {
	a := p.attrs[q]
	if a == nil {
		return math.Inf(1)
	}
	if p.mode == Capacity && a.deserved.empty() {
		return 1
	}
	allocated := of(&q.Allocated)
	s := 0.0
	for i := range allocated {
		if a.deserved[i] >= minResource {
			s = max(s, allocated[i]/a.deserved[i])
		}
	}
	return s
}

// CompareQueues implements framework.QueueOrder: priority, then share; in capacity
// mode, at equal shares a queue that deserves something goes before a best-effort one.
func (p *Queues) CompareQueues(a, b *framework.Queue) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(p.share(a), p.share(b)); c != 0 {
		return c
	}
	if p.mode == Capacity {
		if da, db := p.attrs[a], p.attrs[b]; da != nil && db != nil {
			if c := cmp.Compare(boolInt(da.deserved.empty()), boolInt(db.deserved.empty())); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(a.Name, b.Name)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// limit is what a queue may allocate up to: what it deserves (proportion) or its real
// capability (capacity).
func (p *Queues) limit(a *attr) vec {
	if p.mode == Capacity {
		return a.realCapability
	}
	return a.deserved
}

// Admit implements framework.QueueAdmission (Volcano's AllocatableFn): what the queue
// holds and req stay within its limit in every resource req asks for.
func (p *Queues) Admit(q *framework.Queue, req *framework.Resources) (bool, string) {
	a := p.attrs[q]
	if a == nil {
		return true, ""
	}
	limit, what := p.limit(a), "deserved share"
	if p.mode == Capacity {
		what = "real capability"
	}
	if i, ok := of(&q.Allocated).add(of(req)).within(limit, of(req)); !ok {
		return false, fmt.Sprintf("queue %s at its %s %s/%s %s, job needs %s more",
			q.Name, what, format(i, of(&q.Allocated)[i]), format(i, limit[i]), unit[i], format(i, of(req)[i]))
	}
	return true, ""
}

// Enqueueable implements framework.EnqueueGate: the queue's allocation, its admitted
// jobs that do not run yet and the job's minimum stay within its real capability.
func (p *Queues) Enqueueable(j *framework.Job, min *framework.Resources) (bool, string) {
	a := p.attrs[j.Queue]
	if a == nil {
		return true, ""
	}
	need := of(min)
	if i, ok := of(&j.Queue.Allocated).add(a.inqueue).add(need).within(a.realCapability, need); !ok {
		return false, fmt.Sprintf("queue %s: %s %s held and admitted of its real capability %s, gang needs %s more",
			j.Queue.Name, format(i, of(&j.Queue.Allocated).add(a.inqueue)[i]), unit[i], format(i, a.realCapability[i]), format(i, need[i]))
	}
	return true, ""
}

// Enqueued implements framework.EnqueueGate.
func (p *Queues) Enqueued(j *framework.Job, need *framework.Resources) {
	if a := p.attrs[j.Queue]; a != nil {
		a.inqueue = a.inqueue.add(of(need))
	}
}

// CanReclaim implements framework.ReclaimPolicy (Volcano's PreemptiveFn for the
// reclaimer, ReclaimableFn for the victim).
func (p *Queues) CanReclaim(reclaimer *framework.Queue, req *framework.Resources, victim *framework.Queue, freed *framework.Resources) bool {
	if !victim.Reclaimable || victim == reclaimer {
		return false
	}
	ra, va := p.attrs[reclaimer], p.attrs[victim]
	if ra == nil || va == nil {
		return false
	}
	need := of(req)
	future := of(&reclaimer.Allocated).add(need)
	if _, ok := future.within(p.limit(ra), need); !ok {
		return false
	}
	if p.mode == Proportion {
		return !of(&victim.Allocated).lessEqual(va.deserved)
	}
	// Capacity: the victim frees some resource the reclaimer asks for, the reclaimer is
	// below what it deserves in some resource it asks for, and the victim frees nothing
	// its queue deserves or its queue holds more than it deserves in some resource that
	// it frees and the queue deserves some of (shouldSkipReclaimee, isImmediateVictim,
	// checkDeservedExceedance).
	free := of(freed)
	if !free.shares(need) || !future.belowSome(ra.deserved, need) {
		return false
	}
	return !free.shares(va.deserved) || of(&victim.Allocated).aboveSome(va.deserved, free.where(va.deserved))
}

// Overused implements framework.QueueOverused: in proportion mode, a queue that holds
// at least what it deserves in every resource takes nothing more (OverusedFn); the
// capacity plugin has no such check.
func (p *Queues) Overused(q *framework.Queue) (bool, string) {
	a := p.attrs[q]
	if p.mode != Proportion || a == nil || !a.deserved.lessEqual(of(&q.Allocated)) {
		return false, ""
	}
	return true, fmt.Sprintf("queue %s holds its deserved share (%s of %s GPUs) and takes nothing more in this session",
		q.Name, format(2, of(&q.Allocated)[2]), format(2, a.deserved[2]))
}
