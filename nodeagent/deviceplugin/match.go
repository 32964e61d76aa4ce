package deviceplugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

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

func (c candidate) key() containerKey { return containerKey{c.pod.UID, c.container} }

func (c candidate) name() string { return c.pod.Namespace + "/" + c.pod.Name }

type containerKey struct {
	pod       types.UID
	container string
}

// request is one container request of the kubelet and the signals it carries about
// the pod it is for.
type request struct {
	// count is the number of devices asked for.
	count int64
	// deviceIDs are the devices the kubelet allocated (Allocate) or must include
	// (GetPreferredAllocation: those it reuses from the pod's init containers).
	deviceIDs []string
}

// steer is the preference GetPreferredAllocation gave for a container it could tell
// the pod of: the kubelet asks for it just before it allocates that container.
type steer struct {
	key       containerKey
	deviceIDs []string
}

// view is what the plugin knows about the node's pods when it decides which pod a
// request is for.
type view struct {
	// allocated are the containers already allocated devices of the resource.
	allocated map[containerKey]bool
	// known are the pods the kubelet lists, the one it is admitting among them; nil
	// when the kubelet's record is not read.
	known map[types.UID]bool
	// granted is what the plugin handed out, by pod UID.
	granted grants
	// steered is the last preference GetPreferredAllocation gave, if any.
	steered *steer
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

// candidates are the containers a request for count devices can be for: of each
// pending pod on the node that the kubelet knows (when its record is read), the next
// container not allocated yet, if it asks for count devices. They come oldest pod
// first.
func candidates(pods []corev1.Pod, node string, resource corev1.ResourceName, count int64, v view) []candidate {
	var out []candidate
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != node || pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
			continue
		}
		if v.known != nil && !v.known[pod.UID] {
			continue
		}
		c, ok := nextContainer(pod, resource, v.allocated)
		if !ok || requested(c, resource) != count {
			continue
		}
		out = append(out, candidate{pod: pod, container: c.Name})
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if c := a.pod.CreationTimestamp.Compare(b.pod.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.pod.Namespace, b.pod.Namespace), cmp.Compare(a.pod.Name, b.pod.Name))
	})
	return out
}

// findCandidate tells which container a request is for and reads its assignment.
//
// Among the candidates (see candidates), it takes the one pod that the kubelet's
// signals point to: the pod that holds, in another container, a device the kubelet
// passes (it reuses an init container's devices for the pod's later containers), or
// the pod GetPreferredAllocation steered these devices to. When the candidates left
// were assigned the same GPUs, which one it is makes no difference. Otherwise it does
// not guess: it refuses, and the kubelet fails the pod's admission rather than the
// plugin handing one pod another's GPUs.
//
// The chosen pod must have been bound by the tessera scheduler (its schedulerName is
// scheduler and its assignment carries its own UID), else the allocation is refused
// (*Refusal).
func findCandidate(pods []corev1.Pod, node string, resource corev1.ResourceName, req request, v view, scheduler string) (candidate, error) {
	cands := candidates(pods, node, resource, req.count, v)
	if len(cands) == 0 {
		known := ""
		if v.known != nil {
			known = " that the kubelet is admitting"
		}
		return candidate{}, fmt.Errorf("no pending pod on node %s%s has an unallocated container asking for %d %s; "+
			"pods that use %s must be scheduled by the tessera scheduler (schedulerName: %s), which records %s",
			node, known, req.count, resource, resource, scheduler, tesserav1.AnnotationGPUAssign)
	}
	if len(cands) > 1 {
		cands = narrow(cands, req, v)
	}
	if len(cands) == 1 {
		return readAssignment(cands[0], node, req.count, resource, scheduler)
	}
	// Several pods could be the one being admitted: harmless only if they all get the
	// same GPUs.
	first, err := readAssignment(cands[0], node, req.count, resource, scheduler)
	same := err == nil
	for _, c := range cands[1:] {
		if !same {
			break
		}
		other, err := readAssignment(c, node, req.count, resource, scheduler)
		same = err == nil && slices.Equal(other.gpus.UUIDs, first.gpus.UUIDs) && other.gpus.MemoryMiB == first.gpus.MemoryMiB
	}
	if same {
		return first, nil
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.name()
	}
	hint := "the kubelet lists these pods as received but not allocated"
	if v.known == nil {
		hint = "the kubelet's pod resources API is not read, so the plugin cannot see which pod it is admitting (set --pod-resources-socket and mount it from the host)"
	}
	return candidate{}, fmt.Errorf("cannot tell which of the pods %s, assigned different GPUs, the kubelet is admitting for %d %s (%s); "+
		"refusing rather than handing one pod another's GPUs: the kubelet fails this admission and the pod's controller creates it again",
		strings.Join(names, ", "), req.count, resource, hint)
}

// narrow keeps the one candidate the kubelet's signals point to, or all of them.
func narrow(cands []candidate, req request, v view) []candidate {
	// The kubelet passes devices of another container of the same pod only: it reuses
	// an init container's devices.
	var reusing []candidate
	for _, c := range cands {
		if v.granted.heldBy(c.pod.UID, req.deviceIDs) {
			reusing = append(reusing, c)
		}
	}
	if len(reusing) == 1 {
		return reusing
	}
	// GetPreferredAllocation steered the kubelet to these devices for one pod, which it
	// could tell.
	if s := v.steered; s != nil && len(req.deviceIDs) > 0 && !slices.ContainsFunc(req.deviceIDs, func(id string) bool { return !slices.Contains(s.deviceIDs, id) }) {
		for _, c := range cands {
			if c.key() == s.key {
				return []candidate{c}
			}
		}
	}
	return cands
}

// readAssignment reads the candidate's GPUs from its pod's assignment, which the tessera
// scheduler must have written when it bound the pod.
func readAssignment(c candidate, node string, count int64, resource corev1.ResourceName, scheduler string) (candidate, error) {
	name := c.name()
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
