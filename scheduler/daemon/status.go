package daemon

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// AnnotationImplicit marks a PodGroup the scheduler created for an implicit gang (a
// batch Job, a pod-group label or Volcano's group annotation without a PodGroup).
const AnnotationImplicit = "tessera.dev/implicit"

// StatusWriter reports what a session decided: PodGroup and Queue status, PodGroups of
// implicit gangs, events on pending pods, queue metrics. It patches only what changed.
type StatusWriter struct {
	client  client.Client
	events  *controller.EventSink
	metrics *Metrics
	log     logr.Logger
}

func newStatusWriter(c client.Client, ev *controller.EventSink, m *Metrics, log logr.Logger) *StatusWriter {
	return &StatusWriter{client: c, events: ev, metrics: m, log: log}
}

func (w *StatusWriter) write(ctx context.Context, snap *framework.Snapshot, state *cache.State) {
	pending := map[string]int{}
	jobs := map[*framework.Queue]*tesserav1.QueueStatus{}
	for _, j := range snap.Jobs {
		if j.Queue == nil {
			continue // another scheduler's pod
		}
		if j.Count(framework.TaskPending) > 0 {
			pending[j.Queue.Name]++
			w.pending(ctx, j, state)
		}
		w.podGroup(ctx, j, state)
		c := jobs[j.Queue]
		if c == nil {
			c = &tesserav1.QueueStatus{}
			jobs[j.Queue] = c
		}
		switch {
		case j.Ready():
			c.Running++
		case j.Inqueue:
			c.Inqueue++
		default:
			c.Pending++
		}
	}
	for _, q := range snap.Queues {
		w.queueMetrics(q, pending[q.Name])
		if obj := state.Queues[q.Name]; obj != nil {
			w.queue(ctx, q, obj, jobs[q])
		}
	}
}

// pending records why the job's pending pods wait: an event and their PodScheduled
// condition. Every pod of a gang gets it in the same session, so that a cluster
// autoscaler sees at once all the nodes the gang needs.
func (w *StatusWriter) pending(ctx context.Context, j *framework.Job, state *cache.State) {
	if j.Pending == nil {
		return
	}
	for _, t := range j.Tasks {
		if t.Status != framework.TaskPending {
			continue
		}
		if pod := state.Pods[types.UID(t.UID)]; pod != nil {
			w.events.Warn(pod, "FailedScheduling", "Scheduling", "%s: %s", j.Pending.Code, j.Pending.Message)
			w.podScheduled(ctx, pod, j.Pending)
		}
	}
}

// conditionRefresh is how often at most a pending pod's PodScheduled condition is
// rewritten when only its message changed.
const conditionRefresh = time.Minute

// podScheduled sets a pending pod's PodScheduled condition to False with why it waits,
// as kube-scheduler writes it. Its reason is Unschedulable, which Cluster Autoscaler,
// Karpenter and the Cluster API autoscaler provision nodes for, only where more nodes
// would let the pod run (framework.NodesWouldHelp); otherwise it is the scheduler's
// reason code (QueueCapabilityExceeded, GangPodsMissing, ...), which they leave alone.
func (w *StatusWriter) podScheduled(ctx context.Context, pod *corev1.Pod, r *framework.Reason) {
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
		return
	}
	want := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: r.Code, Message: r.Message}
	if framework.NodesWouldHelp(r.Code) {
		want.Reason, want.Message = corev1.PodReasonUnschedulable, r.Code+": "+r.Message
	}
	now := metav1.Now()
	i := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
	if i >= 0 {
		have := pod.Status.Conditions[i]
		if have.Status == want.Status && have.Reason == want.Reason &&
			(have.Message == want.Message || now.Sub(have.LastProbeTime.Time) < conditionRefresh) {
			return
		}
		want.LastTransitionTime = have.LastTransitionTime
		if have.Status != want.Status {
			want.LastTransitionTime = now
		}
	} else {
		want.LastTransitionTime = now
	}
	want.LastProbeTime = now
	patched := pod.DeepCopy() // the cache's object is shared: never modify it
	if i >= 0 {
		patched.Status.Conditions[i] = want
	} else {
		patched.Status.Conditions = append(patched.Status.Conditions, want)
	}
	err := failpoint.Inject(failpoint.SchedulerUnschedulable)
	if err == nil {
		err = w.client.Status().Patch(ctx, patched, client.StrategicMergeFrom(pod))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		w.log.Info("pod condition update failed", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
	}
}

// origin says which PodGroup stands for a job: its name, and the owner a PodGroup the
// scheduler creates for it gets. ok is false for lone pods, which get no PodGroup.
func origin(j *framework.Job, state *cache.State) (name string, owner *metav1.OwnerReference, ok bool) {
	if len(j.Tasks) == 1 && j.Tasks[0].UID == j.UID {
		return "", nil, false // a lone pod: a gang's job has its PodGroup's or batch Job's UID
	}
	var pod *corev1.Pod
	for _, t := range j.Tasks {
		if pod = state.Pods[types.UID(t.UID)]; pod != nil {
			break
		}
	}
	if pod == nil {
		return "", nil, false
	}
	controller := metav1.GetControllerOf(pod)
	if r, ok := workloads.Of(pod); ok && r.Gang == j.Name && pod.Labels[tesserav1.LabelPodGroup] == "" {
		return workloadOrigin(j, r, pod, controller)
	}
	group := snapshot.PodGroupName(pod)
	switch {
	case group != "":
		if controller == nil {
			controller = &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
		}
		return group, controller, true
	case controller != nil && controller.Kind == "Job" && controller.Name == j.Name:
		return j.Name, controller, true
	}
	return "", nil, false
}

// workloadOrigin is the PodGroup of a workload's gang: named after the gang and owned
// by the workload object, so that it goes with it. The Workload API's own PodGroup
// stands for its gang, which gets none of Tessera's.
func workloadOrigin(j *framework.Job, r workloads.Ref, pod *corev1.Pod, controller *metav1.OwnerReference) (string, *metav1.OwnerReference, bool) {
	gvk, sized := r.Kind.GVK()
	switch {
	case r.Kind == workloads.WorkloadPodGroup:
		return "", nil, false
	case sized && j.UID != "" && !strings.Contains(j.UID, ":"): // the object's UID, not a job key
		return r.Gang, &metav1.OwnerReference{APIVersion: r.Kind.APIVersion(), Kind: gvk.Kind, Name: r.Object, UID: types.UID(j.UID)}, true
	case sized:
		return "", nil, false // the object is not known yet
	case controller == nil:
		controller = &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	}
	return r.Gang, controller, true
}

// podGroup creates the PodGroup of an implicit gang, or brings a PodGroup's status up
// to date.
func (w *StatusWriter) podGroup(ctx context.Context, j *framework.Job, state *cache.State) {
	name, owner, ok := origin(j, state)
	if !ok {
		return
	}
	pg := state.PodGroups[j.Namespace+"/"+name]
	if pg == nil {
		if j.Refused == nil && j.Held == nil { // no queue to name, or no size: its pods' events say why
			w.createPodGroup(ctx, j, name, owner)
		}
		return
	}
	w.implicitSize(ctx, j, pg)
	want := podGroupStatus(j, pg)
	if equality.Semantic.DeepEqual(want, pg.Status) {
		return
	}
	patched := pg.DeepCopy() // the cache's object is shared: never modify it
	patched.Status = want
	if err := w.client.Status().Patch(ctx, patched, client.MergeFrom(pg)); err != nil && !apierrors.IsNotFound(err) {
		w.log.Info("PodGroup status update failed", "podgroup", j.Namespace+"/"+name, "error", err.Error())
	}
}

// implicitSize keeps the minMember of a PodGroup the scheduler created for an implicit
// gang at the gang's size, which grows with a workload (an ordered JobSet's stages, a
// LeaderWorkerSet group's workers once its leader is ready).
func (w *StatusWriter) implicitSize(ctx context.Context, j *framework.Job, pg *tesserav1.PodGroup) {
	size := int32(max(j.MinMember, 1))
	if pg.Annotations[AnnotationImplicit] != "true" || j.Held != nil || pg.Spec.MinMember == size {
		return
	}
	patched := pg.DeepCopy()
	patched.Spec.MinMember = size
	if err := w.client.Patch(ctx, patched, client.MergeFrom(pg)); err != nil && !apierrors.IsNotFound(err) {
		w.log.Info("PodGroup minMember update failed", "podgroup", pg.Namespace+"/"+pg.Name, "error", err.Error())
	}
}

func (w *StatusWriter) createPodGroup(ctx context.Context, j *framework.Job, name string, owner *metav1.OwnerReference) {
	pg := &tesserav1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: j.Namespace, Annotations: map[string]string{AnnotationImplicit: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID}}},
		Spec: tesserav1.PodGroupSpec{MinMember: int32(max(j.MinMember, 1)), Queue: j.Queue.Name},
	}
	if err := w.client.Create(ctx, pg); err != nil && !apierrors.IsAlreadyExists(err) {
		w.log.Info("creating the PodGroup of an implicit gang failed", "podgroup", j.Namespace+"/"+name, "error", err.Error())
	}
}

// podGroupStatus is the status a PodGroup should have after the session.
func podGroupStatus(j *framework.Job, pg *tesserav1.PodGroup) tesserav1.PodGroupStatus {
	st := tesserav1.PodGroupStatus{
		Conditions:         append([]metav1.Condition(nil), pg.Status.Conditions...),
		Scheduled:          int32(j.Count(framework.TaskAllocated, framework.TaskRunning, framework.TaskReleasing, framework.TaskSucceeded)),
		Running:            int32(j.Count(framework.TaskRunning, framework.TaskAllocated)),
		Succeeded:          int32(j.Count(framework.TaskSucceeded)),
		Failed:             pg.Status.Failed,
		ObservedGeneration: pg.Generation,
	}
	cond := metav1.Condition{Type: tesserav1.ConditionScheduled, ObservedGeneration: pg.Generation}
	switch {
	case j.Count(framework.TaskSucceeded) >= max(j.MinMember, 1) && j.Count(framework.TaskPending, framework.TaskRunning, framework.TaskAllocated) == 0:
		st.Phase = tesserav1.PodGroupCompleted
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Completed", "every pod finished"
	case j.Ready():
		st.Phase = tesserav1.PodGroupRunning
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Scheduled", "the gang's pods are bound"
		if j.Pending != nil {
			cond.Message += "; more pods wait: " + j.Pending.Message
		}
	default:
		st.Phase = tesserav1.PodGroupPending
		if j.Inqueue {
			st.Phase = tesserav1.PodGroupInqueue
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, framework.ReasonUnschedulable, "waiting for the next session"
		if j.Pending != nil {
			cond.Reason, cond.Message = j.Pending.Code, j.Pending.Message
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// queue brings a Queue's status up to date; jobs counts its jobs by state (nil: none).
func (w *StatusWriter) queue(ctx context.Context, q *framework.Queue, obj *tesserav1.Queue, jobs *tesserav1.QueueStatus) {
	want := tesserav1.QueueStatus{
		Allocated:          resourceList(&q.Allocated),
		ObservedGeneration: obj.Generation,
		Conditions:         append([]metav1.Condition(nil), obj.Status.Conditions...),
	}
	if jobs != nil {
		want.Running, want.Inqueue, want.Pending = jobs.Running, jobs.Inqueue, jobs.Pending
	}
	meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: tesserav1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Scheduling", Message: "the scheduler serves the queue", ObservedGeneration: obj.Generation})
	if equality.Semantic.DeepEqual(want, obj.Status) {
		return
	}
	patched := obj.DeepCopy()
	patched.Status = want
	if err := w.client.Status().Patch(ctx, patched, client.MergeFrom(obj)); err != nil && !apierrors.IsNotFound(err) {
		w.log.Info("Queue status update failed", "queue", q.Name, "error", err.Error())
	}
}

// resourceList renders allocated resources for status: cpu, memory and GPUs (whole or
// fractional, as tessera.dev/gpu).
func resourceList(r *framework.Resources) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if r.MilliCPU > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
	}
	if r.Memory > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(r.Memory, resource.BinarySI)
	}
	if r.GPU > 0 {
		rl[tesserav1.ResourceGPU] = *resource.NewMilliQuantity(r.GPU, resource.DecimalSI)
	}
	if len(rl) == 0 {
		return nil
	}
	return rl
}

func (w *StatusWriter) queueMetrics(q *framework.Queue, pending int) {
	m := w.metrics
	m.QueuePendingJobs.WithLabelValues(q.Name).Set(float64(pending))
	setGauges(m.QueueAllocated, q.Name, &q.Allocated)
	setGauges(m.QueueDeserved, q.Name, &q.Deserved)
	setGauges(m.QueueCapability, q.Name, &q.Capability)
}

// setGauges sets a queue's gpu, cpu (cores) and memory (bytes) gauges; unlimited
// dimensions are left out.
func setGauges(vec *prometheus.GaugeVec, queue string, r *framework.Resources) {
	for _, d := range []struct {
		name  string
		v     int64
		scale float64
		limit int64
	}{
		{"gpu", r.GPU, 1e-3, framework.Unlimited.GPU},
		{"cpu", r.MilliCPU, 1e-3, framework.Unlimited.MilliCPU},
		{"memory", r.Memory, 1, framework.Unlimited.Memory},
	} {
		if d.v >= d.limit {
			vec.DeleteLabelValues(queue, d.name)
			continue
		}
		vec.WithLabelValues(queue, d.name).Set(float64(d.v) * d.scale)
	}
}
