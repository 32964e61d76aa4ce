package actuator_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"
	"github.com/tessera-gpu/tessera/autoscale/autoscaletest"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func gpuNode(name string, created time.Time) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), tesserav1.ResourceGPU: resource.MustParse("8"),
		tesserav1.ResourceGPUMemory: *resource.NewQuantity(8*81920, resource.DecimalSI)}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{tesserav1.LabelGPUModel: "A100-80GB"}},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res}}
}

// TestPlanCluster plans from API objects: a node long idle by its GPUNode is a
// candidate, one without a GPUNode is not ready, one whose pod a PDB protects stays.
func TestPlanCluster(t *testing.T) {
	now := testutil.Epoch.Add(24 * time.Hour)
	long := metav1.NewTime(now.Add(-2 * time.Hour))
	yes := true
	pdbPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "api", Labels: map[string]string{"app": "api"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "api", Controller: &yes}}}}
	pdbPod.Spec.NodeName, pdbPod.Spec.SchedulerName = "gpu-c", "default-scheduler"
	pdbPod.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	pdbPod.Status.Phase = corev1.PodRunning
	objs := []client.Object{
		gpuNode("gpu-a", long.Time), gpuNode("gpu-b", long.Time), gpuNode("gpu-c", long.Time),
		&tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "gpu-a"}, Status: tesserav1.GPUNodeStatus{LastActiveTime: &long}},
		&tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "gpu-c"}, Status: tesserav1.GPUNodeStatus{LastActiveTime: &long}},
		pdbPod, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "api-pdb"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}},
		&tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: tesserav1.ScaleDownPolicySpec{DryRun: true}},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := tesserav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	_ = policyv1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	cfg, err := scheduler.Policy("tessera")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := actuator.PlanCluster(context.Background(), c, nil, cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || len(plans[0].Nodes) != 3 || !plans[0].DryRun {
		t.Fatalf("plans: %+v", plans)
	}
	got := map[string]autoscale.Decision{}
	for _, d := range plans[0].Nodes {
		got[d.Node] = d
	}
	autoscaletest.Expect(t, got["gpu-a"], true, "", "Empty for 2h0m0s")
	autoscaletest.Expect(t, got["gpu-b"], false, autoscale.ReasonNotReady, "no GPUNode")
	autoscaletest.Expect(t, got["gpu-c"], false, autoscale.ReasonPDB, "PodDisruptionBudget web/api-pdb allows 0 disruptions")
	var out bytes.Buffer
	if err := plans[0].WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ScaleDownPolicy gpus (dryRun: reports only)", "gpu-a  8 x A100-80GB  yes", "gpu-b  8 x A100-80GB  no         GPUsNotReady"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}
