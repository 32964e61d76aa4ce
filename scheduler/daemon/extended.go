package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// claimedResources are the extended resources a scheduler-made claim carries, sorted.
var claimedResources = []corev1.ResourceName{tesserav1.ResourceNvidiaGPU, tesserav1.ResourceGPU, tesserav1.ResourceGPUMemory}

// viaClaim reports whether the GPUs that bd places a pod on reach it through a claim the
// scheduler makes: the pod asks them as extended resources, not through claims of its
// own, on GPUs that claims carry (snapshot.Options.ExtendedResourceClaims).
func viaClaim(bd scheduler.Binding) bool {
	return bd.GPUs != 0 && bd.Task.GPU.Claim == nil && bd.Node.GPUs[bd.GPUs.Indices()[0]].ViaClaims
}

// extendedClaimsOf indexes the claims the scheduler made for pods' extended resources
// by the UID of the pod that owns them.
func extendedClaimsOf(state *cache.State) map[types.UID]*resourcev1.ResourceClaim {
	out := map[types.UID]*resourcev1.ResourceClaim{}
	for _, c := range state.Claims {
		if c.Annotations[resourcev1.ExtendedResourceClaimAnnotation] != "true" {
			continue
		}
		if ref := metav1.GetControllerOf(c); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
			out[ref.UID] = c
		}
	}
	return out
}

// extendedClaim makes (or finds, for a bind retried) the ResourceClaim that carries the
// GPUs bd places pod on, allocates it those devices, reserves it for the pod and names
// it in the pod's status.extendedResourceClaimStatus, where the kubelet looks for it.
// It returns the claim, also with an error once one exists, for dropExtendedClaim.
func (b *Binder) extendedClaim(ctx context.Context, state *cache.State, pod *corev1.Pod, bd scheduler.Binding, made map[types.UID]*resourcev1.ResourceClaim) (*resourcev1.ResourceClaim, error) {
	reqs, mappings, err := extendedRequests(pod, &bd.Task.GPU)
	if err != nil {
		return nil, err
	}
	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs, Config: memoryLimits(pod, reqs, mappings)}}
	c := made[pod.UID]
	if c != nil && !equality.Semantic.DeepEqual(c.Spec.Devices.Requests, reqs) {
		// Made for an older spec of the pod, or by somebody else: its requests are not
		// trusted with the pod's GPUs.
		return c, fmt.Errorf("ResourceClaim %s/%s, marked as the claim of the pod's extended resources, asks other devices than the pod; it is deleted and made again", c.Namespace, c.Name)
	}
	if c == nil {
		c = &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: pod.Namespace, GenerateName: pod.Name + "-extended-resources-",
				Annotations: map[string]string{resourcev1.ExtendedResourceClaimAnnotation: "true"},
				// Deleted with its pod. As kube-scheduler's, without blockOwnerDeletion: where
				// the admission plugin OwnerReferencesPermissionEnforcement runs, setting it
				// needs the right to update the pod's finalizers.
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}},
				Finalizers:      []string{resourcev1.Finalizer},
			},
			Spec: spec,
		}
		if err := b.client.Create(ctx, c); err != nil {
			return nil, fmt.Errorf("create the ResourceClaim of its extended resources: %w", err)
		}
	}
	alloc, rest, err := allocation(c, bd.Node, bd.GPUs.Indices(), state.Devices, nil, metav1.NewTime(b.opts.Now()))
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("its requests take %d of the %d GPUs placed", bd.GPUs.Len()-len(rest), bd.GPUs.Len())
	}
	if err != nil {
		return c, fmt.Errorf("ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if cp, err := b.reserve(ctx, c, pod, alloc); err != nil {
		return c, err
	} else if cp != nil {
		c = cp
	}
	st := &corev1.PodExtendedResourceClaimStatus{RequestMappings: mappings, ResourceClaimName: c.Name}
	if cur := pod.Status.ExtendedResourceClaimStatus; cur != nil && cur.ResourceClaimName == st.ResourceClaimName && slices.Equal(cur.RequestMappings, mappings) {
		return c, nil
	}
	cp := pod.DeepCopy()
	cp.Status.ExtendedResourceClaimStatus = st
	if err := b.client.Status().Patch(ctx, cp, client.MergeFrom(pod)); err != nil {
		return c, fmt.Errorf("name ResourceClaim %s in status.extendedResourceClaimStatus: %w", c.Name, err)
	}
	if cp.Status.ExtendedResourceClaimStatus == nil {
		return c, errors.New("the API server dropped status.extendedResourceClaimStatus: it needs the feature gate DRAExtendedResource " +
			"(Kubernetes 1.36 and later: on by default); or set the scheduler's --extended-resource-claims to auto or off")
	}
	return c, nil
}

// dropExtendedClaim deletes the claim made for a pod that did not bind: its allocation
// no longer holds, and the next attempt makes a new one for the placement it finds.
func (b *Binder) dropExtendedClaim(c *resourcev1.ResourceClaim) {
	ctx := context.Background()
	err := b.release(ctx, c)
	if err == nil {
		err = b.client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		b.log.Info("deleting the extended-resource claim of a pod that did not bind failed; its next bind reuses it, and it goes with its pod",
			"claim", c.Namespace+"/"+c.Name, "error", err.Error())
	}
}

// extendedRequests are the device requests of the claim that carries the GPU resources
// of pod's containers, and the mappings of each (container, resource) to them, named as
// kube-scheduler names those of its claims for extended resources:
// container-<i>-request-<j>, i the container's index among the init containers and then
// the containers, j the resource's among the container's requests sorted by name. gpu is
// the pod's GPU request as the scheduler reads it: a share of memory becomes one device
// of the share class with that memory as its capacity request; whole GPUs a count of
// the whole-GPU class. An init container that ends before the others start (not a
// sidecar) uses the requests of the containers that run on, and one of its own for
// what they lack, the largest of those serving every such init container.
func extendedRequests(pod *corev1.Pod, gpu *framework.GPURequest) ([]resourcev1.DeviceRequest, []corev1.ContainerExtendedResourceRequest, error) {
	cs := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	ends := func(i int) bool {
		return i < len(pod.Spec.InitContainers) && (cs[i].RestartPolicy == nil || *cs[i].RestartPolicy != corev1.ContainerRestartPolicyAlways)
	}
	var reqs []resourcev1.DeviceRequest
	var mappings []corev1.ContainerExtendedResourceRequest
	mapping := func(i int, name corev1.ResourceName, req string) {
		mappings = append(mappings, corev1.ContainerExtendedResourceRequest{ContainerName: cs[i].Name, ResourceName: string(name), RequestName: req})
	}
	for _, name := range claimedResources {
		share := name == tesserav1.ResourceGPUMemory && gpu.Shared()
		var lasting []string
		var have int64
		for i := range cs {
			if n := units(&cs[i], name, share); n > 0 && !ends(i) {
				r := deviceRequest(i, &cs[i], name, n, share)
				reqs, lasting, have = append(reqs, r), append(lasting, r.Name), have+n
				mapping(i, name, r.Name)
			}
		}
		var extra *resourcev1.DeviceRequest
		var users []int
		for i := range cs {
			n := units(&cs[i], name, share)
			if n == 0 || !ends(i) {
				continue
			}
			for _, r := range lasting {
				mapping(i, name, r)
			}
			if n > have {
				if r := deviceRequest(i, &cs[i], name, n-have, share); extra == nil || r.Exactly.Count > extra.Exactly.Count {
					extra = &r
				}
				users = append(users, i)
			}
		}
		if extra != nil {
			reqs = append(reqs, *extra)
			for _, i := range users {
				mapping(i, name, extra.Name)
			}
		}
	}
	if len(reqs) == 0 {
		return nil, nil, fmt.Errorf("asks no GPUs through %v that a claim could carry", claimedResources)
	}
	slices.SortFunc(reqs, func(a, b resourcev1.DeviceRequest) int { return strings.Compare(a.Name, b.Name) })
	return reqs, mappings, nil
}

// units is how many devices container c asks of resource name: its count of whole
// GPUs, or one for a share (or for a slice the scheduler places on a whole GPU).
func units(c *corev1.Container, name corev1.ResourceName, share bool) int64 {
	q, ok := c.Resources.Requests[name]
	switch {
	case !ok || q.IsZero():
		return 0
	case name == tesserav1.ResourceGPUMemory:
		return 1
	}
	return q.Value()
}

// deviceRequest is the request of n devices for resource name of container c, the
// i-th of the pod's init containers and containers.
func deviceRequest(i int, c *corev1.Container, name corev1.ResourceName, n int64, share bool) resourcev1.DeviceRequest {
	j := slices.Index(slices.Sorted(maps.Keys(c.Resources.Requests)), name)
	e := &resourcev1.ExactDeviceRequest{DeviceClassName: tesserav1.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}
	if share {
		q := c.Resources.Requests[name]
		e.DeviceClassName, e.Count = tesserav1.DeviceClassGPUShare, 1
		e.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{
			tesserav1.DeviceCapacityMemory: *resource.NewQuantity(q.Value()<<20, resource.BinarySI)}}
	}
	return resourcev1.DeviceRequest{Name: "container-" + strconv.Itoa(i) + "-request-" + strconv.Itoa(j), Exactly: e}
}

// memoryLimits carries the GPU-memory limits of the pod's annotations
// (tesserav1.AnnotationGPUMemoryLimit) above a share's request into the claim, as the
// opaque configuration GPUShareConfig of that share's request, where the node agent
// reads a claim's limit.
func memoryLimits(pod *corev1.Pod, reqs []resourcev1.DeviceRequest, mappings []corev1.ContainerExtendedResourceRequest) []resourcev1.DeviceClaimConfiguration {
	var out []resourcev1.DeviceClaimConfiguration
	for _, m := range mappings {
		i := slices.IndexFunc(reqs, func(r resourcev1.DeviceRequest) bool { return r.Name == m.RequestName })
		if m.ResourceName != string(tesserav1.ResourceGPUMemory) || i < 0 || reqs[i].Exactly.Capacity == nil {
			continue
		}
		q := reqs[i].Exactly.Capacity.Requests[tesserav1.DeviceCapacityMemory]
		limit, err := tesserav1.GPUMemoryLimitMiB(pod.Annotations, m.ContainerName, q.Value()>>20)
		if err != nil || limit<<20 <= q.Value() { // (the webhook refuses a bad limit; the agent uses the share)
			continue
		}
		raw, _ := json.Marshal(tesserav1.GPUShareConfig{APIVersion: tesserav1.GPUShareConfigAPIVersion, Kind: tesserav1.GPUShareConfigKind,
			MemoryLimit: strconv.FormatInt(limit, 10) + "Mi"})
		out = append(out, resourcev1.DeviceClaimConfiguration{Requests: []string{m.RequestName}, DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: tesserav1.DRADriver, Parameters: runtime.RawExtension{Raw: raw}}}})
	}
	return out
}
