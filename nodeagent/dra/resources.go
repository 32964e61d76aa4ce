package dra

import (
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

// DriverName is the DRA driver name, the domain of the devices' attributes.
const DriverName = tesserav1.DRADriver

// Device attributes (in the driver's domain) and capacity.
const (
	AttrUUID              resourceapi.QualifiedName = tesserav1.DeviceAttributeUUID
	AttrIndex             resourceapi.QualifiedName = "index"
	AttrModel             resourceapi.QualifiedName = "model"
	AttrPCIBusID          resourceapi.QualifiedName = "pciBusID"
	AttrNUMANode          resourceapi.QualifiedName = "numaNode"
	AttrNVLinkIsland      resourceapi.QualifiedName = "nvlinkIsland"
	AttrComputeCapability resourceapi.QualifiedName = "computeCapability"
	AttrComputeMode       resourceapi.QualifiedName = "computeMode"
	AttrMIGCapable        resourceapi.QualifiedName = "migCapable"
	// AttrSharing says the GPU is set up for memory shares (published with
	// allowMultipleAllocations).
	AttrSharing resourceapi.QualifiedName = tesserav1.DeviceAttributeSharing
	// CapacityMemory is the GPU's memory, in Mi.
	CapacityMemory resourceapi.QualifiedName = tesserav1.DeviceCapacityMemory
)

// TaintUnhealthy is the taint of an unhealthy GPU's device.
const TaintUnhealthy = DriverName + "/unhealthy"

// DefaultShareStep is the default granularity of memory shares.
var DefaultShareStep = resource.MustParse("1Gi")

// GPU is one GPU as the agent sees it: as discovered, with the agent's view of its
// health, and its NVLink island (gpu.Islands).
type GPU struct {
	gpu.Device
	Island int32
}

// DeviceName is the device of the GPU with NVML index index: gpu-<index>.
func DeviceName(index int) string { return "gpu-" + strconv.Itoa(index) }

// sharePolicy says how GPUs are shared.
type sharePolicy struct {
	mps  bool
	step resource.Quantity
}

// sharing reports whether g takes memory shares: MPS on, the GPU in EXCLUSIVE_PROCESS
// compute mode and memory for two steps at least (the API wants the minimum share plus
// one step within the capacity).
func (p sharePolicy) sharing(g GPU) bool {
	return p.mps && g.ComputeMode == gpu.ComputeModeExclusiveProcess && g.MemoryMiB<<20 >= 2*p.step.Value()
}

// memory is g's memory as a quantity.
func memory(g GPU) resource.Quantity { return resource.MustParse(fmt.Sprintf("%dMi", g.MemoryMiB)) }

// requestPolicy is a sharing GPU's policy on `memory`: shares of step, from one step up
// to the whole GPU rounded down to a step (the API wants every bound a whole number of
// steps from the minimum); a request that names no memory takes that whole.
func (p sharePolicy) requestPolicy(g GPU) *resourceapi.CapacityRequestPolicy {
	step := p.step.Value()
	whole := resource.NewQuantity((g.MemoryMiB<<20)/step*step, resource.BinarySI)
	minimum := p.step.DeepCopy()
	return &resourceapi.CapacityRequestPolicy{
		Default:    whole,
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &minimum, Max: whole, Step: &minimum},
	}
}

// device is g's ResourceSlice device.
func (p sharePolicy) device(g GPU) resourceapi.Device {
	sharing := p.sharing(g)
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		AttrUUID:         {StringValue: ptr.To(g.UUID)},
		AttrIndex:        {IntValue: ptr.To(int64(g.Index))},
		AttrModel:        {StringValue: ptr.To(g.Model)},
		AttrNVLinkIsland: {IntValue: ptr.To(int64(g.Island))},
		AttrMIGCapable:   {BoolValue: ptr.To(g.MIGCapable)},
		AttrSharing:      {BoolValue: ptr.To(sharing)},
	}
	if g.PCIBusID != "" {
		attrs[AttrPCIBusID] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.PCIBusID)}
		if std, err := deviceattribute.GetPCIBusIDAttribute(g.PCIBusID); err == nil {
			attrs[std.Name] = std.Value
		}
	}
	if g.NUMANode >= 0 {
		attrs[AttrNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.NUMANode))}
		if std, err := deviceattribute.GetNUMANodeAttribute(g.NUMANode, deviceattribute.ScalarAttribute); err == nil {
			attrs[std.Name] = std.Value
		}
	}
	if g.ComputeCapability != "" {
		attrs[AttrComputeCapability] = resourceapi.DeviceAttribute{VersionValue: ptr.To(g.ComputeCapability + ".0")}
	}
	if g.ComputeMode != "" {
		attrs[AttrComputeMode] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.ComputeMode)}
	}
	capacity := resourceapi.DeviceCapacity{Value: memory(g)}
	d := resourceapi.Device{Name: DeviceName(g.Index), Attributes: attrs}
	if sharing {
		capacity.RequestPolicy = p.requestPolicy(g)
		d.AllowMultipleAllocations = ptr.To(true)
	}
	d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{CapacityMemory: capacity}
	if !g.Healthy {
		d.Taints = []resourceapi.DeviceTaint{{Key: TaintUnhealthy, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	}
	return d
}

// resources is the node's pool: one slice with a device per GPU, in index order.
func (p sharePolicy) resources(node string, gpus []GPU) resourceslice.DriverResources {
	devices := make([]resourceapi.Device, 0, len(gpus))
	for _, g := range gpus {
		devices = append(devices, p.device(g))
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}
