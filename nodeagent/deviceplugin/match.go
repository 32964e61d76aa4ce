package deviceplugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Pods lists the pods bound to this node.
type Pods interface {
	List(ctx context.Context) ([]corev1.Pod, error)
}

// KubePods lists the node's pods from the API server (not a cache: Allocate follows
// binding closely, and a stale cache would miss the pod).
type KubePods struct {
	Client kubernetes.Interface
	Node   string
}

// List returns the pods whose spec.nodeName is the node.
func (k KubePods) List(ctx context.Context) ([]corev1.Pod, error) {
	l, err := k.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", k.Node).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list pods on node %s: %w", k.Node, err)
	}
	return l.Items, nil
}

// candidate is the container an Allocate request is for.
type candidate struct {
	pod       *corev1.Pod
	container string
	gpus      tesserav1.ContainerGPUs
}

type containerKey struct {
	pod       types.UID
	container string
}

// requested is the container's count of resource (its limit; extended resources have
// equal requests and limits).
func requested(c *corev1.Container, resource corev1.ResourceName) int64 {
	if q, ok := c.Resources.Limits[resource]; ok {
		return q.Value()
	}
	q := c.Resources.Requests[resource]
	return q.Value()
}

func started(pod *corev1.Pod, container string) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range list {
			if s.Name == container && (s.State.Running != nil || s.State.Terminated != nil || s.RestartCount > 0) {
				return true
			}
		}
	}
	return false
}

// nextContainer returns the pod's first container that asks for resource and has not
// been allocated yet, or "" when none is left.
func nextContainer(pod *corev1.Pod, resource corev1.ResourceName, allocated map[containerKey]bool) (*corev1.Container, bool) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if requested(c, resource) <= 0 || allocated[containerKey{pod.UID, c.Name}] || started(pod, c.Name) {
				continue
			}
			return c, true
		}
	}
	return nil, false
}

// Reasons of a Refusal: the metric label and the event's reason.
const (
	// RefusedNoAssignment: the pod has no tessera.dev/gpu-assignment.
	RefusedNoAssignment = "NoAssignment"
	// RefusedOtherScheduler: the pod names another scheduler than Tessera's.
	RefusedOtherScheduler = "OtherScheduler"
	// RefusedNotBound: the assignment does not carry the pod's own UID in
	// tessera.dev/bound-pod-uid, which the scheduler writes when it binds the pod: it was
	// written by somebody else.
	RefusedNotBound = "NotBoundByScheduler"
	// RefusedInvalid: the assignment is malformed, for another node or another container.
	RefusedInvalid = "InvalidAssignment"
)

// Refusal is an Allocate refused because of the pod it is for: the pod was not placed by
// the tessera scheduler, or its assignment cannot be used here. The plugin reports it
// (Options.OnRefusal) besides returning it to the kubelet, which fails the pod.
type Refusal struct {
	Pod    *corev1.Pod
	Reason string
	msg    string
}

func (r *Refusal) Error() string { return r.msg }

func refuse(pod *corev1.Pod, reason, format string, args ...any) *Refusal {
	return &Refusal{Pod: pod, Reason: reason, msg: fmt.Sprintf(format, args...)}
}

// findCandidate picks the container an Allocate of count devices is for and reads its
// assignment. The kubelet admits pods oldest first and allocates a pod's containers in
// order, so the oldest pending pod whose next unallocated container asks for count
// devices is the one. That pod must have been bound by the tessera scheduler (its
// schedulerName is scheduler and its assignment carries its own UID), else the
// allocation is refused (*Refusal): a pod never gets another pod's GPUs in its place.
func findCandidate(pods []corev1.Pod, node string, resource corev1.ResourceName, count int64, allocated map[containerKey]bool, scheduler string) (candidate, error) {
	var cands []candidate
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != node || pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
			continue
		}
		c, ok := nextContainer(pod, resource, allocated)
		if !ok || requested(c, resource) != count {
			continue
		}
		cands = append(cands, candidate{pod: pod, container: c.Name})
	}
	if len(cands) == 0 {
		return candidate{}, fmt.Errorf("no pending pod on node %s has an unallocated container asking for %d %s; "+
			"pods that use %s must be scheduled by the tessera scheduler (schedulerName: %s), which records %s",
			node, count, resource, resource, scheduler, tesserav1.AnnotationGPUAssign)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := a.pod.CreationTimestamp.Compare(b.pod.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.pod.Namespace, b.pod.Namespace), cmp.Compare(a.pod.Name, b.pod.Name))
	})
	c := cands[0]
	name := c.pod.Namespace + "/" + c.pod.Name
	pod := c.pod
	ann, ok := pod.Annotations[tesserav1.AnnotationGPUAssign]
	if !ok {
		return c, refuse(pod, RefusedNoAssignment, "pod %s asks for %d %s but has no %s annotation: it was not placed by the tessera scheduler "+
			"(set schedulerName: %s); refusing to hand out an arbitrary GPU", name, count, resource, tesserav1.AnnotationGPUAssign, scheduler)
	}
	if pod.Spec.SchedulerName != scheduler {
		return c, refuse(pod, RefusedOtherScheduler, "pod %s has a %s annotation but names scheduler %q: only pods the %s scheduler bound get GPUs; "+
			"refusing the assignment (delete the pod and create it with schedulerName: %s and without the annotation)",
			name, tesserav1.AnnotationGPUAssign, pod.Spec.SchedulerName, scheduler, scheduler)
	}
	if uid := pod.Annotations[tesserav1.AnnotationBoundPodUID]; uid == "" || uid != string(pod.UID) {
		return c, refuse(pod, RefusedNotBound, "pod %s: its %s was not written by the %s scheduler when it bound the pod (%s is %q, the pod's UID is %q); "+
			"refusing the assignment (delete the pod and create it without scheduling annotations)",
			name, tesserav1.AnnotationGPUAssign, scheduler, tesserav1.AnnotationBoundPodUID, uid, pod.UID)
	}
	a, err := tesserav1.ParseGPUAssignment(ann)
	if err != nil {
		return c, refuse(pod, RefusedInvalid, "pod %s: %v", name, err)
	}
	if a.Node != node {
		return c, refuse(pod, RefusedInvalid, "pod %s: annotation %s is for node %q but the pod runs on %q; the scheduler must reassign it",
			name, tesserav1.AnnotationGPUAssign, a.Node, node)
	}
	g, ok := a.Container(c.container)
	if !ok {
		return c, refuse(pod, RefusedInvalid, "pod %s: annotation %s has no entry for container %q", name, tesserav1.AnnotationGPUAssign, c.container)
	}
	c.gpus = g
	return c, nil
}
