package apitest

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// JobWrapper builds a batch/v1 Job.
type JobWrapper struct {
	wrapper[*JobWrapper, batchv1.Job]
}

// MakeJob is a Job of namespace ns whose pod template has one container "main" and
// restartPolicy Never.
func MakeJob(name, ns string) *JobWrapper {
	w := &JobWrapper{}
	return w.init(w, batchv1.Job{TypeMeta: typeMeta("batch/v1", "Job"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: Container, Image: Image}}}}}})
}

// Queue sets the queue label tessera.dev/queue.
func (w *JobWrapper) Queue(q string) *JobWrapper { return w.Label(tesserav1.LabelQueue, q) }

// Parallelism sets spec.parallelism.
func (w *JobWrapper) Parallelism(n int32) *JobWrapper { w.obj.Spec.Parallelism = &n; return w }

// Completions sets spec.completions.
func (w *JobWrapper) Completions(n int32) *JobWrapper { w.obj.Spec.Completions = &n; return w }

// Template makes the pod template a copy of the labels, annotations and spec of pod.
func (w *JobWrapper) Template(pod *corev1.Pod) *JobWrapper {
	c := pod.DeepCopy()
	w.obj.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: c.Labels, Annotations: c.Annotations}, Spec: c.Spec}
	return w
}

// RestartPolicy sets the pod template's restartPolicy.
func (w *JobWrapper) RestartPolicy(p corev1.RestartPolicy) *JobWrapper {
	w.obj.Spec.Template.Spec.RestartPolicy = p
	return w
}

// PDBWrapper builds a policy/v1 PodDisruptionBudget.
type PDBWrapper struct {
	wrapper[*PDBWrapper, policyv1.PodDisruptionBudget]
}

// MakePDB is a PodDisruptionBudget of namespace ns that selects nothing yet.
func MakePDB(name, ns string) *PDBWrapper {
	w := &PDBWrapper{}
	return w.init(w, policyv1.PodDisruptionBudget{TypeMeta: typeMeta("policy/v1", "PodDisruptionBudget"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
}

// MatchLabel adds k=v to the selector's matchLabels.
func (w *PDBWrapper) MatchLabel(k, v string) *PDBWrapper {
	if w.obj.Spec.Selector == nil {
		w.obj.Spec.Selector = &metav1.LabelSelector{}
	}
	w.obj.Spec.Selector.MatchLabels = with(w.obj.Spec.Selector.MatchLabels, k, v)
	return w
}

// MinAvailable sets spec.minAvailable to n pods.
func (w *PDBWrapper) MinAvailable(n int32) *PDBWrapper {
	v := intstr.FromInt32(n)
	w.obj.Spec.MinAvailable = &v
	return w
}

// DisruptionsAllowed sets status.disruptionsAllowed, as the disruption controller would.
func (w *PDBWrapper) DisruptionsAllowed(n int32) *PDBWrapper {
	w.obj.Status.DisruptionsAllowed = n
	return w
}

// PriorityClassWrapper builds a scheduling/v1 PriorityClass.
type PriorityClassWrapper struct {
	wrapper[*PriorityClassWrapper, schedulingv1.PriorityClass]
}

// MakePriorityClass is a PriorityClass of the given value.
func MakePriorityClass(name string, value int32) *PriorityClassWrapper {
	w := &PriorityClassWrapper{}
	return w.init(w, schedulingv1.PriorityClass{TypeMeta: typeMeta("scheduling.k8s.io/v1", "PriorityClass"),
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
}

// NamespaceWrapper builds a corev1.Namespace.
type NamespaceWrapper struct {
	wrapper[*NamespaceWrapper, corev1.Namespace]
}

// MakeNamespace is a namespace.
func MakeNamespace(name string) *NamespaceWrapper {
	w := &NamespaceWrapper{}
	return w.init(w, corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: name}})
}
