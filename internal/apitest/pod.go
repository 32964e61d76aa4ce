package apitest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Container is the name of the one container MakePod gives a pod, and Image its image.
const (
	Container = "main"
	Image     = "busybox"
)

// PodWrapper builds a corev1.Pod. The resource setters act on the first container.
type PodWrapper struct {
	wrapper[*PodWrapper, corev1.Pod]
}

// MakePod is a pod of namespace ns with one container "main" that asks nothing.
func MakePod(name, ns string) *PodWrapper {
	w := &PodWrapper{}
	return w.init(w, corev1.Pod{TypeMeta: typeMeta("v1", "Pod"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: Container, Image: Image}}}})
}

// Queue sets the queue label tessera.dev/queue.
func (w *PodWrapper) Queue(q string) *PodWrapper { return w.Label(tesserav1.LabelQueue, q) }

// Group sets the gang label tessera.dev/pod-group.
func (w *PodWrapper) Group(g string) *PodWrapper { return w.Label(tesserav1.LabelPodGroup, g) }

// SchedulerName sets spec.schedulerName (tesserav1.SchedulerName hands the pod to Tessera).
func (w *PodWrapper) SchedulerName(s string) *PodWrapper { w.obj.Spec.SchedulerName = s; return w }

// NodeName binds the pod to node.
func (w *PodWrapper) NodeName(node string) *PodWrapper { w.obj.Spec.NodeName = node; return w }

// Phase sets status.phase.
func (w *PodWrapper) Phase(ph corev1.PodPhase) *PodWrapper { w.obj.Status.Phase = ph; return w }

// RunningOn binds the pod to node, running since start.
func (w *PodWrapper) RunningOn(node string, start time.Time) *PodWrapper {
	w.obj.Status.StartTime = &metav1.Time{Time: start}
	return w.NodeName(node).Phase(corev1.PodRunning)
}

// Priority sets spec.priority.
func (w *PodWrapper) Priority(p int32) *PodWrapper { w.obj.Spec.Priority = &p; return w }

// PriorityClass sets spec.priorityClassName.
func (w *PodWrapper) PriorityClass(name string) *PodWrapper {
	w.obj.Spec.PriorityClassName = name
	return w
}

// Request sets the first container's request of name to q.
func (w *PodWrapper) Request(name corev1.ResourceName, q string) *PodWrapper {
	setQuantity(&w.obj.Spec.Containers[0].Resources.Requests, name, resource.MustParse(q))
	return w
}

// Limit sets the first container's limit of name to q.
func (w *PodWrapper) Limit(name corev1.ResourceName, q string) *PodWrapper {
	setQuantity(&w.obj.Spec.Containers[0].Resources.Limits, name, resource.MustParse(q))
	return w
}

// RequestAndLimit sets both the request and the limit of name to q.
func (w *PodWrapper) RequestAndLimit(name corev1.ResourceName, q string) *PodWrapper {
	return w.Request(name, q).Limit(name, q)
}

// CPU sets the CPU request.
func (w *PodWrapper) CPU(q string) *PodWrapper { return w.Request(corev1.ResourceCPU, q) }

// Memory sets the memory request.
func (w *PodWrapper) Memory(q string) *PodWrapper { return w.Request(corev1.ResourceMemory, q) }

// GPU asks n whole GPUs (tessera.dev/gpu). Like the other GPU setters it sets the
// request and the limit, as the API server wants of an extended resource.
func (w *PodWrapper) GPU(n int64) *PodWrapper { return w.extended(tesserav1.ResourceGPU, n) }

// GPUMemory asks a slice of mib MiB of one GPU (tessera.dev/gpu-memory).
func (w *PodWrapper) GPUMemory(mib int64) *PodWrapper {
	return w.extended(tesserav1.ResourceGPUMemory, mib)
}

// NvidiaGPU asks n GPUs of the NVIDIA device plugin (nvidia.com/gpu).
func (w *PodWrapper) NvidiaGPU(n int64) *PodWrapper {
	return w.extended(tesserav1.ResourceNvidiaGPU, n)
}

func (w *PodWrapper) extended(name corev1.ResourceName, n int64) *PodWrapper {
	r := &w.obj.Spec.Containers[0].Resources
	setQuantity(&r.Requests, name, count(n))
	setQuantity(&r.Limits, name, count(n))
	return w
}

// Assignment sets the scheduler's device assignment annotation tessera.dev/gpu-assignment.
func (w *PodWrapper) Assignment(a tesserav1.GPUAssignment) *PodWrapper {
	return w.Annotation(tesserav1.AnnotationGPUAssign, a.Encode())
}

// ControlledBy adds a controller owner reference to the kind/name (uid "uid-<name>";
// apiVersion batch/v1 for a Job, apps/v1 for ReplicaSet, StatefulSet and DaemonSet).
func (w *PodWrapper) ControlledBy(kind, name string) *PodWrapper {
	return w.OwnerReference(metav1.OwnerReference{APIVersion: apiVersions[kind], Kind: kind, Name: name,
		UID: types.UID("uid-" + name), Controller: ptr.To(true)})
}

var apiVersions = map[string]string{"Job": "batch/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1"}

// OwnerReference adds ref to the pod's owner references.
func (w *PodWrapper) OwnerReference(ref metav1.OwnerReference) *PodWrapper {
	w.obj.OwnerReferences = append(w.obj.OwnerReferences, ref)
	return w
}

// Volume adds a volume.
func (w *PodWrapper) Volume(v corev1.Volume) *PodWrapper {
	w.obj.Spec.Volumes = append(w.obj.Spec.Volumes, v)
	return w
}

// ResourceClaim makes the pod use the ResourceClaim claimName under the pod-level name
// name, for every container.
func (w *PodWrapper) ResourceClaim(name, claimName string) *PodWrapper {
	w.obj.Spec.ResourceClaims = append(w.obj.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &claimName})
	for i := range w.obj.Spec.Containers {
		c := &w.obj.Spec.Containers[i]
		c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	}
	return w
}
