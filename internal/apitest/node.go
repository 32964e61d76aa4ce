package apitest

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// NodeWrapper builds a corev1.Node.
type NodeWrapper struct {
	wrapper[*NodeWrapper, corev1.Node]
}

// MakeNode is a node with no resources, labels or taints.
func MakeNode(name string) *NodeWrapper {
	w := &NodeWrapper{}
	return w.init(w, corev1.Node{TypeMeta: typeMeta("v1", "Node"), ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// Allocatable sets status.allocatable and status.capacity of name to q.
func (w *NodeWrapper) Allocatable(name corev1.ResourceName, q string) *NodeWrapper {
	return w.set(name, resource.MustParse(q))
}

func (w *NodeWrapper) set(name corev1.ResourceName, q resource.Quantity) *NodeWrapper {
	setQuantity(&w.obj.Status.Allocatable, name, q)
	setQuantity(&w.obj.Status.Capacity, name, q)
	return w
}

// GPUs advertises n GPUs of model with memMiB each: tessera.dev/gpu,
// tessera.dev/gpu-memory (their sum) and the label tessera.dev/gpu-model.
func (w *NodeWrapper) GPUs(n int, model string, memMiB int64) *NodeWrapper {
	w.set(tesserav1.ResourceGPU, count(int64(n)))
	w.set(tesserav1.ResourceGPUMemory, count(int64(n)*memMiB))
	return w.GPUModel(model)
}

// GPUModel sets the label tessera.dev/gpu-model.
func (w *NodeWrapper) GPUModel(model string) *NodeWrapper {
	return w.Label(tesserav1.LabelGPUModel, model)
}

// GPUCount sets the label tessera.dev/gpu-count (physical GPUs, where allocatable counts shares).
func (w *NodeWrapper) GPUCount(n int) *NodeWrapper {
	return w.Label(tesserav1.LabelGPUCount, strconv.Itoa(n))
}

// Taint adds a taint.
func (w *NodeWrapper) Taint(key string, effect corev1.TaintEffect) *NodeWrapper {
	w.obj.Spec.Taints = append(w.obj.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	return w
}

// Unschedulable cordons the node.
func (w *NodeWrapper) Unschedulable() *NodeWrapper { w.obj.Spec.Unschedulable = true; return w }

// ProviderID sets spec.providerID.
func (w *NodeWrapper) ProviderID(id string) *NodeWrapper { w.obj.Spec.ProviderID = id; return w }

// Ready adds the condition Ready=True.
func (w *NodeWrapper) Ready() *NodeWrapper {
	w.obj.Status.Conditions = append(w.obj.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
	return w
}
