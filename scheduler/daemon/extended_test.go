package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// extendedNode is draNode with a kubelet of 1.37, where the scheduler's default (auto)
// gives pods asking GPUs as extended resources a claim of its own making.
func (h *harness) extendedNode(name string, gpus int) string {
	h.t.Helper()
	node := h.draNode(name, gpus)
	n := &corev1.Node{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: node}, n); err != nil {
		h.t.Fatal(err)
	}
	n.Status.NodeInfo.KubeletVersion = "v1.37.2"
	if err := h.c.Status().Update(h.ctx, n); err != nil {
		h.t.Fatal(err)
	}
	h.eventually("the node's kubelet version and devices in the scheduler's cache", 10*time.Second, func() string {
		var rs resourcev1.ResourceSliceList
		if err := h.cache.Get(h.ctx, client.ObjectKey{Name: node}, n); err != nil || n.Status.NodeInfo.KubeletVersion == "" {
			return fmt.Sprintf("node %q (%v)", n.Status.NodeInfo.KubeletVersion, err)
		}
		if err := h.cache.List(h.ctx, &rs); err != nil || !hasPool(rs.Items, node) {
			return fmt.Sprintf("no slice of %s (%v)", node, err)
		}
		return ""
	})
	return node
}

func hasPool(s []resourcev1.ResourceSlice, pool string) bool {
	return slices.ContainsFunc(s, func(s resourcev1.ResourceSlice) bool { return s.Spec.Pool.Name == pool })
}

// extendedClaims lists the namespace's claims made for pods' extended resources.
func (h *harness) extendedClaims() []resourcev1.ResourceClaim {
	h.t.Helper()
	var l resourcev1.ResourceClaimList
	if err := h.c.List(h.ctx, &l, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	return slices.DeleteFunc(l.Items, func(c resourcev1.ResourceClaim) bool {
		return c.Annotations[resourcev1.ExtendedResourceClaimAnnotation] != "true"
	})
}

func (h *harness) getPod(name string) *corev1.Pod {
	h.t.Helper()
	return get(h, name, &corev1.Pod{})
}

// extendedPod starts a scheduler on a node of gpus GPUs that claims carry, creates the
// pod w builds, asking resource, and returns it once bound, with its claim (claimOf).
func (h *harness) extendedPod(gpus int, w *apitest.PodWrapper, resource corev1.ResourceName) (*corev1.Pod, *resourcev1.ResourceClaim) {
	h.t.Helper()
	h.extendedNode("a", gpus)
	h.run(h.daemon(nil))
	name := h.pod(w).Name
	h.waitPodBound(name, name, 20*time.Second)
	p := h.getPod(name)
	// Requests sorted by name: cpu, memory, then the GPU resource.
	return p, h.claimOf(p, resource, "container-0-request-2")
}

// claimOf checks that pod carries its GPUs in one claim the scheduler made for it,
// allocated the devices of its GPU assignment, reserved for it and named in its status
// with mappings of its container's resource to request; it returns the claim.
func (h *harness) claimOf(p *corev1.Pod, resource corev1.ResourceName, request string) *resourcev1.ResourceClaim {
	h.t.Helper()
	st := p.Status.ExtendedResourceClaimStatus
	if st == nil {
		h.t.Fatalf("pod %s: no status.extendedResourceClaimStatus", p.Name)
	}
	want := []corev1.ContainerExtendedResourceRequest{{ContainerName: apitest.Container, ResourceName: string(resource), RequestName: request}}
	if !slices.Equal(st.RequestMappings, want) {
		h.t.Errorf("pod %s: request mappings %v, want %v", p.Name, st.RequestMappings, want)
	}
	c := h.claim(st.ResourceClaimName)
	ref := c.OwnerReferences
	if len(ref) != 1 || ref[0].UID != p.UID || ref[0].Kind != "Pod" || ref[0].Controller == nil || !*ref[0].Controller {
		h.t.Errorf("claim %s: owner references %v, want its pod as controller", c.Name, ref)
	}
	if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != p.UID || !slices.Contains(c.Finalizers, resourcev1.Finalizer) {
		h.t.Errorf("claim %s: reservedFor %v finalizers %v, want its pod and %s", c.Name, c.Status.ReservedFor, c.Finalizers, resourcev1.Finalizer)
	}
	a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
	if err != nil || c.Status.Allocation == nil {
		h.t.Fatalf("pod %s: assignment %v, claim allocation %v", p.Name, err, c.Status.Allocation)
	}
	var devs []string
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Request != request || r.Pool != p.Spec.NodeName {
			h.t.Errorf("claim %s: result %s/%s for request %s, want request %s on the pod's node", c.Name, r.Pool, r.Device, r.Request, request)
		}
		devs = append(devs, framework.DerivedGPUUUID(p.Spec.NodeName, int(r.Device[len("gpu-")]-'0')))
	}
	if len(a.Containers) != 1 || !slices.Equal(devs, a.Containers[0].UUIDs) {
		h.t.Errorf("pod %s: claim devices %v, GPU assignment %v: want the GPUs the scheduler chose", p.Name, devs, a)
	}
	return c
}

// TestDRAExtendedResourceWholeGPU: a pod asking tessera.dev/gpu on a node whose GPUs are
// DRA devices gets a claim the scheduler makes (named and mapped as kube-scheduler
// names them), allocated the GPU it chose, and is bound; its GPU counts once, so that a
// second pod takes the other GPU and a third waits.
func TestDRAExtendedResourceWholeGPU(t *testing.T) {
	h := newHarness(t)
	_, first := h.extendedPod(2, h.makePod("first").GPU(1), tesserav1.ResourceGPU)
	e := first.Spec.Devices.Requests[0].Exactly
	if len(first.Spec.Devices.Requests) != 1 || e.DeviceClassName != tesserav1.DeviceClassGPU || e.Count != 1 || e.Capacity != nil {
		t.Errorf("claim requests %+v, want one of 1 %s", first.Spec.Devices.Requests, tesserav1.DeviceClassGPU)
	}
	if first.GenerateName != "first-extended-resources-" {
		t.Errorf("claim generateName %q", first.GenerateName)
	}
	h.pod(h.makePod("second").GPU(1))
	h.waitPodBound("second, on the other GPU", "second", 20*time.Second)
	second := h.claimOf(h.getPod("second"), tesserav1.ResourceGPU, "container-0-request-2")
	if allocated(first) == allocated(second) {
		t.Errorf("both pods' claims allocated %s", allocated(first))
	}
	h.pod(h.makePod("third").GPU(1))
	time.Sleep(10 * h.period)
	if p := h.getPod("third"); p.Spec.NodeName != "" {
		t.Errorf("third pod bound to %s: both GPUs are taken", p.Spec.NodeName)
	}
	if n := len(h.extendedClaims()); n != 2 {
		t.Errorf("%d extended-resource claims, want 2", n)
	}
}

// TestDRAExtendedResourceShare: a pod asking tessera.dev/gpu-memory gets a share of the
// share class, its memory consumed on the device; once the pod has finished the claim
// is released.
func TestDRAExtendedResourceShare(t *testing.T) {
	h := newHarness(t)
	p, c := h.extendedPod(1, h.makePod("share").GPUMemory(10240), tesserav1.ResourceGPUMemory)
	e := c.Spec.Devices.Requests[0].Exactly
	if q := e.Capacity.Requests[tesserav1.DeviceCapacityMemory]; e.DeviceClassName != tesserav1.DeviceClassGPUShare || q.Cmp(resource.MustParse("10Gi")) != 0 {
		t.Errorf("claim request %+v, want a share of 10Gi of %s", e, tesserav1.DeviceClassGPUShare)
	}
	if got := allocated(c); got != "gpu-0:10Gi" || c.Status.Allocation.Devices.Results[0].ShareID == nil {
		t.Errorf("claim allocated %q, want gpu-0:10Gi with a shareID", got)
	}
	p.Status.Phase = corev1.PodSucceeded
	if err := h.c.Status().Update(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	h.eventually("the finished pod's claim released", 20*time.Second, func() string {
		c := h.claim(c.Name)
		if c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 || slices.Contains(c.Finalizers, resourcev1.Finalizer) {
			return fmt.Sprintf("allocation %q reservedFor %v finalizers %v", allocated(c), c.Status.ReservedFor, c.Finalizers)
		}
		return ""
	})
}

// TestDRAExtendedResourceGangAllOrNothing: a gang that cannot bind whole makes no claim.
func TestDRAExtendedResourceGangAllOrNothing(t *testing.T) {
	h := newHarness(t)
	h.gangOfThree(h.extendedNode, func(w *apitest.PodWrapper) { h.pod(w.GPU(1)) })
	for _, c := range h.extendedClaims() {
		t.Errorf("claim %s made (allocated %q) for a gang that cannot bind", c.Name, allocated(&c))
	}
}

// TestDRAExtendedResourceBindFails: a bind that fails deletes the claim made for it;
// one whose claim could not be deleted is bound with that claim on the next try,
// never with a second.
func TestDRAExtendedResourceBindFails(t *testing.T) {
	h := newHarness(t)
	h.extendedNode("a", 1)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var keep bool
	failing := interceptor.NewClient(c, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if sub == "binding" {
				return errors.New("binding refused")
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*resourcev1.ResourceClaim); ok && keep {
				return errors.New("delete refused")
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	h.pod(h.makePod("p").GPU(1))
	d := h.daemon(failing)
	if _, err := d.RunOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	if cs := h.extendedClaims(); len(cs) != 0 || h.bound() != 0 {
		t.Fatalf("after a failed bind: %d claims, %d pods bound; want none", len(cs), h.bound())
	}
	keep = true
	if _, err := d.RunOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	cs := h.extendedClaims()
	if len(cs) != 1 || allocated(&cs[0]) != "" {
		t.Fatalf("after a failed bind whose claim stays: %d claims, want one, released", len(cs))
	}
	h.eventually("the claim in the scheduler's cache", 10*time.Second, func() string {
		var l resourcev1.ResourceClaimList
		if err := h.cache.List(h.ctx, &l, client.InNamespace(h.ns)); err != nil || len(l.Items) != 1 {
			return fmt.Sprintf("%d claims cached (%v)", len(l.Items), err)
		}
		return ""
	})
	if _, err := h.daemon(nil).RunOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	p := h.getPod("p")
	if p.Spec.NodeName == "" {
		t.Fatal("pod not bound")
	}
	if c := h.claimOf(p, tesserav1.ResourceGPU, "container-0-request-2"); c.UID != cs[0].UID || len(h.extendedClaims()) != 1 {
		t.Errorf("pod bound with claim %s, want the one left from the failed bind (%s) and no other", c.Name, cs[0].Name)
	}
}

// TestDRAExtendedResourceOff: with the mode off, or on a node whose kubelet predates
// DRAExtendedResource's GA (auto), the device plugin delivers the GPUs: no claim.
func TestDRAExtendedResourceOff(t *testing.T) {
	h := newHarness(t)
	h.draNode("old-kubelet", 1)
	h.run(h.daemon(nil))
	h.pod(h.makePod("p").GPU(1))
	h.waitPodBound("p", "p", 20*time.Second)
	if p := h.getPod("p"); p.Status.ExtendedResourceClaimStatus != nil || len(h.extendedClaims()) > 0 || p.Annotations[tesserav1.AnnotationGPUAssign] == "" {
		t.Errorf("pod on a node of an older kubelet: status %v, %d claims; want its GPU assignment only", p.Status.ExtendedResourceClaimStatus, len(h.extendedClaims()))
	}
}
