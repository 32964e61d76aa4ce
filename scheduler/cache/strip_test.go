package cache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tessera-gpu/tessera/internal/podrequests"
)

// strip drops limits once they fill the requests a container leaves out: what the pod
// asks of a node stays the same.
func TestStripKeepsRequests(t *testing.T) {
	q := resource.MustParse
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: q("4")}}}},
		Containers: []corev1.Container{
			{Name: "gpu", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("3"), "nvidia.com/gpu": q("2"), corev1.ResourceMemory: q("1Gi")}}},
			{Name: "plain"},
		},
	}}
	want := podrequests.Of(p)
	if _, err := strip(p); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		if c.Resources.Limits != nil {
			t.Errorf("container %s keeps limits %v", c.Name, c.Resources.Limits)
		}
	}
	if got := podrequests.Of(p); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("requests %v after strip, want %v", got, want)
	}
	if cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(q("2")) != 0 {
		t.Errorf("a request the container states was replaced by its limit: cpu %s", cpu.String())
	}
}
