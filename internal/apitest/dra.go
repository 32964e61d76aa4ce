package apitest

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// DeviceClasses are Tessera's two DeviceClasses as the chart installs them: whole GPUs
// (the class of extended resource tessera.dev/gpu), and shares of one GPU's memory.
func DeviceClasses() []*resourcev1.DeviceClass {
	class := func(name, expr string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}}}
	}
	driver := fmt.Sprintf("device.driver == %q", tesserav1.DRADriver)
	gpu := class(tesserav1.DeviceClassGPU, driver)
	gpu.Spec.ExtendedResourceName = ptr.To(string(tesserav1.ResourceGPU))
	return []*resourcev1.DeviceClass{
		gpu,
		class(tesserav1.DeviceClassGPUShare, fmt.Sprintf("%s && device.attributes[%q].%s", driver, tesserav1.DRADriver, tesserav1.DeviceAttributeSharing)),
	}
}

// GPUSlice is the ResourceSlice the node agent publishes for node: one device per GPU
// (gpu-<i>, with the uuid that uuid(i) returns), each of memMiB of memory that
// shareable GPUs share in steps of stepMiB.
func GPUSlice(node string, gpus int, memMiB, stepMiB int64, shareable bool, uuid func(i int) string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + "gpu.tessera.dev"},
		Spec: resourcev1.ResourceSliceSpec{Driver: tesserav1.DRADriver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	mem := resource.NewQuantity(memMiB<<20, resource.BinarySI)
	step := resource.NewQuantity(stepMiB<<20, resource.BinarySI)
	for i := range gpus {
		id, share := uuid(i), shareable
		capacity := resourcev1.DeviceCapacity{Value: *mem}
		d := resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				tesserav1.DeviceAttributeUUID: {StringValue: &id}, tesserav1.DeviceAttributeSharing: {BoolValue: &share}}}
		if shareable { // the API takes a request policy only on devices that share
			d.AllowMultipleAllocations = &share
			capacity.RequestPolicy = &resourcev1.CapacityRequestPolicy{Default: mem, ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: step, Max: mem, Step: step}}
		}
		d.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{tesserav1.DeviceCapacityMemory: capacity}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

// GPUClaim is a ResourceClaim of count whole GPUs (memory "") or of one share of memory
// (a quantity such as "10Gi") of one GPU.
func GPUClaim(name, namespace string, count int64, memory string) *resourcev1.ResourceClaim {
	e := &resourcev1.ExactDeviceRequest{DeviceClassName: tesserav1.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
	if memory != "" {
		e.DeviceClassName, e.Count = tesserav1.DeviceClassGPUShare, 1
		e.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{
			tesserav1.DeviceCapacityMemory: resource.MustParse(memory)}}
	}
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: e}}}}}
}

// FirstAvailableClaim is a ResourceClaim of count whole GPUs with one firstAvailable
// request "gpu": a subrequest per CEL selector, in order, named "pick-0", "pick-1", ...
// ("" selects any GPU).
func FirstAvailableClaim(name, namespace string, count int64, selectors ...string) *resourcev1.ResourceClaim {
	r := resourcev1.DeviceRequest{Name: "gpu"}
	for i, sel := range selectors {
		sub := resourcev1.DeviceSubRequest{Name: fmt.Sprintf("pick-%d", i), DeviceClassName: tesserav1.DeviceClassGPU,
			AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
		if sel != "" {
			sub.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: sel}}}
		}
		r.FirstAvailable = append(r.FirstAvailable, sub)
	}
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{r}}}}
}
