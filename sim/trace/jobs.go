package trace

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// legacyJobNameLabel is the label older Job controllers put on their pods.
const legacyJobNameLabel = "job-name"

// MaxExpandedPods bounds the pods ExpandJobs makes from Job templates in one input.
const MaxExpandedPods = 100_000

// ExpandJobs adds the pods the Job controller would create for each Job whose pods are
// not all listed: parallelism pods at once, fewer when completions leave fewer to run,
// none for a suspended or finished Job. A pod belongs to a Job through its controller
// owner reference or its batch.kubernetes.io/job-name label; the pods made here carry
// both, the template's labels and annotations, the Job's creation time and, for
// Indexed Jobs, their completion index. Each Job that got pods adds a note.
func (m *Manifests) ExpandJobs() error {
	listed := map[string]jobPods{}
	for i := range m.Pods {
		p := &m.Pods[i]
		job := ownerJob(p)
		if job == "" {
			continue
		}
		c := listed[p.Namespace+"/"+job]
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			c.succeeded++
		case corev1.PodFailed:
		default:
			c.active++
		}
		listed[p.Namespace+"/"+job] = c
	}
	taken := names(m.Pods, func(p corev1.Pod) string { return p.Namespace + "/" + p.Name })
	made := 0
	for i := range m.Jobs {
		j := &m.Jobs[i]
		count := podsToCreate(j, listed[j.Namespace+"/"+j.Name])
		if count == 0 {
			continue
		}
		if made += count; made > MaxExpandedPods {
			return fmt.Errorf("spec.parallelism of Job %s/%s: the Jobs need more than %d pods in all; the simulator makes at most %d from Job templates, lower parallelism",
				j.Namespace, j.Name, MaxExpandedPods, MaxExpandedPods)
		}
		for index, missing := 0, count; missing > 0; index++ {
			name := fmt.Sprintf("%s-%d", j.Name, index)
			if taken[j.Namespace+"/"+name] {
				continue
			}
			taken[j.Namespace+"/"+name] = true
			m.Pods = append(m.Pods, podFromTemplate(j, name, index))
			missing--
		}
		m.Notes = append(m.Notes, fmt.Sprintf("Job %s/%s: %d pods made from its template, as the Job controller would",
			j.Namespace, j.Name, count))
	}
	return nil
}

// jobPods counts a Job's listed pods.
type jobPods struct{ active, succeeded int }

// volcanoTaskLabel names the task of a Volcano Job a pod runs.
const volcanoTaskLabel = "volcano.sh/task-spec"

// ownerJob is the name of the Job that controls p, or "". A pod of a Volcano Job
// belongs to the batch/v1 Job its task converts to, named <job>-<task>.
func ownerJob(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind != "Job" || !ptr.Deref(o.Controller, false) {
			continue
		}
		if task := p.Labels[volcanoTaskLabel]; task != "" && strings.HasPrefix(o.APIVersion, "batch.volcano.sh/") {
			return o.Name + "-" + task
		}
		return o.Name
	}
	if name := p.Labels[batchv1.JobNameLabel]; name != "" {
		return name
	}
	return p.Labels[legacyJobNameLabel]
}

// podsToCreate is how many more pods the Job controller would run for j now.
func podsToCreate(j *batchv1.Job, listed jobPods) int {
	if ptr.Deref(j.Spec.Suspend, false) || finished(j) {
		return 0
	}
	succeeded := max(listed.succeeded, int(j.Status.Succeeded))
	want := int(ptr.Deref(j.Spec.Parallelism, 1))
	if j.Spec.Completions != nil {
		want = min(want, int(*j.Spec.Completions)-succeeded)
	} else if succeeded > 0 {
		want = 0 // a work-queue Job ends once a pod succeeded
	}
	return max(want-listed.active, 0)
}

// finished reports whether the Job has a Complete or Failed condition.
func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podFromTemplate is the pod the Job controller would create for j under name.
func podFromTemplate(j *batchv1.Job, name string, index int) corev1.Pod {
	t := j.Spec.Template.DeepCopy()
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[batchv1.JobNameLabel] = j.Name
	labels[legacyJobNameLabel] = j.Name
	if j.UID != "" {
		labels[batchv1.ControllerUidLabel] = string(j.UID)
	}
	annots := maps.Clone(t.Annotations)
	if ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion {
		if annots == nil {
			annots = map[string]string{}
		}
		annots[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
	}
	return corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: j.Namespace, Labels: labels, Annotations: annots,
			CreationTimestamp: j.CreationTimestamp,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec:   t.Spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}
