package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

var actionRegistry = map[string]Action{
	"enqueue":  enqueue{},
	"allocate": allocate{},
	"preempt":  preempt{},
	"reclaim":  reclaim{},
	"backfill": backfill{},
}

// ActionNames lists the actions: DefaultActions' in its order, then any others by name.
func ActionNames() []string {
	names := splitActions(DefaultActions)
	for _, n := range slices.Sorted(maps.Keys(actionRegistry)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// enqueue admits pending jobs whose queue can ever hold their gang, so allocate never
// works on gangs that cannot fit. Enqueue gates (Volcano's overcommit, a queue's real
// capability) also count what admitted jobs that do not run yet will take; with gates,
// jobs are admitted queue by queue in queue order, each queue's in job order.
type enqueue struct{}

func (enqueue) Name() string { return "enqueue" }

func (enqueue) Execute(s *Session) {
	candidates := make([]*framework.Job, 0, len(s.Snap.Jobs))
	for _, j := range s.Snap.Jobs {
		if j.Refused != nil || j.Held != nil || j.Count(framework.TaskPending) == 0 {
			continue
		}
		if j.Inqueue {
			if len(s.enqueueGates) > 0 && holding(j) < s.minAvailable(j) {
				need := s.minRequest(j)
				held := holdingResources(j)
				need.Sub(&held)
				need = need.AtLeastZero()
				for _, g := range s.enqueueGates {
					g.Enqueued(j, &need)
				}
			}
			continue
		}
		candidates = append(candidates, j)
	}
	if len(s.enqueueGates) > 0 {
		s.sortJobs(candidates)
		if s.queueOrder != nil {
			slices.SortStableFunc(candidates, func(a, b *framework.Job) int {
				if a.Queue == nil || b.Queue == nil || a.Queue == b.Queue {
					return 0
				}
				return s.queueOrder.CompareQueues(a.Queue, b.Queue)
			})
		}
	}
	// Refusals leave the gates as they were, so until a job is admitted, a job of the
	// same queue and minimum is refused for the same reason: a backlog of thousands
	// costs one check per shape.
	refused := map[gateKey]*framework.Reason{}
	for _, j := range candidates {
		min := s.minRequest(j)
		if j.Queue != nil {
			if msg := neverFits(j.Queue, &min); msg != "" {
				j.Pending = &framework.Reason{Code: framework.ReasonNotEnqueued, Message: msg}
				continue
			}
		}
		if min.GPU > s.Snap.Total.GPU {
			j.Pending = &framework.Reason{Code: framework.ReasonClusterTooSmall,
				Message: fmt.Sprintf("gang needs %s GPU, the cluster has %s", framework.FormatGPU(min.GPU), framework.FormatGPU(s.Snap.Total.GPU))}
			continue
		}
		if len(s.enqueueGates) > 0 {
			key := gateKey{j.Queue, min.MilliCPU, min.Memory, min.GPU}
			if r := refused[key]; r != nil && min.Scalar == nil {
				j.Pending = r
				continue
			}
			if msg := s.gateRefuses(j, &min); msg != "" {
				j.Pending = &framework.Reason{Code: framework.ReasonNotEnqueued, Message: msg}
				refused[key] = j.Pending
				continue
			}
			for _, g := range s.enqueueGates {
				g.Enqueued(j, &min)
			}
			clear(refused)
		}
		j.Inqueue = true
	}
}

// gateKey is what an enqueue gate's answer for a job depends on.
type gateKey struct {
	queue            *framework.Queue
	cpu, memory, gpu int64
}

// gateRefuses says why an enqueue gate keeps j out now, or "".
func (s *Session) gateRefuses(j *framework.Job, min *framework.Resources) string {
	for _, g := range s.enqueueGates {
		if ok, msg := g.Enqueueable(j, min); !ok {
			return msg
		}
	}
	return ""
}

// minRequest is what the job's first minAvailable tasks (or its minResources) need.
func (s *Session) minRequest(j *framework.Job) framework.Resources {
	if !j.MinResources.IsZero() {
		return j.MinResources
	}
	var r framework.Resources
	for i, t := range j.Tasks {
		if i >= s.minAvailable(j) {
			break
		}
		r.Add(&t.Request)
		r.GPU += t.GPU.NominalMilli(s.Snap.MaxGPUMemoryMiB)
	}
	return r
}

// neverFits says why a queue (or a parent) can never hold req, or "".
func neverFits(q *framework.Queue, req *framework.Resources) string {
	for _, a := range q.Ancestors() {
		if ok, res := req.FitsCapability(&framework.Resources{}, &a.Capability); !ok {
			return fmt.Sprintf("gang needs %s %s but queue %s has capability %s %s; raise the capability or shrink the gang",
				framework.FormatDim(res, req), framework.UnitOf(res), a.Name, framework.FormatDim(res, &a.Capability), framework.UnitOf(res))
		}
	}
	return ""
}

// allocate serves queues lowest share first and each queue's jobs in order, placing
// whole gangs. A queue whose head job does not fit stops here and backfill goes on,
// unless tryEveryJob is set: then, as in Volcano, every job of the queue is tried.
type allocate struct{}

func (allocate) Name() string { return "allocate" }

func (allocate) Execute(s *Session) {
	perQueue := map[*framework.Queue][]*framework.Job{}
	var queues []*framework.Queue
	for _, j := range s.Snap.Jobs {
		if (s.gated && !j.Inqueue) || j.Refused != nil || j.Held != nil || j.Count(framework.TaskPending) == 0 {
			continue
		}
		if _, ok := perQueue[j.Queue]; !ok {
			queues = append(queues, j.Queue)
		}
		perQueue[j.Queue] = append(perQueue[j.Queue], j)
	}
	for _, q := range queues {
		s.sortJobs(perQueue[q])
	}
	for len(queues) > 0 {
		qi := 0
		if s.queueOrder != nil {
			for i := 1; i < len(queues); i++ {
				if queues[i] != nil && queues[qi] != nil && s.queueOrder.CompareQueues(queues[i], queues[qi]) < 0 {
					qi = i
				}
			}
		}
		q := queues[qi]
		jobs := perQueue[q]
		if s.overused != nil && q != nil {
			if over, msg := s.overused.Overused(q); over {
				r := &framework.Reason{Code: framework.ReasonQueueCapability, Message: msg}
				for _, j := range jobs {
					j.Pending = r
				}
				s.failed = append(s.failed, jobs...)
				delete(perQueue, q)
				queues = slices.Delete(queues, qi, qi+1)
				continue
			}
		}
		j := jobs[0]
		perQueue[q] = jobs[1:]
		if len(perQueue[q]) == 0 {
			queues = slices.Delete(queues, qi, qi+1)
		}
		if s.blocked[q] {
			s.failed = append(s.failed, j)
			if j.Pending == nil {
				j.Pending = &framework.Reason{Code: framework.ReasonWaitingInLine, Message: "waiting behind a larger job of the same queue"}
			}
			continue
		}
		if s.tryJob(j, false) {
			continue
		}
		s.failed = append(s.failed, j)
		if q != nil && j.Pending != nil && j.Pending.Code != framework.ReasonQueueCapability && !s.cfg.TryEveryJob {
			s.blocked[q] = true
		}
	}
}

// backfill places jobs that allocate left behind into capacity the blocked jobs cannot
// use yet; a gang that has waited longer than reservationAfter first gets nodes
// reserved, and one that has waited past reservationDeadline preempts the work on them
// that yields to it.
type backfill struct{}

func (backfill) Name() string { return "backfill" }

func (backfill) Execute(s *Session) {
	if len(s.failed) == 0 {
		return
	}
	s.sortJobs(s.failed)
	if after := s.cfg.ReservationAfter.Duration; after > 0 {
		for _, j := range s.failed {
			// One reservation at a time, for the most important starving job that can use
			// one: its gang's pods all exist and some node could hold them.
			if !j.WaitingSince.IsZero() && s.Snap.Now.Sub(j.WaitingSince) >= after && j.Count(framework.TaskPending) > 0 &&
				waitsForCapacity(j) && len(j.Tasks) >= s.minAvailable(j) && s.withinDeserved(j) && s.reserve(j) {
				if d := s.cfg.ReservationDeadline.Duration; d > 0 && s.Snap.Now.Sub(j.WaitingSince) >= d {
					s.clearReserved(j)
				}
				break
			}
		}
	}
	// Jobs that were tried already do not fit: within a session capacity only shrinks.
	for _, j := range s.failed {
		if j.Count(framework.TaskPending) > 0 && j.Pending != nil && j.Pending.Code == framework.ReasonWaitingInLine {
			s.tryJob(j, false)
		}
	}
}

// withinDeserved reports whether the job's queue holds no more than its deserved
// share (its share by weight when it has none): holding nodes for a queue that
// borrows would keep the other queues out of what they are owed.
func (s *Session) withinDeserved(j *framework.Job) bool {
	if s.shares == nil || j.Queue == nil {
		return true
	}
	deserved, entitled := s.shares.Share(j.Queue)
	return j.Queue.Allocated.GPU <= cmp.Or(deserved.GPU, entitled.GPU)
}
