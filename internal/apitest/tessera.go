package apitest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

var tesseraVersion = tesserav1.GroupVersion.String()

// QueueWrapper builds a tesserav1.Queue.
type QueueWrapper struct {
	wrapper[*QueueWrapper, tesserav1.Queue]
}

// MakeQueue is a queue with an empty spec (the API server defaults weight 1).
func MakeQueue(name string) *QueueWrapper {
	w := &QueueWrapper{}
	return w.init(w, tesserav1.Queue{TypeMeta: typeMeta(tesseraVersion, "Queue"), ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// Weight sets spec.weight.
func (w *QueueWrapper) Weight(n int32) *QueueWrapper { w.obj.Spec.Weight = n; return w }

// Priority sets spec.priority.
func (w *QueueWrapper) Priority(n int32) *QueueWrapper { w.obj.Spec.Priority = n; return w }

// Reclaimable sets spec.reclaimable.
func (w *QueueWrapper) Reclaimable(r bool) *QueueWrapper { w.obj.Spec.Reclaimable = &r; return w }

// AllowedPriorityClasses sets spec.allowedPriorityClasses.
func (w *QueueWrapper) AllowedPriorityClasses(names ...string) *QueueWrapper {
	w.obj.Spec.AllowedPriorityClasses = names
	return w
}

// Parent sets spec.parent.
func (w *QueueWrapper) Parent(p string) *QueueWrapper { w.obj.Spec.Parent = p; return w }

// Deserved sets spec.deserved[name] to q.
func (w *QueueWrapper) Deserved(name corev1.ResourceName, q string) *QueueWrapper {
	setQuantity(&w.obj.Spec.Deserved, name, resource.MustParse(q))
	return w
}

// Capability sets spec.capability[name] to q.
func (w *QueueWrapper) Capability(name corev1.ResourceName, q string) *QueueWrapper {
	setQuantity(&w.obj.Spec.Capability, name, resource.MustParse(q))
	return w
}

// Guarantee sets spec.guarantee[name] to q.
func (w *QueueWrapper) Guarantee(name corev1.ResourceName, q string) *QueueWrapper {
	setQuantity(&w.obj.Spec.Guarantee, name, resource.MustParse(q))
	return w
}

// PodGroupWrapper builds a tesserav1.PodGroup.
type PodGroupWrapper struct {
	wrapper[*PodGroupWrapper, tesserav1.PodGroup]
}

// MakePodGroup is a PodGroup of namespace ns with an empty spec.
func MakePodGroup(name, ns string) *PodGroupWrapper {
	w := &PodGroupWrapper{}
	return w.init(w, tesserav1.PodGroup{TypeMeta: typeMeta(tesseraVersion, "PodGroup"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
}

// MinMember sets spec.minMember, the gang size.
func (w *PodGroupWrapper) MinMember(n int32) *PodGroupWrapper { w.obj.Spec.MinMember = n; return w }

// Queue sets spec.queue.
func (w *PodGroupWrapper) Queue(q string) *PodGroupWrapper { w.obj.Spec.Queue = q; return w }

// PriorityClass sets spec.priorityClassName.
func (w *PodGroupWrapper) PriorityClass(name string) *PodGroupWrapper {
	w.obj.Spec.PriorityClassName = name
	return w
}

// MinResources sets spec.minResources[name] to q.
func (w *PodGroupWrapper) MinResources(name corev1.ResourceName, q string) *PodGroupWrapper {
	setQuantity(&w.obj.Spec.MinResources, name, resource.MustParse(q))
	return w
}

// MinRuntime sets spec.minRuntime.
func (w *PodGroupWrapper) MinRuntime(d time.Duration) *PodGroupWrapper {
	w.obj.Spec.MinRuntime = &metav1.Duration{Duration: d}
	return w
}

// Topology requires the gang's nodes to share the value of the node label level.
func (w *PodGroupWrapper) Topology(level string) *PodGroupWrapper {
	w.obj.Spec.Topology = &tesserav1.TopologyConstraint{Required: level}
	return w
}

// Phase sets status.phase.
func (w *PodGroupWrapper) Phase(p tesserav1.PodGroupPhase) *PodGroupWrapper {
	w.obj.Status.Phase = p
	return w
}

// GPUNodeWrapper builds a tesserav1.GPUNode.
type GPUNodeWrapper struct {
	wrapper[*GPUNodeWrapper, tesserav1.GPUNode]
}

// MakeGPUNode is the GPUNode of node name, with no devices.
func MakeGPUNode(name string) *GPUNodeWrapper {
	w := &GPUNodeWrapper{}
	return w.init(w, tesserav1.GPUNode{TypeMeta: typeMeta(tesseraVersion, "GPUNode"), ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// Device adds a device to status.devices.
func (w *GPUNodeWrapper) Device(d tesserav1.GPUDevice) *GPUNodeWrapper {
	w.obj.Status.Devices = append(w.obj.Status.Devices, d)
	return w
}

// GPUs adds n healthy devices of model with memMiB each, indexed from 0, with UUIDs
// GPUUUID(node, index).
func (w *GPUNodeWrapper) GPUs(n int, model string, memMiB int64) *GPUNodeWrapper {
	for i := range n {
		w.Device(tesserav1.GPUDevice{Index: int32(i), UUID: GPUUUID(w.obj.Name, i), Model: model, MemoryMiB: memMiB, Healthy: true})
	}
	return w
}

// GPUUUID is the UUID that GPUNodeWrapper.GPUs gives GPU i of node.
func GPUUUID(node string, i int) string { return fmt.Sprintf("GPU-%s-%d", node, i) }

// LastActive sets status.lastActiveTime, when a GPU of the node was last busy.
func (w *GPUNodeWrapper) LastActive(t time.Time) *GPUNodeWrapper {
	w.obj.Status.LastActiveTime = &metav1.Time{Time: t}
	return w
}
