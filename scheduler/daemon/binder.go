package daemon

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// Binder commits a session's bindings and evictions, and keeps gangs whole.
type Binder struct {
	client  client.Client
	cache   *cache.Cache
	metrics *Metrics
	log     logr.Logger
	opts    Options
	events  *controller.EventSink
	// partial maps the UID of a gang found bound below minMember to when it was first
	// found so; it gets one period to complete before its bound pods are evicted.
	partial map[string]time.Time
	// blocked maps the UID of a victim whose eviction a PodDisruptionBudget refused to
	// when it first and last did.
	blocked map[types.UID]refusals
	mu      sync.Mutex // guards blocked during the parallel evictions
}

func newBinder(c client.Client, ca *cache.Cache, m *Metrics, ev *controller.EventSink, log logr.Logger, opts Options) *Binder {
	return &Binder{client: c, cache: ca, metrics: m, events: ev, log: log, opts: opts, partial: map[string]time.Time{},
		blocked: map[types.UID]refusals{}}
}

// eviction is one pod to evict and why.
type eviction struct {
	task   *framework.Task
	reason string
}

// podsMissingGrace is how long a gang bound below minMember may wait for its
// controller to make its missing pods (a Job's pods created in batches, a JobSet's next
// stage, a LeaderWorkerSet's workers once its leader is ready) before it is evicted.
const podsMissingGrace = time.Minute

// repairGangs finds gangs bound below minMember (binds that failed, a scheduler
// restarted mid-gang, members deleted). Such a gang gets one period for its missing
// members to bind — this session placed them again if it could — or podsMissingGrace
// while some of them do not exist yet, and is then evicted: its bound pods go, so that
// it restarts whole rather than holding GPUs it cannot use. It returns the evictions
// and the jobs whose bindings must not be written.
func (b *Binder) repairGangs(snap *framework.Snapshot, now time.Time) ([]eviction, map[*framework.Job]bool) {
	seen := map[string]bool{}
	var out []eviction
	evicted := map[*framework.Job]bool{}
	for _, j := range snap.Jobs {
		if j.Queue == nil || j.MinMember <= 1 {
			continue
		}
		bound := j.Count(framework.TaskRunning, framework.TaskReleasing, framework.TaskSucceeded)
		if bound == 0 || bound >= j.MinMember {
			continue
		}
		seen[j.UID] = true
		first, ok := b.partial[j.UID]
		if !ok {
			b.partial[j.UID] = now
			continue
		}
		grace := b.opts.Period
		if len(j.Tasks) < j.MinMember { // its controller has not made them all yet
			grace = max(grace, podsMissingGrace)
		}
		if now.Sub(first) < grace {
			continue
		}
		why := fmt.Sprintf("gang %s had %d of %d pods bound for %s and could not complete; its bound pods are evicted so that it restarts whole",
			j.Key(), bound, j.MinMember, now.Sub(first).Round(time.Millisecond))
		if j.Pending != nil {
			why += " (" + j.Pending.Message + ")"
		}
		for _, t := range j.Tasks {
			if t.Status == framework.TaskRunning {
				out = append(out, eviction{task: t, reason: why})
			}
		}
		evicted[j] = true
		delete(b.partial, j.UID)
	}
	for uid := range b.partial {
		if !seen[uid] {
			delete(b.partial, uid)
		}
	}
	return out, evicted
}

// pipelinedJobs are the jobs with a binding that waits for evictions of the session.
func pipelinedJobs(res *scheduler.Result) map[*framework.Job]bool {
	out := map[*framework.Job]bool{}
	for _, bd := range res.Bindings {
		if bd.Pipelined {
			out[bd.Task.Job] = true
		}
	}
	return out
}

// bind binds the session's placements, concurrently. A job with a binding that waits
// for evictions binds nothing yet: the next session places it once the victims are gone.
func (b *Binder) bind(ctx context.Context, state *cache.State, bindings []scheduler.Binding, skip map[*framework.Job]bool) (bound, failed int) {
	pipelined := pipelinedJobs(&scheduler.Result{Bindings: bindings})
	for j := range skip {
		pipelined[j] = true
	}
	var made map[types.UID]*resourcev1.ResourceClaim
	if len(bindings) > 0 && len(state.Claims) > 0 {
		made = extendedClaimsOf(state)
	}
	var ok, bad, stopped atomic.Int64
	// Background, not ctx: once ctx is done every binding is still tried (and fails at
	// once), so that the count of those the stop cut short is whole.
	workqueue.ParallelizeUntil(context.Background(), b.opts.BindWorkers, len(bindings), func(i int) {
		bd := bindings[i]
		if pipelined[bd.Task.Job] {
			return
		}
		pod := state.Pods[types.UID(bd.Task.UID)]
		if pod == nil {
			return
		}
		if err := b.bindOne(ctx, state, pod, bd, made); err != nil {
			if ctx.Err() != nil {
				// The scheduler is stopping (terminated, or its lease lost): not the pod's
				// failure, and no event per pod while thousands of binds are cut short.
				stopped.Add(1)
				return
			}
			bad.Add(1)
			b.metrics.ScheduleAttempts.WithLabelValues("error").Inc()
			b.log.Info("bind failed", "pod", bd.Task.Key(), "node", bd.Node.Name, "error", err.Error())
			b.events.Warn(pod, "FailedBinding", "Binding", "bind to %s failed: %v; retried next session", bd.Node.Name, err)
			return
		}
		ok.Add(1)
		b.metrics.ScheduleAttempts.WithLabelValues("scheduled").Inc()
		b.metrics.E2ESchedulingDelay.Observe(b.opts.Now().Sub(pod.CreationTimestamp.Time).Seconds())
	})
	if n := stopped.Load(); n > 0 {
		b.log.Info("binds cut short: the scheduler is stopping; their pods stay pending for the next leader, which also repairs any gang left partly bound", "binds", n)
	}
	return int(ok.Load()), int(bad.Load())
}

// bindOne writes one Binding carrying the GPU assignment and the pod's UID, which the
// API server copies onto the pod: one write per pod, after the allocation of its
// resource claims, if any (released again should the bind fail), or of the claim made
// for its extended resources (deleted again should the bind fail); made are the claims
// made so far, by pod UID.
func (b *Binder) bindOne(ctx context.Context, state *cache.State, pod *corev1.Pod, bd scheduler.Binding, made map[types.UID]*resourcev1.ResourceClaim) error {
	claims, err := b.allocateClaims(ctx, state, pod, bd)
	var extended *resourcev1.ResourceClaim
	if err == nil && viaClaim(bd) {
		extended, err = b.extendedClaim(ctx, state, pod, bd, made)
	}
	if err == nil && (len(claims) > 0 || extended != nil) {
		err = failpoint.Inject(failpoint.SchedulerClaimsAllocated)
	}
	if err == nil {
		err = b.writeBinding(ctx, pod, bd)
		if err != nil && ctx.Err() == nil && b.boundAnyway(pod, bd.Node.Name) {
			// The bind was written but its answer lost: the pod and its claims stay.
			err = nil
		}
	}
	if err != nil {
		for _, c := range claims {
			if rerr := b.release(context.Background(), c); rerr != nil {
				b.log.Info("releasing the claim of a pod that did not bind failed; retried once its pod is gone", "claim", c.Namespace+"/"+c.Name, "error", rerr.Error())
			}
		}
		if extended != nil {
			b.dropExtendedClaim(extended)
		}
	}
	return err
}

// writeBinding writes the pod's Binding and assumes it bound.
func (b *Binder) writeBinding(ctx context.Context, pod *corev1.Pod, bd scheduler.Binding) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: bd.Node.Name},
	}
	var assignment string
	if a, ok := snapshot.Assignment(bd.Task, bd.Node, bd.GPUs); ok {
		assignment = a.Encode()
		// The pod's UID marks the assignment as the scheduler's: the node agent refuses an
		// assignment that does not name the pod's own UID.
		binding.Annotations = map[string]string{tesserav1.AnnotationGPUAssign: assignment, tesserav1.AnnotationBoundPodUID: string(pod.UID)}
	}
	// Assume first: the next session must see the capacity taken even if the watch
	// reports the bind late.
	b.cache.Assume(pod.UID, bd.Node.Name, assignment, b.opts.Now())
	if err := b.client.SubResource("binding").Create(ctx, pod, binding); err != nil {
		b.cache.Forget(pod.UID)
		return err
	}
	// Count the assumption's lifetime from the bind, not from the session: binding a
	// session of tens of thousands of pods takes longer than assumeTTL, and a watch that
	// lags behind must not make the first pods of the session look pending again.
	b.cache.Assume(pod.UID, bd.Node.Name, assignment, b.opts.Now())
	return failpoint.Inject(failpoint.SchedulerBound)
}

// boundAnyway reports whether pod is bound to node after all, as the API server says
// now: a bind whose answer was lost (a timeout, a connection cut) may have been written.
func (b *Binder) boundAnyway(pod *corev1.Pod, node string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fresh := &corev1.Pod{}
	if err := b.client.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
		return false
	}
	return fresh.UID == pod.UID && fresh.Spec.NodeName == node
}

// refusals are when PodDisruptionBudgets first and last refused a victim's eviction.
type refusals struct{ first, last time.Time }

// evict evicts pods through the Eviction API (Evict). A PodDisruptionBudget's refusal
// (429) is recorded as an event and decided again next session; a victim that budgets
// have refused for Options.DisruptionBudgetTimeout is deleted (forceAfterBudget): a
// tenant's budget that allows no disruption would otherwise keep what its queue borrows
// forever. A victim not chosen again within twice the timeout starts its wait anew.
func (b *Binder) evict(ctx context.Context, state *cache.State, evictions []eviction) int {
	seen := map[string]bool{}
	uniq := evictions[:0:0]
	for _, e := range evictions {
		if !seen[e.task.UID] {
			seen[e.task.UID] = true
			uniq = append(uniq, e)
		}
	}
	now := b.opts.Now()
	for uid, r := range b.blocked {
		if state.Pods[uid] == nil || now.Sub(r.last) > 2*b.opts.DisruptionBudgetTimeout {
			delete(b.blocked, uid)
		}
	}
	var n atomic.Int64
	// Background, not ctx, as in bind.
	workqueue.ParallelizeUntil(context.Background(), b.opts.BindWorkers, len(uniq), func(i int) {
		e := uniq[i]
		pod := state.Pods[types.UID(e.task.UID)]
		if pod == nil || pod.DeletionTimestamp != nil {
			return
		}
		err := controller.Evict(ctx, b.client, pod)
		if err == nil {
			err = failpoint.Inject(failpoint.SchedulerEvicted)
		}
		switch {
		case err == nil:
			n.Add(1)
			b.preempted(pod, "Evict", e.reason)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		case apierrors.IsTooManyRequests(err):
			if b.forceAfterBudget(ctx, pod, e.reason) {
				n.Add(1)
			}
		default:
			b.log.Info("eviction failed", "pod", e.task.Key(), "error", err.Error())
			b.events.Warn(pod, "EvictionFailed", "Evict", "eviction failed: %v; retried later", err)
		}
	})
	return int(n.Load())
}

// forceAfterBudget handles a victim whose eviction a PodDisruptionBudget refused: it
// deletes the pod once budgets have refused it for Options.DisruptionBudgetTimeout, and
// reports whether it did.
func (b *Binder) forceAfterBudget(ctx context.Context, pod *corev1.Pod, reason string) bool {
	now, timeout := b.opts.Now(), b.opts.DisruptionBudgetTimeout
	b.mu.Lock()
	r, ok := b.blocked[pod.UID]
	if !ok {
		r.first = now
	}
	r.last = now
	b.blocked[pod.UID] = r
	b.mu.Unlock()
	if waited := now.Sub(r.first); waited < timeout {
		b.events.Warn(pod, "EvictionBlocked", "Evict", "a PodDisruptionBudget allows no disruption now; retried, and the pod deleted if budgets still refuse after %s (%s)",
			timeout-waited, reason)
		return false
	}
	err := b.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			b.events.Warn(pod, "EvictionFailed", "Delete", "deleting the pod its PodDisruptionBudget kept failed: %v; retried later", err)
		}
		return false
	}
	b.mu.Lock()
	delete(b.blocked, pod.UID)
	b.mu.Unlock()
	b.preempted(pod, "Delete", fmt.Sprintf("deleted: PodDisruptionBudgets refused its eviction for %s, the longest they may delay a preemption or reclaim (%s)",
		timeout, reason))
	return true
}

// preempted records a victim that action (Evict or Delete) has removed: the cache counts
// it as leaving, the metric and the pod's Preempted event say why.
func (b *Binder) preempted(pod *corev1.Pod, action, note string) {
	b.cache.AssumeEvicted(pod.UID, b.opts.Now())
	b.metrics.PreemptionVictims.Inc()
	b.events.Normal(pod, "Preempted", action, "%s", note)
}
