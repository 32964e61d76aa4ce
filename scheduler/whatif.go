package scheduler

import (
	"maps"
	"math/rand/v2"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// WhatIf answers "what would the next session decide if the cluster looked like this?"
// without changing anything: it checkpoints snap, applies change (for example
// snap.RemoveNodes, whose tasks become pending), runs one session with copies of the
// scheduler's state (reservations, eviction history, per-job memory and the random
// source, which therefore draws what the next real session would draw), calls inspect
// with the changed snapshot and the decisions, and restores snap. Afterwards snap and
// the scheduler are as before: the next RunSession decides exactly what it would have
// decided without the call. The snapshot's objects are only valid for reading inside
// inspect; a Result's Task and Node pointers still name the same objects afterwards.
// Reclaim is due at once in the what-if (reclaimAfter does not apply): the question is
// what the change costs, and a reclaim that would wait is a cost all the same.
// Like RunSession, it must not run concurrently with another session of s.
func (s *Scheduler) WhatIf(snap *framework.Snapshot, change func(*framework.Snapshot), inspect func(*framework.Snapshot, *Result)) {
	restore := snap.Checkpoint()
	defer restore()
	if change != nil {
		change(snap)
	}
	r := s.scratch().RunSession(snap)
	if inspect != nil {
		inspect(snap, r)
	}
}

// scratch is a copy of s that shares its plugins but none of its between-session state,
// and reclaims at once.
func (s *Scheduler) scratch() *Scheduler {
	c := *s
	c.cfg.ReclaimAfter = Duration{}
	c.reservations = maps.Clone(s.reservations)
	c.jobs = maps.Clone(s.jobs)
	c.runs = nil // a what-if session learns no runtimes
	c.evictedBy = make(map[string]map[string]bool, len(s.evictedBy))
	for k, v := range s.evictedBy {
		c.evictedBy[k] = maps.Clone(v)
	}
	state, err := s.pcg.MarshalBinary()
	if err != nil {
		panic(err) // PCG's encoding never fails
	}
	c.pcg = &rand.PCG{}
	if err := c.pcg.UnmarshalBinary(state); err != nil {
		panic(err)
	}
	c.rng = rand.New(c.pcg)
	return &c
}

// QueueShare is what the queue-share rule gives one queue in a session.
type QueueShare struct {
	// Deserved is what the queue is guaranteed under contention: its deserved (or
	// guaranteed) share, up to what its work asks for and its capability.
	Deserved framework.Resources
	// Entitled is Deserved plus what the queue may borrow by weight.
	Entitled framework.Resources
	// Demand is what its jobs hold and wait for (pending shared GPUs at their nominal
	// share).
	Demand framework.Resources
}

// Share reports q's share in the session that ran last: inside WhatIf's inspect, the
// what-if session's. ok is false when no plugin divides the cluster among queues.
func (s *Scheduler) Share(q *framework.Queue) (share QueueShare, ok bool) {
	if s.shares == nil {
		return QueueShare{}, false
	}
	share.Deserved, share.Entitled = s.shares.Share(q)
	share.Demand = q.Request
	return share, true
}
