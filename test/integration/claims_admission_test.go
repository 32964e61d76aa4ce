package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// claimTemplate is a ResourceClaimTemplate whose one request asks a device of class,
// with memory as a capacity request when not "".
func claimTemplate(ns, name, class, memory string) *resourcev1.ResourceClaimTemplate {
	e := &resourcev1.ExactDeviceRequest{DeviceClassName: class}
	if memory != "" {
		e.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{
			tesserav1.DeviceCapacityMemory: resource.MustParse(memory)}}
	}
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: e}}}}}}
}

// claimPod is a pod that names no scheduler, tolerates the GPU nodes' taint and asks
// its GPU through a claim made from template.
func claimPod(ns, name, template string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{
		Tolerations:    []corev1.Toleration{{Key: "tessera.dev/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}},
		Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/train",
			Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
	}}
}

// TestClaimPodAdmission: admission sees the GPUs a pod asks through a claim of Tessera's
// device classes as it sees extended resources: the pod is a GPU workload, so it gets
// schedulerName tessera and may tolerate the GPU nodes' taint. A pod whose claim asks
// another driver's class is not: the same toleration is refused.
func TestClaimPodAdmission(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 90*time.Second)
	const ns = "claims-admission"
	platformNamespace(ctx, t, e, ns, nil)
	must(t, "share template", client.IgnoreAlreadyExists(e.Client.Create(ctx, claimTemplate(ns, "share", tesserav1.DeviceClassGPUShare, "10Gi"))))
	must(t, "NIC template", client.IgnoreAlreadyExists(e.Client.Create(ctx, claimTemplate(ns, "nic", "nic.example.com", ""))))

	// The webhook reads templates from its cache, which learns a new one a moment later.
	pod := claimPod(ns, "train", "share")
	awaitAdmitted(ctx, t, e.Client, "pod with a GPU share claim", pod)
	var got corev1.Pod
	must(t, "get the pod", e.Client.Get(ctx, client.ObjectKeyFromObject(pod), &got))
	if got.Spec.SchedulerName != tesserav1.SchedulerName {
		t.Errorf("schedulerName %q, want %s: a claim of %s asks a GPU", got.Spec.SchedulerName, tesserav1.SchedulerName, tesserav1.DeviceClassGPUShare)
	}

	err := e.Client.Create(ctx, claimPod(ns, "nic", "nic"))
	if err == nil || !strings.Contains(err.Error(), "a workload that requests no GPU may not run on GPU nodes") {
		t.Errorf("pod with only a NIC claim tolerating the GPU taint: %v, want refused as asking no GPU", err)
	}
}
