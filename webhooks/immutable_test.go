package webhooks

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

func TestImmutableGuard(t *testing.T) {
	labelled := func(labels, annotations map[string]string) *corev1.Pod {
		p := guardPod(annotations)
		p.Labels = labels
		return p
	}
	inQueue := func(q string) *corev1.Pod {
		return labelled(map[string]string{tesserav1.LabelQueue: q, "app": "x"}, nil)
	}
	owned := func(refs ...metav1.OwnerReference) *corev1.Pod {
		p := inQueue("team-a")
		p.OwnerReferences = refs
		return p
	}
	job := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "1", Controller: ptr.To(true)}
	other := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "other-team", UID: "2", Controller: ptr.To(true)}
	group := func(queue string, min int32) *tesserav1.PodGroup {
		return &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "team"}, Spec: tesserav1.PodGroupSpec{Queue: queue, MinMember: min}}
	}
	update := func(kind string, now, old any) *admissionv1.AdmissionRequest {
		return guardRequest(t, kind, admissionv1.Update, guardTenant, now, old)
	}
	byGC := update(KindPod, owned(), owned(job))
	byGC.UserInfo = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:generic-garbage-collector",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	status := update(KindPod, inQueue("team-b"), inQueue("team-a"))
	status.SubResource = "status"
	fix := "delete the Pod and create it again with the new value"
	cases := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want []string // substrings of the denial; nil: allowed
	}{
		{"queue label moved", update(KindPod, inQueue("team-b"), inQueue("team-a")),
			[]string{`metadata.labels[tessera.dev/queue] (from "team-a" to "team-b") cannot change after the Pod is created`, fix}},
		{"queue label added", update(KindPod, inQueue("nope"), labelled(nil, nil)), []string{`metadata.labels[tessera.dev/queue] (from "" to "nope")`}},
		{"queue label removed", update(KindPod, labelled(nil, nil), inQueue("team-a")), []string{`metadata.labels[tessera.dev/queue] (from "team-a" to "")`}},
		{"Volcano's queue annotation and Kueue's label", update(KindPod,
			labelled(map[string]string{tesserav1.KueueQueueName: "b"}, map[string]string{tesserav1.VolcanoQueueName: "b"}), labelled(nil, nil)),
			[]string{"metadata.labels[kueue.x-k8s.io/queue-name]", "metadata.annotations[scheduling.volcano.sh/queue-name]"}},
		{"gang", update(KindPod, labelled(map[string]string{tesserav1.LabelPodGroup: "g2"}, map[string]string{tesserav1.AnnotationMinAvailable: "1"}),
			labelled(map[string]string{tesserav1.LabelPodGroup: "g1"}, map[string]string{tesserav1.AnnotationMinAvailable: "4"})),
			[]string{"metadata.labels[tessera.dev/pod-group]", "metadata.annotations[tessera.dev/min-available]"}},
		{"Kueue's pod group and its size", update(KindPod,
			labelled(map[string]string{tesserav1.KueuePodGroupName: "solo"}, map[string]string{tesserav1.KueuePodGroupTotalCount: "1"}),
			labelled(map[string]string{tesserav1.KueuePodGroupName: "train"}, map[string]string{tesserav1.KueuePodGroupTotalCount: "8"})),
			[]string{"metadata.labels[kueue.x-k8s.io/pod-group-name]", "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]"}},
		{"coscheduling pod group", update(KindPod, labelled(map[string]string{tesserav1.CoschedulingPodGroup: "g2"}, nil), labelled(nil, nil)),
			[]string{"metadata.labels[scheduling.x-k8s.io/pod-group]"}},
		{"Job's gang size", update(KindJob, withMin(&batchv1.Job{}, "1"), withMin(&batchv1.Job{}, "8")),
			[]string{`metadata.annotations[tessera.dev/min-available] (from "8" to "1") cannot change after the Job is created`}},
		{"JobSet's gang size", update(KindJobSet, withMin(&unstructured.Unstructured{Object: map[string]any{}}, "1"),
			withMin(&unstructured.Unstructured{Object: map[string]any{}}, "8")),
			[]string{"metadata.annotations[tessera.dev/min-available]", "after the JobSet is created"}},
		{"Job's owners (a CronJob's Job released)", update(KindJob, &batchv1.Job{}, func() *batchv1.Job {
			j := &batchv1.Job{}
			j.OwnerReferences = []metav1.OwnerReference{job}
			return j
		}()), nil},
		{"Volcano's gang annotation", update(KindPod, labelled(nil, map[string]string{tesserav1.VolcanoGroupName: "g2"}), labelled(nil, nil)),
			[]string{"metadata.annotations[scheduling.k8s.io/group-name]"}},
		{"other labels change", update(KindPod, labelled(map[string]string{tesserav1.LabelQueue: "team-a", "app": "y"}, map[string]string{"note": "x"}), inQueue("team-a")), nil},
		{"owner changed", update(KindPod, owned(other), owned(job)), []string{"metadata.ownerReferences"}},
		{"owner removed", update(KindPod, owned(), owned(job)), []string{"metadata.ownerReferences"}},
		{"owners orphaned by the garbage collector", byGC, nil},
		{"owners unchanged", update(KindPod, owned(job), owned(job)), nil},
		{"pod status", status, nil},
		{"pod create", guardRequest(t, KindPod, admissionv1.Create, guardTenant, inQueue("team-b"), nil), nil},
		{"pod group queue", update(KindPodGroup, group("team-b", 4), group("team-a", 4)),
			[]string{`spec.queue (from "team-a" to "team-b") cannot change after the PodGroup is created`, "delete the PodGroup"}},
		{"pod group minMember", update(KindPodGroup, group("team-a", 1), group("team-a", 4)), []string{"spec.minMember (from 4 to 1)"}},
		{"pod group other change", update(KindPodGroup, func() *tesserav1.PodGroup {
			g := group("team-a", 4)
			g.Spec.PriorityClassName = "offline-low"
			return g
		}(), group("team-a", 4)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGuard(t, ImmutableGuard{}, c.req, c.want) })
	}
}

// withMin sets the object's tessera.dev/min-available annotation.
func withMin[T metav1.Object](o T, min string) T {
	o.SetAnnotations(map[string]string{tesserav1.AnnotationMinAvailable: min})
	return o
}
