package autoscale

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// ReclaimPolicy is a Queue's spec.idleReclaim with its defaults applied.
type ReclaimPolicy struct {
	// Threshold is the GPU utilization, in percent, at or below which a GPU is idle.
	Threshold float64
	// IdleFor is how long a pod's GPUs stay idle before its owner is told.
	IdleFor time.Duration
	// GracePeriod is how long after being told the pod's workload is suspended.
	GracePeriod time.Duration
	// DryRun tells and reports, and suspends nothing.
	DryRun bool
}

// Defaults of the Queue spec.idleReclaim fields, as the CRD sets them.
const (
	DefaultReclaimThreshold   = 1
	DefaultReclaimIdleFor     = time.Hour
	DefaultReclaimGracePeriod = 30 * time.Minute
)

// ReclaimPolicyFrom reads q's spec.idleReclaim with its defaults applied; ok is false
// when the queue has none. Errors name the field and the fix.
func ReclaimPolicyFrom(q *tesserav1.Queue) (pol ReclaimPolicy, ok bool, err error) {
	s := q.Spec.IdleReclaim
	if s == nil {
		return ReclaimPolicy{}, false, nil
	}
	pol = ReclaimPolicy{Threshold: float64(s.UtilizationThreshold), IdleFor: DefaultReclaimIdleFor, GracePeriod: DefaultReclaimGracePeriod, DryRun: true}
	if s.UtilizationThreshold < 0 || s.UtilizationThreshold > 100 {
		return pol, true, fmt.Errorf("queue %s: spec.idleReclaim.utilizationThreshold %d must be a percent in [0, 100] (default %d)", q.Name, s.UtilizationThreshold, DefaultReclaimThreshold)
	}
	if s.IdleFor != nil {
		if s.IdleFor.Duration <= 0 {
			return pol, true, fmt.Errorf("queue %s: spec.idleReclaim.idleFor %s must be positive (for example 1h)", q.Name, s.IdleFor.Duration)
		}
		pol.IdleFor = s.IdleFor.Duration
	}
	if s.GracePeriod != nil {
		if s.GracePeriod.Duration < 0 {
			return pol, true, fmt.Errorf("queue %s: spec.idleReclaim.gracePeriod %s must not be negative (for example 30m)", q.Name, s.GracePeriod.Duration)
		}
		pol.GracePeriod = s.GracePeriod.Duration
	}
	if s.DryRun != nil {
		pol.DryRun = *s.DryRun
	}
	return pol, true, nil
}

// ReclaimQueue is what the reclaim planner knows of one queue.
type ReclaimQueue struct {
	Policy ReclaimPolicy
	// AllocatedGPUs and DeservedGPUs (milli-GPUs) are what the queue holds and what the
	// scheduler core's queue-share rule says it deserves; they decide whether an
	// opt-out holds.
	AllocatedGPUs, DeservedGPUs int64
}

// withinDeserved reports whether the queue holds no more GPUs than it deserves.
func (q ReclaimQueue) withinDeserved() bool { return q.AllocatedGPUs <= q.DeservedGPUs }

// ReclaimSample is one observation of a running pod that holds GPUs.
type ReclaimSample struct {
	// Pod identifies the pod (its UID); Name is namespace/name, for messages.
	Pod, Name string
	Queue     string
	// GPUs is how many GPUs the pod is assigned.
	GPUs int
	// Utilization is the highest utilization, in percent, of its GPUs.
	Utilization float64
	// At is when the node agent sampled the GPUs.
	At time.Time
}

// OptOut reports whether a pod or its workload carries tessera.dev/idle-reclaim:
// "false". Plan asks only about pods idle for their queue's idleFor; a pod whose
// answer is an error is left as it stands this round.
type OptOut func(ReclaimSample) (bool, error)

// ReclaimStep is what the planner decided for an idle pod.
type ReclaimStep string

// The steps, in the order a pod goes through them.
const (
	// ReclaimNotify: idle for idleFor; the owner is told, and the workload is
	// suspended at SuspendAt unless the GPUs are used again.
	ReclaimNotify ReclaimStep = "Notify"
	// ReclaimSuspend: still idle gracePeriod after the owner was told.
	ReclaimSuspend ReclaimStep = "Suspend"
	// ReclaimSpare: idle for idleFor, but opted out while its queue holds no more than
	// its deserved share.
	ReclaimSpare ReclaimStep = "Spare"
	// ReclaimCancel: the GPUs of a pod that was told were used again; its clock is reset.
	ReclaimCancel ReclaimStep = "Cancel"
)

// ReclaimDecision is the planner's decision for one pod in one round.
type ReclaimDecision struct {
	Pod, Name, Queue string
	GPUs             int
	Step             ReclaimStep
	// Changed is set in the round the pod reached Step in its current idle stretch:
	// the round to tell in.
	Changed bool
	// Done is set on Suspend once Suspended recorded the suspension; until then the
	// suspension is due every round (it failed, or a PodDisruptionBudget refused it).
	Done bool
	// IdleSince is the first idle sample of the stretch; IdleFor how long it lasted by
	// the last sample.
	IdleSince time.Time
	IdleFor   time.Duration
	// SuspendAt is when a told pod's workload is suspended (on the samples' clock).
	SuspendAt time.Time
	DryRun    bool
	// Note says why a pod's opt-out holds (Spare) or does not (Notify, Suspend).
	Note string
}

// IdleReclaim follows the idle stretch of each pod's GPUs and decides, per the
// policy of the pod's queue, when to tell its owner and when to suspend its workload.
// Idle time is measured between the node agent's samples (GPUNode status), never
// against the caller's clock, so a node whose agent stopped reporting never makes its
// pods look idle for longer. A pod whose GPUs go above the threshold starts over. It
// keeps its state in memory: a restarted autoscaler starts every stretch again, which
// only delays a suspension. It is not safe for concurrent use.
type IdleReclaim struct {
	stretches map[string]*stretch
}

// stretch is a pod's current idle stretch.
type stretch struct {
	since, last time.Time
	threshold   float64
	notified    time.Time // sample at which the owner was told; zero: not told
	step        ReclaimStep
	suspended   bool
	// dryRun is the policy's dryRun as last observed; suspendedDry, whether Suspended
	// came in a dry run: a policy that stops being one suspends for real.
	dryRun, suspendedDry bool
}

// Plan takes this round's samples (every running pod of a queue with a policy; pods
// left out are forgotten) and returns a decision for each pod idle for its queue's
// idleFor or whose told stretch ended, by pod name. optOut may be nil: no opt-outs.
func (r *IdleReclaim) Plan(samples []ReclaimSample, queues map[string]ReclaimQueue, optOut OptOut) []ReclaimDecision {
	if r.stretches == nil {
		r.stretches = map[string]*stretch{}
	}
	seen := make(map[string]bool, len(samples))
	var out []ReclaimDecision
	for _, s := range samples {
		q, ok := queues[s.Queue]
		if !ok {
			continue
		}
		seen[s.Pod] = true
		if d, ok := r.observe(s, q, optOut); ok {
			out = append(out, d)
		}
	}
	for pod := range r.stretches {
		if !seen[pod] {
			delete(r.stretches, pod)
		}
	}
	slices.SortFunc(out, func(a, b ReclaimDecision) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// observe advances s.Pod's stretch by the sample and decides.
func (r *IdleReclaim) observe(s ReclaimSample, q ReclaimQueue, optOut OptOut) (ReclaimDecision, bool) {
	pol := q.Policy
	st := r.stretches[s.Pod]
	d := ReclaimDecision{Pod: s.Pod, Name: s.Name, Queue: s.Queue, GPUs: s.GPUs, DryRun: pol.DryRun}
	if s.Utilization > pol.Threshold || (st != nil && st.threshold != pol.Threshold) {
		delete(r.stretches, s.Pod)
		if st != nil && !st.notified.IsZero() && !st.suspended {
			d.Step, d.Changed, d.IdleSince, d.IdleFor = ReclaimCancel, true, st.since, st.last.Sub(st.since)
			return d, true
		}
		if s.Utilization > pol.Threshold {
			return d, false
		}
		st = nil
	}
	if st == nil {
		st = &stretch{since: s.At, last: s.At, threshold: pol.Threshold}
		r.stretches[s.Pod] = st
	}
	if s.At.After(st.last) {
		st.last = s.At
	}
	st.dryRun = pol.DryRun
	if st.suspended && st.suspendedDry && !pol.DryRun {
		st.suspended = false
	}
	d.IdleSince, d.IdleFor = st.since, st.last.Sub(st.since)
	if d.IdleFor < pol.IdleFor {
		return d, false
	}
	out := false
	if optOut != nil && !st.suspended {
		var err error
		if out, err = optOut(s); err != nil {
			return d, false
		}
	}
	step := ReclaimNotify
	switch {
	case st.suspended:
		step = ReclaimSuspend
	case out && q.withinDeserved():
		step = ReclaimSpare
		st.notified = time.Time{}
		d.Note = fmt.Sprintf("its opt-out %s: \"false\" holds while queue %s holds %s of the %s GPUs it deserves",
			tesserav1.AnnotationIdleReclaim, s.Queue, milliGPUs(q.AllocatedGPUs), milliGPUs(q.DeservedGPUs))
	default:
		if st.notified.IsZero() {
			st.notified = st.last
		}
		d.SuspendAt = st.notified.Add(pol.GracePeriod)
		if !st.last.Before(d.SuspendAt) {
			step = ReclaimSuspend
		}
		if out {
			d.Note = fmt.Sprintf("its opt-out %s: \"false\" does not hold: queue %s holds %s GPUs, more than the %s it deserves",
				tesserav1.AnnotationIdleReclaim, s.Queue, milliGPUs(q.AllocatedGPUs), milliGPUs(q.DeservedGPUs))
		}
	}
	d.Step, d.Changed, d.Done = step, step != st.step, st.suspended
	st.step = step
	return d, true
}

// Suspended records that pod's workload was suspended (or, in a dry run, that it
// would have been): later rounds decide Suspend, Done, until the pod ends or its
// GPUs are used again.
func (r *IdleReclaim) Suspended(pod string) {
	if st := r.stretches[pod]; st != nil {
		st.suspended, st.suspendedDry = true, st.dryRun
	}
}

// milliGPUs formats milli-GPUs as GPUs: "4", "2.5".
func milliGPUs(m int64) string {
	return fmt.Sprintf("%g", float64(m)/1000)
}
