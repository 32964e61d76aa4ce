package podrequests_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tessera-gpu/tessera/internal/podrequests"
)

func TestOf(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(cpu, gpu string) corev1.ResourceList {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if gpu != "" {
			l["tessera.dev/gpu"] = resource.MustParse(gpu)
		}
		return l
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			// A sidecar keeps running next to what starts after it: it adds to their sum.
			{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("500m", "")}},
			{Name: "setup", Resources: corev1.ResourceRequirements{Requests: rl("3", "")}},
		},
		Containers: []corev1.Container{
			{Name: "main", Resources: corev1.ResourceRequirements{Requests: rl("1", ""), Limits: rl("1", "2")}}, // GPUs only limited
			{Name: "log", Resources: corev1.ResourceRequirements{Requests: rl("250m", "")}},
		},
	}}
	got := podrequests.Of(p)
	// cpu: max(sidecar 0.5 + setup 3, sidecar 0.5 + containers 1.25) = 3.5; GPUs from the limit.
	if cpu := got[corev1.ResourceCPU]; cpu.MilliValue() != 3500 {
		t.Errorf("cpu %s, want 3500m", cpu.String())
	}
	if gpu := got["tessera.dev/gpu"]; gpu.Value() != 2 {
		t.Errorf("gpus %s, want 2 (defaulted from the limit)", gpu.String())
	}
	if _, ok := p.Spec.Containers[0].Resources.Requests["tessera.dev/gpu"]; ok {
		t.Error("the pod was modified")
	}
}
