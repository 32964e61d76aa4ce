package daemon

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// allocateClaims writes, for each of pod's ResourceClaims, the allocation of the GPUs
// bd places it on and the pod's reservation, before the pod binds: the kubelet then
// prepares exactly those devices. A claim already allocated and reserved for the pod
// as bd places it is left as it is (a bind retried). It returns the claims it allocated,
// for releaseClaims should the bind fail.
func (b *Binder) allocateClaims(ctx context.Context, state *cache.State, pod *corev1.Pod, bd scheduler.Binding) ([]*resourcev1.ResourceClaim, error) {
	names := snapshot.ClaimNames(pod)
	if len(names) == 0 {
		return nil, nil
	}
	gpus := bd.GPUs.Indices()
	var done []*resourcev1.ResourceClaim
	for _, name := range names {
		c := state.Claims[pod.Namespace+"/"+name]
		if c == nil {
			return done, fmt.Errorf("ResourceClaim %s/%s is not in the cache", pod.Namespace, name)
		}
		alloc, rest, err := allocation(c, bd.Node, gpus, state.Devices, bd.Task.GPU.Claim, metav1.NewTime(b.opts.Now()))
		if err != nil {
			return done, fmt.Errorf("ResourceClaim %s/%s: %w", pod.Namespace, name, err)
		}
		gpus = rest
		cp, err := b.reserve(ctx, c, pod, alloc)
		if err != nil {
			return done, err
		}
		if cp != nil {
			done = append(done, cp)
		}
	}
	return done, nil
}

// reserve writes claim c's allocation alloc and its reservation for pod, unless it is
// already allocated and reserved so (a bind retried). It returns the claim as written,
// nil when nothing was written.
func (b *Binder) reserve(ctx context.Context, c *resourcev1.ResourceClaim, pod *corev1.Pod, alloc *resourcev1.AllocationResult) (*resourcev1.ResourceClaim, error) {
	if reservedAs(c, pod, alloc) {
		return nil, nil
	}
	if c.Status.Allocation != nil {
		if others := slices.ContainsFunc(c.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID != pod.UID }); others {
			return nil, fmt.Errorf("ResourceClaim %s/%s is allocated for other pods; pods that share a claim are not placed by Tessera yet", c.Namespace, c.Name)
		}
		// Allocated for this pod elsewhere (a bind that failed and a session that
		// placed it again): released first, as an allocation does not change.
		if err := b.release(ctx, c); err != nil {
			return nil, err
		}
		fresh := &resourcev1.ResourceClaim{}
		if err := b.client.Get(ctx, client.ObjectKeyFromObject(c), fresh); err != nil {
			return nil, err
		}
		c = fresh
	}
	cp := c.DeepCopy()
	if controllerutil.AddFinalizer(cp, resourcev1.Finalizer) {
		if err := b.client.Update(ctx, cp); err != nil {
			return nil, fmt.Errorf("protect ResourceClaim %s/%s from deletion: %w", c.Namespace, c.Name, err)
		}
	}
	cp.Status.Allocation = alloc
	cp.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if err := b.client.Status().Update(ctx, cp); err != nil {
		return nil, fmt.Errorf("allocate ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return cp, nil
}

// allocation decides a claim's allocation on node n: each request of whole GPUs takes
// the next of gpus, a share takes the first with its memory as the device rounds it.
// It returns the GPUs left for the pod's other claims.
func allocation(c *resourcev1.ResourceClaim, n *framework.Node, gpus []int, devs *snapshot.Devices, req *framework.ClaimRequest, now metav1.Time) (*resourcev1.AllocationResult, []int, error) {
	out := &resourcev1.AllocationResult{
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}}}}},
		AllocationTimestamp: &now,
	}
	for _, cfg := range c.Spec.Devices.Config { // the claim's own configuration, which the driver reads here
		out.Devices.Config = append(out.Devices.Config, resourcev1.DeviceAllocationConfiguration{
			Source: resourcev1.AllocationConfigSourceClaim, Requests: cfg.Requests, DeviceConfiguration: cfg.DeviceConfiguration})
	}
	for _, r := range c.Spec.Devices.Requests {
		name, e, err := servedBy(&r, n, gpus, req)
		if err != nil {
			return nil, nil, err
		}
		share, isShare := snapshot.ShareRequestMiB(e)
		count := int(max(e.Count, 1))
		if isShare {
			count = 1
		}
		for range count {
			if len(gpus) == 0 {
				return nil, nil, fmt.Errorf("request %s: the placement has no GPU left for it", r.Name)
			}
			g := &n.GPUs[gpus[0]]
			gpus = gpus[1:]
			if g.Device == "" {
				return nil, nil, fmt.Errorf("request %s: GPU %s on node %s is not published as a device", r.Name, g.UUID, n.Name)
			}
			res := resourcev1.DeviceRequestAllocationResult{Request: name, Driver: tesserav1.DRADriver, Pool: n.Name, Device: g.Device}
			if g.Shareable {
				mib, d := g.MemoryMiB, devs.Of(n.Name, g.UUID)
				switch {
				case isShare && d != nil:
					mib = d.ShareMiB(share)
				case isShare:
					mib = share
				case d != nil:
					mib = d.WholeMiB
				}
				id := types.UID(uuid.NewUUID())
				res.ShareID = &id
				res.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{
					tesserav1.DeviceCapacityMemory: *resource.NewQuantity(mib<<20, resource.BinarySI)}
			}
			out.Devices.Results = append(out.Devices.Results, res)
		}
	}
	return out, gpus, nil
}

// servedBy is the request r as it is allocated, its name in the allocation and what it
// asks: r itself for an exact request; for a firstAvailable request, its subrequest
// (named request/subrequest) of the first alternative that holds the placed GPUs, the
// one the scheduler picked from.
func servedBy(r *resourcev1.DeviceRequest, n *framework.Node, gpus []int, req *framework.ClaimRequest) (string, *resourcev1.ExactDeviceRequest, error) {
	if r.Exactly != nil {
		return r.Name, r.Exactly, nil
	}
	if r.FirstAvailable == nil || req == nil || len(req.Alternatives) != len(r.FirstAvailable) {
		return "", nil, fmt.Errorf("request %s: its subrequests changed since it was placed", r.Name)
	}
	for i, alt := range req.Alternatives {
		if !slices.ContainsFunc(gpus, func(g int) bool { return !alt[n.GPUs[g].UUID] }) {
			sub := &r.FirstAvailable[i]
			return r.Name + "/" + sub.Name, snapshot.ExactOf(sub), nil
		}
	}
	return "", nil, fmt.Errorf("request %s: no subrequest accepts every GPU placed", r.Name)
}

// reservedAs reports whether claim c is already allocated the devices of alloc and
// reserved for pod.
func reservedAs(c *resourcev1.ResourceClaim, pod *corev1.Pod, alloc *resourcev1.AllocationResult) bool {
	a := c.Status.Allocation
	if a == nil || len(a.Devices.Results) != len(alloc.Devices.Results) || len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != pod.UID {
		return false
	}
	for i, r := range a.Devices.Results {
		if w := alloc.Devices.Results[i]; r.Request != w.Request || r.Pool != w.Pool || r.Device != w.Device {
			return false
		}
	}
	return true
}

// release takes a claim's allocation and reservations back and lifts its deletion
// protection: its devices are free again.
func (b *Binder) release(ctx context.Context, c *resourcev1.ResourceClaim) error {
	cp := c.DeepCopy()
	cp.Status.Allocation, cp.Status.ReservedFor = nil, nil
	if err := b.client.Status().Update(ctx, cp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("release ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if controllerutil.RemoveFinalizer(cp, resourcev1.Finalizer) {
		if err := b.client.Update(ctx, cp); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("lift the deletion protection of ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	return nil
}

// releaseEnded releases the claims of Tessera's devices whose every consumer has ended:
// the pods they were reserved for are gone or finished. It returns how many it released.
func (b *Binder) releaseEnded(ctx context.Context, state *cache.State) int {
	n := 0
	for _, c := range state.Claims {
		if !endedClaim(c, state) {
			continue
		}
		if err := b.release(ctx, c); err != nil {
			b.log.Info("releasing a claim failed; retried next session", "claim", c.Namespace+"/"+c.Name, "error", err.Error())
			continue
		}
		n++
	}
	return n
}

// endedClaim reports whether c holds Tessera's devices for consumers that all ended.
func endedClaim(c *resourcev1.ResourceClaim, state *cache.State) bool {
	a := c.Status.Allocation
	if a == nil || len(c.Status.ReservedFor) == 0 ||
		!slices.ContainsFunc(a.Devices.Results, func(r resourcev1.DeviceRequestAllocationResult) bool { return r.Driver == tesserav1.DRADriver }) {
		return false
	}
	for _, r := range c.Status.ReservedFor {
		p := state.Pods[r.UID]
		if r.Resource != "pods" || p != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
	}
	return true
}
