package scheduler

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Binding places one task on a node and its GPUs.
type Binding struct {
	Task     *framework.Task
	Node     *framework.Node
	GPUs     framework.GPUSet
	GPUMilli int64
	// Pipelined bindings wait for the evictions of the same session to finish.
	Pipelined bool
}

// Eviction removes one running task so that a preemptor or reclaimer can run.
type Eviction struct {
	Task   *framework.Task
	Reason string
	// By is the job the eviction makes room for.
	By *framework.Job
}

// Result is what one session decided.
type Result struct {
	Bindings  []Binding
	Evictions []Eviction
}

// Session is one run of the actions over a snapshot.
type Session struct {
	*Scheduler
	Snap   *framework.Snapshot
	Result Result
	rng    *rand.Rand
	// next is where the next node search starts (kube-scheduler's rotating offset).
	next int
	// failed are the jobs allocate could not place, for preempt, reclaim and backfill.
	failed []*framework.Job
	// reservedFor is the job nodes are reserved for, if any.
	reservedFor *framework.Job
	// shadow is when shadowFor, the job nodes are reserved for, is expected to start.
	shadowFor *framework.Job
	shadow    time.Time
	// estimates are the runtime estimates of the session's jobs, as asked.
	estimates map[*framework.Job]time.Duration
	// blocked queues stop allocating after their head job fails (backfill takes over).
	blocked map[*framework.Queue]bool
	// evicted are the tasks evicted in this session; they are not placed again in it.
	evicted map[*framework.Task]bool
	// unfit caches task shapes that fit no node in this session (reset by evictions).
	unfit      map[shapeKey]bool
	unfitStats map[shapeKey]*framework.FitStats
}

// Statement is a set of tentative placements and evictions, undone by Discard.
type Statement struct {
	ssn *Session
	ops []op
}

type op struct {
	task     *framework.Task
	node     *framework.Node
	gpus     framework.GPUSet
	milli    int64
	status   framework.TaskStatus
	evict    bool
	reason   string
	by       *framework.Job
	pipeline bool
}

// NewStatement opens a statement.
func (s *Session) NewStatement() *Statement { return &Statement{ssn: s} }

// Allocate places t tentatively.
func (st *Statement) Allocate(t *framework.Task, n *framework.Node, gpus framework.GPUSet, milli int64, pipelined bool) {
	st.ops = append(st.ops, op{task: t, node: n, gpus: gpus, milli: milli, status: t.Status, pipeline: pipelined})
	n.Place(t, gpus, milli)
	t.Status = framework.TaskAllocated
	st.ssn.charge(t, &t.Placed, +1)
}

// Evict takes t off its node tentatively; the resources are free for this session.
func (st *Statement) Evict(t *framework.Task, by *framework.Job, reason string) {
	st.ops = append(st.ops, op{task: t, node: t.Node, gpus: t.GPUs, milli: t.GPUMilli, status: t.Status, evict: true, reason: reason, by: by})
	st.ssn.charge(t, &t.Placed, -1)
	t.Node.Remove(t)
	t.Status = framework.TaskPending
}

// Discard undoes the statement.
func (st *Statement) Discard() { st.rollback(0) }

// mark is a point the statement can roll back to.
func (st *Statement) mark() int { return len(st.ops) }

// rollback undoes every operation after mark.
func (st *Statement) rollback(mark int) {
	for i := len(st.ops) - 1; i >= mark; i-- {
		o := st.ops[i]
		if o.evict {
			o.node.Place(o.task, o.gpus, o.milli)
			st.ssn.charge(o.task, &o.task.Placed, +1)
		} else {
			st.ssn.charge(o.task, &o.task.Placed, -1)
			o.node.Remove(o.task)
		}
		o.task.Status = o.status
	}
	st.ops = st.ops[:mark]
}

// Commit turns the statement into session decisions.
func (st *Statement) Commit() {
	for _, o := range st.ops {
		if o.evict {
			st.ssn.Result.Evictions = append(st.ssn.Result.Evictions, Eviction{Task: o.task, Reason: o.reason, By: o.by})
			o.task.Job.Pending = &framework.Reason{Code: framework.ReasonEvicted, Message: o.reason}
			st.ssn.rememberEviction(o.task.Job, o.by)
			st.ssn.evicted[o.task] = true
			clear(st.ssn.unfit)
			continue
		}
		if o.task.Status != framework.TaskAllocated {
			continue // evicted again later in the same statement
		}
		st.ssn.Result.Bindings = append(st.ssn.Result.Bindings, Binding{Task: o.task, Node: o.node, GPUs: o.gpus, GPUMilli: o.milli, Pipelined: o.pipeline})
	}
	st.ops = st.ops[:0]
}

// charge adds (sign=+1) or removes (-1) r from the task's queue and its parents.
func (s *Session) charge(t *framework.Task, r *framework.Resources, sign int) {
	if t.Job == nil || t.Job.Queue == nil {
		return
	}
	for q := t.Job.Queue; q != nil; q = q.Parent {
		if sign > 0 {
			q.Allocated.Add(r)
		} else {
			q.Allocated.Sub(r)
		}
	}
}

// minAvailable is how many tasks must hold resources together for the job to run.
func (s *Session) minAvailable(j *framework.Job) int {
	if s.gang == nil {
		return 1
	}
	return s.gang.MinAvailable(j)
}

// sortJobs orders jobs by the job-order plugins.
func (s *Session) sortJobs(jobs []*framework.Job) {
	slices.SortStableFunc(jobs, func(a, b *framework.Job) int {
		for _, o := range s.jobOrder {
			if c := o.CompareJobs(a, b); c != 0 {
				return c
			}
		}
		return 0
	})
}
