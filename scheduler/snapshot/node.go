package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// defaultMaxPods is the kubelet's default pod capacity, used when a node (typically a
// hand-written manifest) does not state allocatable pods.
const defaultMaxPods = 110

// Labels written by NVIDIA GPU feature discovery, read when Tessera's own are absent.
const (
	gfdProductLabel = "nvidia.com/gpu.product"
	gfdMemoryLabel  = "nvidia.com/gpu.memory" // MiB per GPU
)

// convertNode turns a Node (and its GPUNode, if any) into a framework.Node.
func convertNode(n *corev1.Node, g *tesserav1.GPUNode) (*framework.Node, error) {
	if n.Name == "" {
		return nil, objErr("Node", "", "", "metadata.name", "is empty")
	}
	alloc := n.Status.Allocatable
	field := "status.allocatable"
	if len(alloc) == 0 {
		alloc, field = n.Status.Capacity, "status.capacity"
	}
	out := &framework.Node{
		Name:          n.Name,
		Labels:        maps.Clone(n.Labels),
		Taints:        slices.Clone(n.Spec.Taints),
		Unschedulable: n.Spec.Unschedulable,
		GPUModel:      n.Labels[tesserav1.LabelGPUModel],
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	rest := make(corev1.ResourceList, len(alloc))
	for name, q := range alloc {
		switch name {
		case tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU, tesserav1.ResourceGPUMemory, tesserav1.ResourceGPUSlice:
		default:
			if q.Sign() < 0 {
				return nil, objErr("Node", "", n.Name, fmt.Sprintf("%s[%s]", field, name), "is negative (%s)", q.String())
			}
			rest[name] = q
		}
	}
	out.Allocatable = framework.FromResourceList(rest)
	if _, ok := alloc[corev1.ResourcePods]; !ok {
		out.Allocatable.Pods = defaultMaxPods
	}
	var err error
	if g != nil && len(g.Status.Devices) > 0 {
		if g.Name != "" && g.Name != n.Name {
			return nil, objErr("GPUNode", "", g.Name, "metadata.name", "differs from its node %q; a GPUNode is named after its node", n.Name)
		}
		out.GPUs, err = gpusFromGPUNode(g)
	} else {
		out.GPUs, err = gpusFromAllocatable(n, alloc, field)
	}
	if err != nil {
		return nil, err
	}
	if out.GPUModel == "" && len(out.GPUs) > 0 {
		out.GPUModel = out.GPUs[0].Model
	}
	out.Allocatable.GPU = int64(len(out.GPUs)) * framework.MilliPerGPU
	out.Refresh()
	return out, nil
}

// gpusFromGPUNode takes the devices the node agent discovered, ordered by NVML index.
func gpusFromGPUNode(g *tesserav1.GPUNode) ([]framework.GPU, error) {
	devs := slices.Clone(g.Status.Devices)
	if err := framework.CheckGPUCount(int64(len(devs))); err != nil {
		return nil, objErr("GPUNode", "", g.Name, "status.devices", "%v", err)
	}
	slices.SortFunc(devs, func(a, b tesserav1.GPUDevice) int { return int(a.Index) - int(b.Index) })
	gpus := make([]framework.GPU, len(devs))
	seen := make(map[string]int, len(devs))
	for i, d := range devs {
		f := fmt.Sprintf("status.devices[index=%d]", d.Index)
		switch {
		case d.UUID == "":
			return nil, objErr("GPUNode", "", g.Name, f+".uuid", "is empty")
		case d.MemoryMiB <= 0:
			return nil, objErr("GPUNode", "", g.Name, f+".memoryMiB", "must be positive (got %d)", d.MemoryMiB)
		case i > 0 && d.Index == devs[i-1].Index:
			return nil, objErr("GPUNode", "", g.Name, f, "index %d is listed twice", d.Index)
		}
		if j, dup := seen[d.UUID]; dup {
			return nil, objErr("GPUNode", "", g.Name, f+".uuid", "%s is also the uuid of device index %d", d.UUID, devs[j].Index)
		}
		seen[d.UUID] = i
		gpus[i] = framework.GPU{Index: int(d.Index), UUID: d.UUID, Model: d.Model, MemoryMiB: d.MemoryMiB,
			Island: int(d.Island), NUMA: int(d.NUMANode), Healthy: d.Healthy}
	}
	return gpus, nil
}

// gpusFromAllocatable synthesizes GPUs for a node without a GPUNode: the count from
// allocatable tessera.dev/gpu (or nvidia.com/gpu), the model from the tessera.dev/gpu-model
// label, the memory from allocatable tessera.dev/gpu-memory divided by the count. A
// tessera.dev/gpu-count label overrides the count, for nodes that advertise GPU shares.
func gpusFromAllocatable(n *corev1.Node, alloc corev1.ResourceList, field string) ([]framework.GPU, error) {
	var count int64
	var countField string
	for _, name := range []corev1.ResourceName{tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU} {
		if q, ok := alloc[name]; ok {
			countField = fmt.Sprintf("%s[%s]", field, name)
			c, err := wholeCount(q)
			if err != nil {
				return nil, objErr("Node", "", n.Name, countField, "%v", err)
			}
			count = c
			break
		}
	}
	if s, ok := n.Labels[tesserav1.LabelGPUCount]; ok {
		c, err := strconv.ParseInt(s, 10, 64)
		if err != nil || c < 0 {
			return nil, objErr("Node", "", n.Name, "metadata.labels["+tesserav1.LabelGPUCount+"]", "%q is not a GPU count", s)
		}
		count, countField = c, "metadata.labels["+tesserav1.LabelGPUCount+"]"
	}
	if count == 0 {
		return nil, nil
	}
	if err := framework.CheckGPUCount(count); err != nil {
		return nil, objErr("Node", "", n.Name, countField, "%v", err)
	}
	var memPerGPU int64
	if q, ok := alloc[tesserav1.ResourceGPUMemory]; ok {
		memPerGPU = q.Value() / count
	} else if s, ok := n.Labels[gfdMemoryLabel]; ok {
		memPerGPU, _ = strconv.ParseInt(s, 10, 64)
	}
	model := n.Labels[tesserav1.LabelGPUModel]
	if model == "" {
		model = n.Labels[gfdProductLabel]
	}
	gpus := make([]framework.GPU, count)
	for i := range gpus {
		gpus[i] = framework.GPU{Index: i, UUID: framework.DerivedGPUUUID(n.Name, i), Model: model,
			MemoryMiB: max(memPerGPU, 0), NUMA: -1, Healthy: true}
	}
	return gpus, nil
}

// wholeCount reads a quantity that must be a non-negative whole number.
func wholeCount(q resource.Quantity) (int64, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("is negative (%s)", q.String())
	}
	if m := q.MilliValue(); m%1000 != 0 {
		return 0, fmt.Errorf("%s is not a whole number of GPUs", q.String())
	}
	return q.Value(), nil
}
