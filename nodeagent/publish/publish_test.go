package publish

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

func publisher(t *testing.T, node string) (*Publisher, context.Context) {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	ctx := testenv.Context(t, 30*time.Second)
	if err := env.Client.Create(ctx, apitest.MakeNode(node).Obj()); err != nil {
		t.Fatal(err)
	}
	return &Publisher{Kube: kubernetes.NewForConfigOrDie(env.Config), Dynamic: dynamic.NewForConfigOrDie(env.Config), NodeName: node}, ctx
}

func TestGPUNodeAppliedWithOwnerAndStatus(t *testing.T) {
	p, ctx := publisher(t, "gpu-node-a")
	status := tesserav1.GPUNodeStatus{
		Devices: []tesserav1.GPUDevice{
			{Index: 0, UUID: "GPU-0a", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, NUMANode: 0, PCIBusID: "0000:18:00.0", Healthy: true},
			{Index: 1, UUID: "GPU-0b", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, NUMANode: 1, Healthy: false, UnhealthyReason: "Xid 79 critical error", Island: 0},
		},
		Links:         []tesserav1.GPULink{{A: 0, B: 1, NVLinks: 18, PCIe: tesserav1.PCIeCrossCPU}},
		DriverVersion: "550.54.15", CUDAVersion: "12.4", SharesPerGPU: 4,
		Conditions: []metav1.Condition{{Type: tesserav1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "GPUUnhealthy", Message: "GPU 1: Xid 79"}},
	}
	if err := p.GPUNode(ctx, status); err != nil {
		t.Fatal(err)
	}
	var gn tesserav1.GPUNode
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-node-a"}, &gn); err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-node-a"}, &node); err != nil {
		t.Fatal(err)
	}
	if len(gn.OwnerReferences) != 1 || gn.OwnerReferences[0].Kind != "Node" || gn.OwnerReferences[0].UID != node.UID {
		t.Fatalf("owner references = %+v, want the Node %s", gn.OwnerReferences, node.UID)
	}
	managers := map[string]bool{}
	for _, mf := range gn.ManagedFields {
		managers[mf.Manager+"/"+string(mf.Operation)+"/"+mf.Subresource] = true
	}
	if !managers[FieldManager+"/Apply/"] || !managers[FieldManager+"/Apply/status"] {
		t.Fatalf("managed fields %v, want server-side apply by %s on the object and its status", managers, FieldManager)
	}
	if len(gn.Status.Devices) != 2 || gn.Status.Devices[1].Healthy || gn.Status.Devices[1].UnhealthyReason == "" ||
		gn.Status.Links[0].NVLinks != 18 || gn.Status.DriverVersion != "550.54.15" || gn.Status.SharesPerGPU != 4 {
		t.Fatalf("status = %+v", gn.Status)
	}
	c := meta.FindStatusCondition(gn.Status.Conditions, tesserav1.ConditionHealthy)
	if c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Healthy condition = %+v", c)
	}
	first := c.LastTransitionTime

	// A restarted agent (new Publisher) keeps the transition time of an unchanged condition
	// and the status reflects the new sample.
	time.Sleep(1100 * time.Millisecond) // condition times have second precision
	p2 := &Publisher{Kube: p.Kube, Dynamic: p.Dynamic, NodeName: p.NodeName}
	status.Devices = status.Devices[:1]
	status.Links = nil
	if err := p2.GPUNode(ctx, status); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-node-a"}, &gn); err != nil {
		t.Fatal(err)
	}
	c = meta.FindStatusCondition(gn.Status.Conditions, tesserav1.ConditionHealthy)
	if !c.LastTransitionTime.Equal(&first) {
		t.Fatalf("lastTransitionTime moved from %v to %v without a status change", first, c.LastTransitionTime)
	}
	if len(gn.Status.Devices) != 1 || len(gn.Status.Links) != 0 {
		t.Fatalf("after re-apply: %d devices, %d links; want 1 and 0", len(gn.Status.Devices), len(gn.Status.Links))
	}
	status.Conditions[0].Status, status.Conditions[0].Reason = metav1.ConditionTrue, "AllGPUsHealthy"
	if err := p2.GPUNode(ctx, status); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-node-a"}, &gn); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(gn.Status.Conditions, tesserav1.ConditionHealthy); c.Status != metav1.ConditionTrue || !first.Before(&c.LastTransitionTime) {
		t.Fatalf("after recovery condition = %+v", c)
	}
}

func TestNodeLabelsAndGPUMemory(t *testing.T) {
	p, ctx := publisher(t, "gpu-node-b")
	if err := p.Node(ctx, NodeFields{Model: "NVIDIA A100-SXM4-80GB", Count: 8, MemoryMiB: 8 * 81920, AllocatableMiB: 7 * 81920}); err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-node-b"}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[tesserav1.LabelGPUModel] != "NVIDIA-A100-SXM4-80GB" || node.Labels[tesserav1.LabelGPUCount] != "8" {
		t.Fatalf("labels = %v", node.Labels)
	}
	capacity, allocatable := node.Status.Capacity[tesserav1.ResourceGPUMemory], node.Status.Allocatable[tesserav1.ResourceGPUMemory]
	if capacity.Value() != 8*81920 || allocatable.Value() != 7*81920 {
		t.Fatalf("gpu-memory capacity %s allocatable %s", capacity.String(), allocatable.String())
	}
	// The kubelet's own capacity entries are left alone.
	node.Status.Capacity[corev1.ResourceCPU] = *resourceQuantity("16")
	if err := env.Client.Status().Update(ctx, &node); err != nil {
		t.Fatal(err)
	}
	// No GPUs left: the labels go; the capacity drops to zero.
	if err := p.Node(ctx, NodeFields{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gpu-node-b"}, &node); err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Labels[tesserav1.LabelGPUModel]; ok {
		t.Fatalf("labels = %v, want the model label removed", node.Labels)
	}
	capacity = node.Status.Capacity[tesserav1.ResourceGPUMemory]
	cpu := node.Status.Capacity[corev1.ResourceCPU]
	if capacity.Value() != 0 || cpu.String() != "16" {
		t.Fatalf("capacity = %v", node.Status.Capacity)
	}
}

func TestMissingNodeIsNotCreated(t *testing.T) {
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	ctx := testenv.Context(t, 30*time.Second)
	p := &Publisher{Kube: kubernetes.NewForConfigOrDie(env.Config), Dynamic: dynamic.NewForConfigOrDie(env.Config), NodeName: "no-such-node"}
	if err := p.Node(ctx, NodeFields{Model: "x", Count: 1}); err == nil {
		t.Fatal("Node on a missing node: no error")
	}
	if err := p.GPUNode(ctx, tesserav1.GPUNodeStatus{}); err == nil {
		t.Fatal("GPUNode for a missing node: no error")
	}
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "no-such-node"}, &node); err == nil {
		t.Fatal("the publisher created a Node")
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA A100-SXM4-80GB":   "NVIDIA-A100-SXM4-80GB",
		"NVIDIA H100 80GB HBM3":   "NVIDIA-H100-80GB-HBM3",
		"Tesla V100 (PCIe) 16GB ": "Tesla-V100--PCIe--16GB",
		"":                        "",
	} {
		if got := LabelValue(in); got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func resourceQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
