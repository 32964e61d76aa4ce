package snapshot

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// draBuilder is a builder of one node n1 of 4 GPUs published as shareable devices in
// steps of 1Gi, with Tessera's device classes.
func draBuilder() *Builder {
	b := NewBuilder(epoch, Options{DRA: true})
	b.AddNode(testNode("n1").Obj(), gpuNode("n1", 4))
	b.AddResourceSlice(apitest.GPUSlice("n1", 4, 81559, 1024, true, func(i int) string { return uuid("n1", i) }))
	for _, c := range apitest.DeviceClasses() {
		b.AddDeviceClass(c)
	}
	return b
}

func taskOf(t *testing.T, b *Builder, name string) (*framework.Task, []error) {
	t.Helper()
	snap, errs := b.Build()
	for _, j := range snap.Jobs {
		for _, task := range j.Tasks {
			if task.Name == name {
				return task, errs
			}
		}
	}
	return nil, errs
}

func TestClaimGPURequest(t *testing.T) {
	selected := apitest.GPUClaim("selected", "ns", 1, "")
	selected.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: fmt.Sprintf(`device.attributes["%s"].uuid == "%s"`, tesserav1.DRADriver, uuid("n1", 3))}}}
	unknownClass := apitest.GPUClaim("unknown-class", "ns", 1, "")
	unknownClass.Spec.Devices.Requests[0].Exactly.DeviceClassName = "gpu.example.com"
	for _, tc := range []struct {
		name    string
		claim   *resourcev1.ResourceClaim
		extra   func(*apitest.PodWrapper)
		want    framework.GPURequest
		allowed []string
		err     string
	}{
		{name: "whole", claim: apitest.GPUClaim("whole", "ns", 2, ""), want: framework.GPURequest{Count: 2}},
		{name: "share", claim: apitest.GPUClaim("share", "ns", 0, "10000Mi"), want: framework.GPURequest{MemoryMiB: 10240}},
		{name: "selected", claim: selected, want: framework.GPURequest{Count: 1}, allowed: []string{uuid("n1", 3)}},
		{name: "missing", err: "ResourceClaim ns/missing does not exist"},
		{name: "unknown-class", claim: unknownClass, err: `device class "gpu.example.com" does not exist`},
		{name: "both", claim: apitest.GPUClaim("both", "ns", 1, ""), extra: func(w *apitest.PodWrapper) { w.GPU(1) },
			err: "both through resource claims and as extended resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := draBuilder()
			if tc.claim != nil {
				b.AddResourceClaim(tc.claim)
			}
			w := testPod(tc.name, "ns").ResourceClaim("gpu", tc.name)
			if tc.extra != nil {
				tc.extra(w)
			}
			b.AddPod(w.Obj(), 0)
			task, errs := taskOf(t, b, tc.name)
			if tc.err != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err) {
					t.Fatalf("errors %v, want one saying %q", errs, tc.err)
				}
				return
			}
			if len(errs) > 0 || task == nil {
				t.Fatalf("errors %v, task %v", errs, task)
			}
			got := task.GPU
			if got.Claim == nil || got.Count != tc.want.Count || got.MemoryMiB != tc.want.MemoryMiB {
				t.Fatalf("GPU request %+v, want %+v from a claim", got, tc.want)
			}
			if len(got.Claim.Allowed) != len(tc.allowed) || (len(tc.allowed) > 0 && !got.Claim.Allowed[tc.allowed[0]]) {
				t.Errorf("allowed GPUs %v, want %v (nil: all)", got.Claim.Allowed, tc.allowed)
			}
		})
	}
}

// A claim created after its pod is read once it exists: the pod's job is assembled again.
func TestClaimCreatedAfterItsPod(t *testing.T) {
	b := draBuilder().WithMemo(NewMemo())
	b.AddPod(testPod("p", "ns").ResourceClaim("gpu", "p").Obj(), 0)
	if _, errs := taskOf(t, b, "p"); len(errs) != 1 {
		t.Fatalf("errors %v, want the missing claim", errs)
	}
	b.AddResourceClaim(apitest.GPUClaim("p", "ns", 1, ""))
	task, errs := taskOf(t, b, "p")
	if len(errs) > 0 || task == nil || task.GPU.Count != 1 || task.GPU.Claim == nil {
		t.Fatalf("errors %v task %+v, want one GPU through the claim", errs, task)
	}
}

// A job with claims is assembled again when the devices change after it was built: here
// a selector that accepted a GPU of n1 accepts none once n1's slice is published again
// without that GPU.
func TestClaimsFollowPublishedDevices(t *testing.T) {
	b := draBuilder().WithMemo(NewMemo())
	c := apitest.GPUClaim("p", "ns", 1, "")
	c.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: fmt.Sprintf(`device.attributes["%s"].uuid == "%s"`, tesserav1.DRADriver, uuid("n1", 3))}}}
	b.AddResourceClaim(c)
	b.AddPod(testPod("p", "ns").ResourceClaim("gpu", "p").Obj(), 0)
	if task, errs := taskOf(t, b, "p"); len(errs) > 0 || task == nil || task.GPU.Count != 1 {
		t.Fatalf("errors %v task %+v, want one GPU through the claim", errs, task)
	}
	b.AddResourceSlice(apitest.GPUSlice("n1", 3, 81559, 1024, true, func(i int) string { return uuid("n1", i) }))
	if _, errs := taskOf(t, b, "p"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "accept no") {
		t.Fatalf("errors %v, want the claim's selector to accept no device", errs)
	}
}

// Devices that another scheduler allocated count on their GPUs; those of this
// scheduler's bound pods count through the pods' assignments only.
func TestClaimsOfOthersCharged(t *testing.T) {
	b := draBuilder()
	c := apitest.GPUClaim("other", "ns", 0, "40Gi")
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: tesserav1.DRADriver, Pool: "n1", Device: "gpu-1",
		ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{tesserav1.DeviceCapacityMemory: resource.MustParse("40Gi")}}}}}
	b.AddResourceClaim(c)
	snap, errs := b.Build()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	n := snap.Nodes[0]
	for i, g := range n.GPUs {
		want := int64(0)
		if i == 1 {
			want = (40960*framework.MilliPerGPU + 81559 - 1) / 81559
		}
		if g.UsedMilli != want || g.Device != fmt.Sprintf("gpu-%d", i) || !g.Shareable {
			t.Errorf("GPU %d: used %d device %q shareable %v, want used %d, gpu-%d, shareable", i, g.UsedMilli, g.Device, g.Shareable, want, i)
		}
	}
}

// A bound pod whose GPUs came through the claim the scheduler made for its extended
// resources, but that carries no GPU assignment, is placed on the claim's devices and
// counted once: not again as the claim's, not on a GPU picked as the scheduler would.
func TestExtendedResourceClaimPlacesBoundPod(t *testing.T) {
	b := draBuilder()
	p := testPod("p", "ns").GPU(1).RunningOn("n1", epoch).Obj()
	p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-extended-resources-x",
		RequestMappings: []corev1.ContainerExtendedResourceRequest{{ContainerName: apitest.Container, ResourceName: string(tesserav1.ResourceGPU), RequestName: "container-0-request-2"}}}
	b.AddPod(p, 0)
	b.AddResourceClaim(wholeGPUClaimOf(p, "p-extended-resources-x", "container-0-request-2", "gpu-2"))
	onlyDeviceUsed(t, b, "gpu-2")
}

// wholeGPUClaimOf is claim name, allocated device of node n1 for request and reserved
// for pod p.
func wholeGPUClaimOf(p *corev1.Pod, name, request, device string) *resourcev1.ResourceClaim {
	c := apitest.GPUClaim(name, p.Namespace, 1, "")
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: request, Driver: tesserav1.DRADriver, Pool: "n1", Device: device}}}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: p.Name, UID: p.UID}}
	return c
}

// onlyDeviceUsed fails the test unless b's node n1 has device, and only it, in use, whole.
func onlyDeviceUsed(t *testing.T, b *Builder, device string) {
	t.Helper()
	snap, errs := b.Build()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for i, g := range snap.Nodes[0].GPUs {
		want := int64(0)
		if g.Device == device {
			want = framework.MilliPerGPU
		}
		if g.UsedMilli != want {
			t.Errorf("GPU %d (%s): used %d, want %d", i, g.Device, g.UsedMilli, want)
		}
	}
}

// Found by the fault schedule of seed 27: a claim pod ended, the release of its claim
// failed on a conflict (retried next session), and in the meantime a share was bound to
// the GPU that the claim's allocation still named. The claim of an ended pod now holds
// its devices until it is released.
func TestFaultSeed27EndedPodsClaimHoldsItsGPU(t *testing.T) {
	b := draBuilder()
	p := testPod("p", "ns").RunningOn("n1", epoch).Obj()
	p.Status.Phase = corev1.PodSucceeded
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu")}}
	b.AddPod(p, 0)
	b.AddResourceClaim(wholeGPUClaimOf(p, "p-gpu", "gpu", "gpu-3"))
	onlyDeviceUsed(t, b, "gpu-3")
}

// Found by the long fault schedule, seed 32: a pod's claim was made twice by the
// controller (after a fault), both copies allocated and reserved for the pod, and the
// pod's status named only one. The other's GPU was counted neither through the pod nor
// as a claim, and a pod was bound to it. A claim its pod does not name now holds its
// devices.
func TestFaultSeed32ClaimThePodDoesNotNameHoldsItsGPU(t *testing.T) {
	b := draBuilder()
	p := testPod("p", "ns").RunningOn("n1", epoch).Obj()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("whole")}}
	p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu-b")}}
	b.AddPod(p, 0)
	b.AddResourceClaim(wholeGPUClaimOf(p, "p-gpu-a", "gpu", "gpu-3"))
	b.AddResourceClaim(wholeGPUClaimOf(p, "p-gpu-b", "gpu", "gpu-1"))
	snap, errs := b.Build()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, i := range []int{1, 3} {
		if g := snap.Nodes[0].GPUs[i]; g.UsedMilli != framework.MilliPerGPU {
			t.Errorf("GPU %d (%s), allocated to a claim reserved for the pod: used %d, want %d", i, g.Device, g.UsedMilli, framework.MilliPerGPU)
		}
	}
}

// Found by the fault schedule of seed 1: a claim pod whose GPU assignment names another
// GPU than its claim's allocation (left from an earlier placement) had the claim's GPU
// counted as free, and a share was bound to it. A device the assignment does not name
// now holds its GPU.
func TestFaultSeed1ClaimDeviceOutsideTheAssignmentHoldsItsGPU(t *testing.T) {
	b := draBuilder()
	assign := tesserav1.GPUAssignment{Node: "n1", Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container, UUIDs: []string{uuid("n1", 0)}}}}
	p := testPod("p", "ns").RunningOn("n1", epoch).Assignment(assign).Obj()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu")}}
	b.AddPod(p, 0)
	b.AddResourceClaim(wholeGPUClaimOf(p, "p-gpu", "gpu", "gpu-2"))
	snap, errs := b.Build()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if g := snap.Nodes[0].GPUs[2]; g.UsedMilli != framework.MilliPerGPU {
		t.Fatalf("GPU 2 (%s), allocated to the claim: used %d, want %d", g.Device, g.UsedMilli, framework.MilliPerGPU)
	}
}

// A claim's matchAttribute or distinctAttribute constraint reaches the request as each
// GPU's value of the attribute (named with its domain, or, in the driver's domain,
// without); shapes Tessera cannot place as one set are refused, naming the fix.
func TestClaimMatchAttribute(t *testing.T) {
	constrained := func(name string, k resourcev1.DeviceConstraint) *resourcev1.ResourceClaim {
		c := apitest.GPUClaim(name, "ns", 2, "")
		if len(k.Requests) > 0 { // a second request the constraint leaves out
			extra := c.Spec.Devices.Requests[0]
			extra.Name = "other"
			c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, extra)
		}
		c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{k}
		return c
	}
	sharing := resourcev1.FullyQualifiedName(tesserav1.DRADriver + "/" + tesserav1.DeviceAttributeSharing)
	for _, tc := range []struct {
		claim *resourcev1.ResourceClaim
		err   string
	}{
		{claim: constrained("match", resourcev1.DeviceConstraint{MatchAttribute: &sharing})},
		{claim: constrained("distinct", resourcev1.DeviceConstraint{DistinctAttribute: &sharing})},
		{claim: constrained("distinct-some", resourcev1.DeviceConstraint{Requests: []string{apitest.GPUClaim("x", "ns", 1, "").Spec.Devices.Requests[0].Name}, DistinctAttribute: &sharing}), err: "leave requests empty"},
		{claim: constrained("some", resourcev1.DeviceConstraint{Requests: []string{apitest.GPUClaim("x", "ns", 1, "").Spec.Devices.Requests[0].Name}, MatchAttribute: &sharing}), err: "leave requests empty"},
	} {
		b := draBuilder()
		b.AddResourceClaim(tc.claim)
		b.AddPod(testPod(tc.claim.Name, "ns").ResourceClaim("gpu", tc.claim.Name).Obj(), 0)
		task, errs := taskOf(t, b, tc.claim.Name)
		if tc.err != "" {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err) || !strings.Contains(errs[0].Error(), "constraints[0]") {
				t.Errorf("%s: errors %v, want one saying %q", tc.claim.Name, errs, tc.err)
			}
			continue
		}
		if len(errs) > 0 || task == nil || task.GPU.Claim == nil {
			t.Fatalf("%s: errors %v task %+v", tc.claim.Name, errs, task)
		}
		m := task.GPU.Claim.Match
		if tc.claim.Spec.Devices.Constraints[0].DistinctAttribute != nil {
			if len(m) > 0 || len(task.GPU.Claim.Distinct) != 1 {
				t.Fatalf("%s: match %v distinct %v, want one distinct constraint", tc.claim.Name, m, task.GPU.Claim.Distinct)
			}
			m = task.GPU.Claim.Distinct[0]
		}
		if len(m) != 4 || m[uuid("n1", 0)] != "bool:true" || len(task.GPU.Claim.Allowed) != 4 {
			t.Errorf("%s: values %v allowed %v, want the 4 GPUs' sharing attribute", tc.claim.Name, m, task.GPU.Claim.Allowed)
		}
	}
}

// A firstAvailable request reaches the task as one request (the count its subrequests
// all ask) with the GPUs each subrequest accepts, in order; subrequests that ask
// different counts, or a firstAvailable request beside another, are refused.
func TestClaimFirstAvailable(t *testing.T) {
	onlyGPUs := func(is ...int) string {
		var quoted []string
		for _, i := range is {
			quoted = append(quoted, fmt.Sprintf("%q", uuid("n1", i)))
		}
		return fmt.Sprintf(`device.attributes["%s"].%s in [%s]`, tesserav1.DRADriver, tesserav1.DeviceAttributeUUID, strings.Join(quoted, ", "))
	}
	b := draBuilder()
	c := apitest.FirstAvailableClaim("alt", "ns", 2, onlyGPUs(2, 3), "")
	b.AddResourceClaim(c)
	b.AddPod(testPod("alt", "ns").ResourceClaim("gpu", "alt").Obj(), 0)
	task, errs := taskOf(t, b, "alt")
	if len(errs) > 0 || task == nil || task.GPU.Claim == nil {
		t.Fatalf("errors %v task %+v", errs, task)
	}
	alts := task.GPU.Claim.Alternatives
	if task.GPU.Count != 2 || len(alts) != 2 || len(alts[0]) != 2 || !alts[0][uuid("n1", 2)] || len(alts[1]) != 4 {
		t.Errorf("count %d alternatives %v, want 2 GPUs from [2 3], then any of 4", task.GPU.Count, alts)
	}

	mixed := apitest.FirstAvailableClaim("mixed", "ns", 2, onlyGPUs(2, 3), "")
	mixed.Spec.Devices.Requests[0].FirstAvailable[1].Count = 1
	beside := apitest.FirstAvailableClaim("beside", "ns", 1, "")
	beside.Spec.Devices.Requests = append(beside.Spec.Devices.Requests, apitest.GPUClaim("x", "ns", 1, "").Spec.Devices.Requests[0])
	beside.Spec.Devices.Requests[1].Name = "other"
	for _, tc := range []struct {
		claim *resourcev1.ResourceClaim
		err   string
	}{
		{mixed, "firstAvailable[1] (pick-1) asks 1 GPUs where firstAvailable[0] asks 2 GPUs"},
		{beside, "must be the pod's only GPU request"},
	} {
		b := draBuilder()
		b.AddResourceClaim(tc.claim)
		b.AddPod(testPod(tc.claim.Name, "ns").ResourceClaim("gpu", tc.claim.Name).Obj(), 0)
		if _, errs := taskOf(t, b, tc.claim.Name); len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err) {
			t.Errorf("%s: errors %v, want one saying %q", tc.claim.Name, errs, tc.err)
		}
	}
}
