package v1alpha1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func sliceContainer(name string, mib int64) corev1.Container {
	q := *resource.NewQuantity(mib, resource.DecimalSI)
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{ResourceGPUMemory: q}, Limits: corev1.ResourceList{ResourceGPUMemory: q}}}
}

func TestGPUMemoryLimitMiB(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        int64
		err         string
	}{
		{name: "none: the request", want: 8192},
		{name: "plain MiB", annotations: map[string]string{AnnotationGPUMemoryLimit: "20480"}, want: 20480},
		{name: "bytes", annotations: map[string]string{AnnotationGPUMemoryLimit: "24Gi"}, want: 24576},
		{name: "container wins", annotations: map[string]string{AnnotationGPUMemoryLimit: "24Gi", AnnotationGPUMemoryLimitPrefix + "train": "16Gi"}, want: 16384},
		{name: "other container's", annotations: map[string]string{AnnotationGPUMemoryLimitPrefix + "probe": "16Gi"}, want: 8192},
		{name: "below request", annotations: map[string]string{AnnotationGPUMemoryLimit: "4Gi"}, err: "4096 MiB, below container \"train\"'s tessera.dev/gpu-memory request of 8192 MiB"},
		{name: "not a quantity", annotations: map[string]string{AnnotationGPUMemoryLimit: "lots"}, err: `metadata.annotations[tessera.dev/gpu-memory-limit] is "lots", not a quantity`},
		{name: "negative", annotations: map[string]string{AnnotationGPUMemoryLimit: "-5"}, err: "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GPUMemoryLimitMiB(tc.annotations, "train", 8192)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Fatalf("limit %d (%v), want %d", got, err, tc.want)
			}
		})
	}
}

func TestCheckGPUMemoryLimits(t *testing.T) {
	containers := []corev1.Container{sliceContainer("train", 8192), {Name: "sidecar"}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		containers  []corev1.Container
		err         string
	}{
		{name: "pod limit", annotations: map[string]string{AnnotationGPUMemoryLimit: "16Gi"}, containers: containers},
		{name: "container limit", annotations: map[string]string{AnnotationGPUMemoryLimitPrefix + "train": "16Gi"}, containers: containers},
		{name: "no annotation", containers: containers},
		{name: "container asks none", annotations: map[string]string{AnnotationGPUMemoryLimitPrefix + "sidecar": "16Gi"}, containers: containers,
			err: `names container "sidecar", which asks no tessera.dev/gpu-memory`},
		{name: "pod asks none", annotations: map[string]string{AnnotationGPUMemoryLimit: "16Gi"}, containers: []corev1.Container{{Name: "cpu"}},
			err: "no container asks tessera.dev/gpu-memory"},
		{name: "below request", annotations: map[string]string{AnnotationGPUMemoryLimit: "1Gi"}, containers: containers, err: "a limit is at least the request"},
		{name: "not a quantity", annotations: map[string]string{AnnotationGPUMemoryLimit: "1 GB"}, containers: containers, err: "not a quantity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckGPUMemoryLimits(tc.annotations, tc.containers)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestParseGPUShareConfig(t *testing.T) {
	c, err := ParseGPUShareConfig([]byte(`{"apiVersion":"gpu.tessera.dev/v1alpha1","kind":"GPUShareConfig","memoryLimit":"24Gi"}`), "config[0]")
	if err != nil || c.MemoryLimit != "24Gi" {
		t.Fatalf("%+v %v", c, err)
	}
	for raw, want := range map[string]string{
		`{"apiVersion":"gpu.tessera.dev/v1alpha1","kind":"GPUShareConfig","limit":"24Gi"}`: `unknown field "limit"`,
		`{"apiVersion":"v1","kind":"GPUShareConfig"}`:                                      "want apiVersion gpu.tessera.dev/v1alpha1, kind GPUShareConfig",
	} {
		if _, err := ParseGPUShareConfig([]byte(raw), "config[0]"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}
