package webhooks

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// limitPod is a pod whose container main asks 8192 MiB of GPU memory, with annotations.
func limitPod(annotations map[string]string) *corev1.Pod {
	p := guardPod(annotations)
	q := resource.MustParse("8192")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{tesserav1.ResourceGPUMemory: q},
		Limits: corev1.ResourceList{tesserav1.ResourceGPUMemory: q}}
	return p
}

func TestLimitGuard(t *testing.T) {
	limit := func(v string) map[string]string { return map[string]string{tesserav1.AnnotationGPUMemoryLimit: v} }
	job := &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: limitPod(limit("2Gi")).ObjectMeta, Spec: limitPod(nil).Spec}}}
	for _, c := range []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want []string
	}{
		{"a limit above the request", guardRequest(t, KindPod, admissionv1.Create, guardTenant, limitPod(limit("24Gi")), nil), nil},
		{"no limit", guardRequest(t, KindPod, admissionv1.Create, guardTenant, limitPod(nil), nil), nil},
		{"below the request", guardRequest(t, KindPod, admissionv1.Create, guardTenant, limitPod(limit("4096")), nil),
			[]string{"the pod: metadata.annotations[tessera.dev/gpu-memory-limit] is 4096 MiB, below container \"main\"'s tessera.dev/gpu-memory request of 8192 MiB"}},
		{"not a quantity", guardRequest(t, KindPod, admissionv1.Create, guardTenant, limitPod(limit("much")), nil), []string{`is "much", not a quantity`}},
		{"a container that asks none", guardRequest(t, KindPod, admissionv1.Create, guardTenant,
			limitPod(map[string]string{tesserav1.AnnotationGPUMemoryLimitPrefix + "sidecar": "24Gi"}), nil), []string{`names container "sidecar"`}},
		{"a Job's template", guardRequest(t, KindJob, admissionv1.Create, guardTenant, job, nil), []string{"spec.template: ", "below container \"main\"'s"}},
		{"a pod update is not read", guardRequest(t, KindPod, admissionv1.Update, guardTenant, limitPod(limit("much")), limitPod(nil)), nil},
	} {
		t.Run(c.name, func(t *testing.T) { checkGuard(t, LimitGuard{}, c.req, c.want) })
	}
}
