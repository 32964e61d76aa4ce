package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// draNode makes a node of gpus GPUs of 80Gi and publishes them as the node agent does,
// shared in steps of 1Gi; it returns the node's name.
func (h *harness) draNode(name string, gpus int) string {
	h.t.Helper()
	return h.draNodeWith(name, gpus, nil)
}

// draNodeWith is draNode with change applied to the ResourceSlice before it is created.
func (h *harness) draNodeWith(name string, gpus int, change func(*resourcev1.ResourceSlice)) string {
	h.t.Helper()
	h.node(name, gpus, nil)
	node := h.ns + "-" + name
	for _, c := range apitest.DeviceClasses() {
		if err := h.c.Create(h.ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
			h.t.Fatal(err)
		}
	}
	s := apitest.GPUSlice(node, gpus, 81920, 1024, true, func(i int) string { return framework.DerivedGPUUUID(node, i) })
	if change != nil {
		change(s)
	}
	if err := h.c.Create(h.ctx, s); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = env.Client.Delete(h.ctx, s) })
	return node
}

// claimPod creates a claim of count whole GPUs or of a share of memory, and a pod that
// uses it.
func (h *harness) claimPod(w *apitest.PodWrapper, count int64, memory string) *corev1.Pod {
	h.t.Helper()
	p := w.Obj()
	if err := h.c.Create(h.ctx, apitest.GPUClaim(p.Name, h.ns, count, memory)); err != nil {
		h.t.Fatal(err)
	}
	return h.pod(w.ResourceClaim("gpu", p.Name))
}

func (h *harness) claim(name string) *resourcev1.ResourceClaim {
	h.t.Helper()
	return get(h, name, &resourcev1.ResourceClaim{})
}

// get reads the namespace's object name into obj.
func get[T client.Object](h *harness, name string, obj T) T {
	h.t.Helper()
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, obj); err != nil {
		h.t.Fatal(err)
	}
	return obj
}

// allocated describes a claim's allocation: "device" or "device:consumed", joined by
// commas, and "" when it is not allocated.
func allocated(c *resourcev1.ResourceClaim) string {
	if c.Status.Allocation == nil {
		return ""
	}
	var out []string
	for _, r := range c.Status.Allocation.Devices.Results {
		s := r.Device
		if q, ok := r.ConsumedCapacity[tesserav1.DeviceCapacityMemory]; ok {
			s += ":" + q.String()
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// TestDRAWholeGPUsAndShares: Tessera allocates a claim of whole GPUs and claims of
// shares with the exact devices and consumed capacity, reserves them for their pods
// before binding, and places the pods where the allocation says.
func TestDRAWholeGPUsAndShares(t *testing.T) {
	h := newHarness(t)
	node := h.draNode("a", 3)
	h.run(h.daemon(nil))
	h.claimPod(h.makePod("whole"), 2, "")
	h.waitPodBound("two whole GPUs", "whole", 20*time.Second)
	h.claimPod(h.makePod("share-a"), 0, "10Gi")
	h.claimPod(h.makePod("share-b"), 0, "30000Mi")
	h.waitBound("both shares", 3, 20*time.Second)

	whole := h.claim("whole")
	if got := allocated(whole); got != "gpu-0:80Gi,gpu-1:80Gi" && got != "gpu-1:80Gi,gpu-2:80Gi" && got != "gpu-0:80Gi,gpu-2:80Gi" {
		t.Errorf("whole claim allocated %q, want two devices of all their 80Gi", got)
	}
	var shareDevs []string
	for name, want := range map[string]string{"share-a": "10Gi", "share-b": "30Gi"} { // 30000Mi rounded up to the 1Gi step
		c := h.claim(name)
		dev, consumed, _ := strings.Cut(allocated(c), ":")
		if consumed != want {
			t.Errorf("claim %s consumed %q, want %s", name, consumed, want)
		}
		shareDevs = append(shareDevs, dev)
		if len(c.Status.Allocation.Devices.Results) == 1 && c.Status.Allocation.Devices.Results[0].ShareID == nil {
			t.Errorf("claim %s: a share has no shareID", name)
		}
	}
	if shareDevs[0] != shareDevs[1] || strings.Contains(allocated(whole), shareDevs[0]+":") {
		t.Errorf("shares on %v, whole GPUs %s: want both shares on the GPU left free", shareDevs, allocated(whole))
	}
	for _, p := range h.pods() {
		c := h.claim(p.Name)
		if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != p.UID || !slices.Contains(c.Finalizers, resourcev1.Finalizer) {
			t.Errorf("claim %s: reservedFor %v finalizers %v, want its pod and %s", p.Name, c.Status.ReservedFor, c.Finalizers, resourcev1.Finalizer)
		}
		a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil || p.Spec.NodeName != node {
			t.Fatalf("pod %s on %q assignment %v", p.Name, p.Spec.NodeName, err)
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			uuid := framework.DerivedGPUUUID(node, int(r.Device[len("gpu-")]-'0'))
			if !slices.ContainsFunc(a.Containers, func(c tesserav1.ContainerGPUs) bool { return slices.Contains(c.UUIDs, uuid) }) {
				t.Errorf("pod %s: claim device %s (%s) is not in its GPU assignment %v", p.Name, r.Device, uuid, a)
			}
		}
	}
}

// pairedGPUs publishes node with 4 GPUs whose attribute attr is value(0) on GPUs 0-1
// and value(1) on GPUs 2-3, and runs the daemon.
func (h *harness) pairedGPUs(node, attr string, value func(pair int) resourcev1.DeviceAttribute) {
	h.draNodeWith(node, 4, func(s *resourcev1.ResourceSlice) {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Attributes[resourcev1.QualifiedName(attr)] = value(i / 2)
		}
	})
	h.run(h.daemon(nil))
}

// TestDRAMatchAttribute: a claim's matchAttribute constraint gets GPUs of one value of
// the attribute, though other free GPUs would do without it.
func TestDRAMatchAttribute(t *testing.T) {
	h := newHarness(t)
	h.pairedGPUs("a", "nvlinkIsland", func(pair int) resourcev1.DeviceAttribute {
		return resourcev1.DeviceAttribute{IntValue: ptr.To(int64(pair))}
	})
	h.claimPod(h.makePod("one"), 1, "")
	h.waitPodBound("one GPU", "one", 20*time.Second)
	taken := allocated(h.claim("one"))
	island := resourcev1.FullyQualifiedName(tesserav1.DRADriver + "/nvlinkIsland")
	w := h.makePod("pair")
	c := apitest.GPUClaim("pair", h.ns, 2, "")
	c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: &island}}
	if err := h.c.Create(h.ctx, c); err != nil {
		t.Fatal(err)
	}
	h.pod(w.ResourceClaim("gpu", "pair"))
	h.waitPodBound("two GPUs of one island", "pair", 20*time.Second)
	got := allocated(h.claim("pair"))
	want := map[string]string{"gpu-0:80Gi": "gpu-2:80Gi,gpu-3:80Gi", "gpu-1:80Gi": "gpu-2:80Gi,gpu-3:80Gi",
		"gpu-2:80Gi": "gpu-0:80Gi,gpu-1:80Gi", "gpu-3:80Gi": "gpu-0:80Gi,gpu-1:80Gi"}[taken]
	if got != want {
		t.Errorf("with %s taken, the constrained claim got %q, want %q", taken, got, want)
	}
}

// TestDRADistinctAttribute: a claim's distinctAttribute constraint gets GPUs with
// different values of the attribute, here one per NUMA node (GPUs 0-1 on one, 2-3 on
// the other), where the GPUs picked without it share one.
func TestDRADistinctAttribute(t *testing.T) {
	h := newHarness(t)
	h.pairedGPUs("a", "numa", func(pair int) resourcev1.DeviceAttribute {
		return resourcev1.DeviceAttribute{IntValue: ptr.To(int64(pair))}
	})
	numa := resourcev1.FullyQualifiedName(tesserav1.DRADriver + "/numa")
	c := apitest.GPUClaim("spread", h.ns, 2, "")
	c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{DistinctAttribute: &numa}}
	if err := h.c.Create(h.ctx, c); err != nil {
		t.Fatal(err)
	}
	h.pod(h.makePod("spread").ResourceClaim("gpu", "spread"))
	h.waitPodBound("two GPUs of two NUMA nodes", "spread", 20*time.Second)
	if got := allocated(h.claim("spread")); got != "gpu-0:80Gi,gpu-2:80Gi" {
		t.Errorf("the claim with distinct NUMA nodes got %q, want gpu-0 and gpu-2", got)
	}
}

// TestDRAFirstAvailable: a claim's firstAvailable request gets its GPUs from its first
// subrequest while the node can serve it, then from the next, and the allocation names
// the subrequest (request/subrequest) as the kubelet and the driver read it.
func TestDRAFirstAvailable(t *testing.T) {
	h := newHarness(t)
	h.pairedGPUs("a", "tier", func(pair int) resourcev1.DeviceAttribute {
		return resourcev1.DeviceAttribute{StringValue: ptr.To([]string{"standard", "fast"}[pair])}
	})
	fast := fmt.Sprintf(`device.attributes["%s"].tier == "fast"`, tesserav1.DRADriver)
	for i, want := range []string{"gpu/pick-0 gpu-2:80Gi,gpu-3:80Gi", "gpu/pick-1 gpu-0:80Gi,gpu-1:80Gi"} {
		name := fmt.Sprintf("alt-%d", i)
		if err := h.c.Create(h.ctx, apitest.FirstAvailableClaim(name, h.ns, 2, fast, "")); err != nil {
			t.Fatal(err)
		}
		h.pod(h.makePod(name).ResourceClaim("gpu", name))
		h.waitPodBound("two GPUs of the first subrequest that fits", name, 20*time.Second)
		c := h.claim(name)
		if got := c.Status.Allocation.Devices.Results[0].Request + " " + allocated(c); got != want {
			t.Errorf("%s: allocated %q, want %q", name, got, want)
		}
	}
}

// TestDRASharesCountOtherAllocations: shares on one GPU never exceed its memory, counting
// a claim that another scheduler allocated on it.
func TestDRASharesCountOtherAllocations(t *testing.T) {
	h := newHarness(t)
	node := h.draNode("a", 1)
	// A pod kube-scheduler placed, with a claim of 60Gi on the GPU.
	other := h.pod(apitest.MakePod("other", h.ns).NodeName(node).RequestAndLimit(corev1.ResourceCPU, "1"))
	c := apitest.GPUClaim("other", h.ns, 0, "60Gi")
	if err := h.c.Create(h.ctx, c); err != nil {
		t.Fatal(err)
	}
	id := types.UID("8f6f0c3e-5b2a-4a59-9c1e-1d2f3a4b5c6d")
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: tesserav1.DRADriver, Pool: node, Device: "gpu-0", ShareID: &id,
		ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{tesserav1.DeviceCapacityMemory: resource.MustParse("60Gi")}}}}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: other.Name, UID: other.UID}}
	if err := h.c.Status().Update(h.ctx, c); err != nil {
		t.Fatal(err)
	}
	h.run(h.daemon(nil))
	for i := range 3 {
		h.claimPod(h.makePod(fmt.Sprintf("share-%d", i)), 0, "10Gi")
	}
	h.waitBound("the other pod and two shares", 3, 20*time.Second)
	time.Sleep(5 * h.period)
	if n := h.bound(); n != 3 {
		t.Fatalf("%d pods bound, want 3: the third share does not fit beside 60Gi and two of 10Gi", n)
	}
	var total resource.Quantity
	for _, name := range []string{"other", "share-0", "share-1", "share-2"} {
		cl := h.claim(name)
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			total.Add(r.ConsumedCapacity[tesserav1.DeviceCapacityMemory])
		}
	}
	if total.Cmp(resource.MustParse("80Gi")) > 0 {
		t.Errorf("the GPU's claims consume %s, more than its 80Gi", total.String())
	}
}

// TestDRAGangAllOrNothing: a gang whose claims cannot all be satisfied binds no pod and
// leaves no claim allocated.
func TestDRAGangAllOrNothing(t *testing.T) {
	h := newHarness(t)
	h.gangOfThree(h.draNode, func(w *apitest.PodWrapper) { h.claimPod(w, 1, "") })
	for i := range 3 {
		name := fmt.Sprintf("g-%d", i)
		if got := allocated(h.claim(name)); got != "" {
			t.Errorf("claim %s allocated %q for a gang that cannot bind", name, got)
		}
	}
}

// gangOfThree makes a node of two GPUs with node and a gang of three pods of one GPU
// each with pod, runs the scheduler a while and checks that it bound none.
func (h *harness) gangOfThree(node func(name string, gpus int) string, pod func(*apitest.PodWrapper)) {
	h.t.Helper()
	node("a", 2)
	h.podGroup("g", 3, "")
	h.run(h.daemon(nil))
	for i := range 3 {
		pod(h.makePod(fmt.Sprintf("g-%d", i)).Group("g"))
	}
	time.Sleep(20 * h.period)
	if n := h.bound(); n != 0 {
		h.t.Errorf("%d pods of the gang bound, want none", n)
	}
}

// TestDRAClaimReleasedWhenPodEnds: a claim is released (no allocation, no reservation,
// no deletion protection) once its pod has finished, and its GPU serves the next pod.
func TestDRAClaimReleasedWhenPodEnds(t *testing.T) {
	h := newHarness(t)
	h.draNode("a", 1)
	h.run(h.daemon(nil))
	h.claimPod(h.makePod("first"), 1, "")
	h.waitPodBound("first", "first", 20*time.Second)
	h.claimPod(h.makePod("second"), 1, "")
	p := &corev1.Pod{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "first"}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodSucceeded
	p.Status.StartTime = &metav1.Time{Time: time.Now()}
	if err := h.c.Status().Update(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	h.waitPodBound("second, on the GPU the first released", "second", 20*time.Second)
	c := h.claim("first")
	if c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 || slices.Contains(c.Finalizers, resourcev1.Finalizer) {
		t.Errorf("claim of the finished pod: allocation %v reservedFor %v finalizers %v, want released", c.Status.Allocation, c.Status.ReservedFor, c.Finalizers)
	}
}

// TestDRAExplain: tessera explain says why a pod with claims waits: a claim that does
// not exist, and nodes that publish no device its claim accepts.
func TestDRAExplain(t *testing.T) {
	h := newHarness(t)
	h.node("plain", 8, nil) // publishes no ResourceSlice
	for _, c := range apitest.DeviceClasses() {
		if err := h.c.Create(h.ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	h.pod(h.makePod("no-claim").ResourceClaim("gpu", "never-made"))
	h.claimPod(h.makePod("no-device"), 1, "")
	if e := h.explain("pod", h.ns+"/no-claim"); e.Reason != daemon.ReasonLeftOut || !strings.Contains(e.Message, "ResourceClaim "+h.ns+"/never-made does not exist") {
		t.Errorf("missing claim: %s: %s, want %s naming the claim", e.Reason, e.Message, daemon.ReasonLeftOut)
	}
	if e := h.explain("pod", h.ns+"/no-device"); e.State != "Pending" || !strings.Contains(e.Message, framework.FitGPUDevice.String()) {
		t.Errorf("no device: %s %s: %s, want pending with %q", e.State, e.Reason, e.Message, framework.FitGPUDevice.String())
	}
}

// TestDRABindAnswerLost: a bind the API server wrote but whose answer was lost (a
// timeout, a connection cut) is read back: the pod stays bound and its claim allocated
// and reserved for it, instead of released under a bound pod.
func TestDRABindAnswerLost(t *testing.T) {
	h := newHarness(t)
	h.draNode("a", 1)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	lost := interceptor.NewClient(c, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if err := c.SubResource(sub).Create(ctx, obj, subObj, opts...); err != nil || sub != "binding" {
				return err
			}
			return errors.New("http2: client connection lost")
		},
	})
	p := h.claimPod(h.makePod("lost"), 0, "10Gi")
	if _, err := h.daemon(lost).RunOnce(h.ctx); err != nil {
		t.Fatal(err)
	}
	bound := &corev1.Pod{}
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(p), bound); err != nil || bound.Spec.NodeName == "" {
		t.Fatalf("pod not bound (%v)", err)
	}
	cl := h.claim("lost")
	if allocated(cl) == "" || len(cl.Status.ReservedFor) != 1 || cl.Status.ReservedFor[0].UID != bound.UID {
		t.Errorf("claim allocated %q reserved for %v after a bind whose answer was lost; want it kept for its bound pod", allocated(cl), cl.Status.ReservedFor)
	}
}
