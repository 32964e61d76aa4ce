package framework

import "time"

// Plugin is anything the session calls; its name appears in config and in reasons.
type Plugin interface {
	Name() string
}

// Filter rejects a node for a task; it must be a pure function of its arguments.
type Filter interface {
	Plugin
	Filter(t *Task, n *Node) FitCode
}

// NodeScorer rates placing a task on a node that passed every filter, from 0 to 100.
type NodeScorer interface {
	Plugin
	ScoreNode(t *Task, n *Node) float64
}

// GPUPlacer rates placing a task on a node that passed every filter, from 0 to 100,
// and for GPU tasks chooses the GPUs; ok is false when no choice of GPUs fits. It is
// called for CPU-only tasks too (with an empty set), since they change what GPUs stay
// usable.
type GPUPlacer interface {
	Plugin
	PlaceGPUs(t *Task, n *Node) (gpus GPUSet, score float64, ok bool)
}

// JobOrder compares two jobs of the same queue: negative when a goes first.
type JobOrder interface {
	Plugin
	CompareJobs(a, b *Job) int
}

// VictimOrder compares two candidate victims: negative when a should be evicted first.
type VictimOrder interface {
	Plugin
	CompareVictims(a, b *Job) int
}

// SnapshotObserver is told when a session opens, for plugins that precompute from the
// snapshot (cluster totals, typical workloads).
type SnapshotObserver interface {
	Plugin
	OnSessionOpen(s *Snapshot)
}

// Gang says how many of a job's tasks must be placed together before any binds.
// Without a Gang plugin every task is placed on its own, as the default scheduler does.
type Gang interface {
	Plugin
	MinAvailable(j *Job) int
}

// QueueOrder compares two queues: negative when a should be served first.
type QueueOrder interface {
	Plugin
	CompareQueues(a, b *Queue) int
}

// QueueAdmission decides whether a queue may take req more; the message says why not.
type QueueAdmission interface {
	Plugin
	Admit(q *Queue, req *Resources) (bool, string)
}

// ReclaimPolicy decides whether the reclaimer's queue may take back resources held by
// the victim's queue.
type ReclaimPolicy interface {
	Plugin
	CanReclaim(reclaimer *Queue, req *Resources, victim *Queue, freed *Resources) bool
}

// QueueShares reports what the queue-share rule gives q in the open session: deserved,
// what it is guaranteed under contention (its deserved or guaranteed share, up to what
// its work asks for and its capability), and entitled, that plus what it may borrow by
// weight. It is the one home of "deserved"; the scale-down planner asks it too.
type QueueShares interface {
	Plugin
	Share(q *Queue) (deserved, entitled Resources)
}

// VictimFilter rejects jobs that must not be evicted now (min runtime, disruption budgets).
type VictimFilter interface {
	Plugin
	Evictable(j *Job, now time.Time) bool
}

// EnqueueGate decides whether a pending job may enter Inqueue, as Volcano's
// JobEnqueueable functions do (overcommit, a queue's real capability). The enqueue
// action first calls Enqueued for every enqueued job that does not run yet, with what
// it still needs, then, in queue and job order, Enqueueable for each pending job with
// its gang's minimum and Enqueued again for each one every gate admits.
type EnqueueGate interface {
	Plugin
	Enqueueable(j *Job, min *Resources) (bool, string)
	Enqueued(j *Job, need *Resources)
}

// QueueOverused says that a queue takes nothing more in the open session, and why
// (Volcano's OverusedFn): allocate then skips all of the queue's jobs.
type QueueOverused interface {
	Plugin
	Overused(q *Queue) (bool, string)
}
