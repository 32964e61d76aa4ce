package snapshot

import (
	"errors"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// workloadJobKey is the job key of a workload gang.
func workloadJobKey(namespace string, r workloads.Ref) string {
	return "wl:" + namespace + "/" + r.Key()
}

// AddWorkload adds an object that sizes workload gangs (a JobSet, a RayCluster, a
// Workload API PodGroup...; see workloads.Kinds): its group, version and kind say
// which. Objects of other kinds and nil are ignored. Its gangs are assembled again
// only when what sizes them can have changed (generation, annotations, UID).
func (b *Builder) AddWorkload(o *unstructured.Unstructured) {
	if o == nil {
		return
	}
	k, ok := workloads.KindOf(o.GroupVersionKind())
	if !ok {
		return
	}
	key := workloads.ObjectKey(k, o.GetNamespace(), o.GetName())
	old := b.workloads[key]
	b.workloads[key] = o
	if old == nil || old.GetGeneration() != o.GetGeneration() || old.GetUID() != o.GetUID() ||
		!maps.Equal(old.GetAnnotations(), o.GetAnnotations()) {
		b.dirtyGangsOf(key)
	}
}

// RemoveWorkload takes a workload object out.
func (b *Builder) RemoveWorkload(kind workloads.Kind, namespace, name string) {
	key := workloads.ObjectKey(kind, namespace, name)
	delete(b.workloads, key)
	b.dirtyGangsOf(key)
	delete(b.gangsOf, key)
}

func (b *Builder) dirtyGangsOf(objectKey string) {
	for job := range b.gangsOf[objectKey] {
		b.dirty[job] = true
	}
}

// workloadOf is the workload gang pod p belongs to, when the builder knows its kind:
// kinds sized by their object only when the caller feeds those objects.
func (b *Builder) workloadOf(p *corev1.Pod) (workloads.Ref, bool) {
	r, ok := workloads.Of(p)
	if !ok {
		return r, false
	}
	if _, sized := r.Kind.GVK(); sized && r.Kind != workloads.LeaderWorkerSet && !slices.Contains(b.opts.Workloads, r.Kind) {
		return r, false
	}
	return r, true
}

// workloadKey is the job key of the workload gang of pod p, recorded against the
// object that sizes it.
func (b *Builder) workloadKey(p *corev1.Pod, r workloads.Ref) string {
	key := workloadJobKey(p.Namespace, r)
	if r.Object != "" {
		ok := workloads.ObjectKey(r.Kind, p.Namespace, r.Object)
		if b.gangsOf[ok] == nil {
			b.gangsOf[ok] = map[string]bool{}
		}
		b.gangsOf[ok][key] = true
	}
	return key
}

// workloadJob fills a workload gang's job: named after the gang, sized by its object
// (or by what its pods declare), held while its size is not known.
func (s *build) workloadJob(e *jobMemo, r workloads.Ref) {
	p := e.tasks[0].pod
	j := &e.tmpl
	j.Name = r.Gang
	e.workload = true
	var obj *unstructured.Unstructured
	if r.Object != "" {
		obj = s.workloads[workloads.ObjectKey(r.Kind, p.Namespace, r.Object)]
	}
	j.UID = r.UID
	if obj != nil {
		j.UID = string(obj.GetUID())
		j.Created = obj.GetCreationTimestamp().Time
	}
	j.UID = uidOr(j.UID, e.key)
	in := workloads.Input{Object: obj, Children: func() []*batchv1.Job { return s.jobSetChildren(p.Namespace, r) }}
	for _, ta := range e.tasks {
		if tr, ok := workloads.Of(ta.pod); ok && !tr.Leader() {
			in.WorkersMade = true
		}
	}
	size, err := r.Size(p.Namespace, in)
	if fe := (*workloads.FieldError)(nil); errors.As(err, &fe) {
		e.errs = append(e.errs, objErr(string(fe.Kind), fe.Namespace, fe.Name, fe.Field, "%s; the gang waits until it is fixed", fe.Message))
	}
	j.MinMember = max(size.MinMember, 1)
	if size.Waiting != "" {
		j.Held = &framework.Reason{Code: framework.ReasonGangSizeUnknown, Message: size.Waiting}
	}
}

// jobSetChildren are the batch Jobs a JobSet made in the gang's restart attempt.
func (s *build) jobSetChildren(namespace string, r workloads.Ref) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range s.jobs {
		if j.Namespace == namespace && j.Labels[workloads.LabelJobSetName] == r.Object &&
			j.Labels[workloads.LabelJobSetAttempt] == r.Attempt() {
			out = append(out, j)
		}
	}
	return out
}
