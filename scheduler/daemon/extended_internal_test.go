package daemon

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// The claim's requests are named and shared out as kube-scheduler's for extended
// resources: one per container that runs on (sidecars included), indexed among the
// init containers and the containers; an init container that ends first uses theirs,
// and one request of its own for what they lack.
func TestExtendedRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	ctr := func(name string, gpus int64) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), tesserav1.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}}}
	}
	sidecar := ctr("sidecar", 1)
	sidecar.RestartPolicy = &always
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{ctr("setup", 3), sidecar}, Containers: []corev1.Container{ctr("main", 1)}}}
	reqs, mappings, err := extendedRequests(pod, &framework.GPURequest{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, fmt.Sprintf("%s:%s:%d", r.Name, r.Exactly.DeviceClassName, r.Exactly.Count))
	}
	want := []string{"container-0-request-1:gpu.tessera.dev:1", "container-1-request-1:gpu.tessera.dev:1", "container-2-request-1:gpu.tessera.dev:1"}
	if !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	got = nil
	for _, m := range mappings {
		got = append(got, m.ContainerName+"/"+m.RequestName)
	}
	want = []string{"sidecar/container-1-request-1", "main/container-2-request-1",
		"setup/container-1-request-1", "setup/container-2-request-1", "setup/container-0-request-1"}
	if !slices.Equal(got, want) {
		t.Errorf("mappings %v, want %v", got, want)
	}

	share := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nb", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		tesserav1.ResourceGPUMemory: resource.MustParse("10240"), tesserav1.ResourceGPUSlice: resource.MustParse("1")}}}}}}
	reqs, mappings, err = extendedRequests(share, &framework.GPURequest{MemoryMiB: 10240})
	if err != nil || len(reqs) != 1 || len(mappings) != 1 {
		t.Fatalf("share: %v %v %v", reqs, mappings, err)
	}
	q := reqs[0].Exactly.Capacity.Requests[tesserav1.DeviceCapacityMemory]
	if reqs[0].Name != "container-0-request-0" || reqs[0].Exactly.DeviceClassName != tesserav1.DeviceClassGPUShare || q.String() != "10Gi" {
		t.Errorf("share request %s of %s, %s; want container-0-request-0 of 10Gi of %s", reqs[0].Name, reqs[0].Exactly.DeviceClassName, q.String(), tesserav1.DeviceClassGPUShare)
	}
	// The same slice placed on a whole GPU (a profile that cannot share): one device.
	if reqs, _, _ := extendedRequests(share, &framework.GPURequest{Count: 1}); reqs[0].Exactly.DeviceClassName != tesserav1.DeviceClassGPU || reqs[0].Exactly.Capacity != nil {
		t.Errorf("slice on a whole GPU: %+v, want one device of %s", reqs[0].Exactly, tesserav1.DeviceClassGPU)
	}
}
