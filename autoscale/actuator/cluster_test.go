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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// gpuNode is a node of 8 A100-80GB GPUs, 64 CPUs, 512Gi and 110 pods.
func gpuNode(name string, created time.Time) *corev1.Node {
	return apitest.MakeNode(name).Created(created).GPUs(8, "A100-80GB", 81920).
		Allocatable(corev1.ResourceCPU, "64").Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110").Obj()
}

// TestPlanCluster plans from API objects: a node long idle by its GPUNode is a
// candidate, one without a GPUNode is not ready, one whose pod a PDB protects stays.
func TestPlanCluster(t *testing.T) {
	now := testutil.Epoch.Add(24 * time.Hour)
	long := now.Add(-2 * time.Hour)
	pdbPod := apitest.MakePod("api", "web").Label("app", "api").ControlledBy("Job", "api").
		NodeName("gpu-c").SchedulerName("default-scheduler").CPU("1").Phase(corev1.PodRunning).Obj()
	objs := []client.Object{
		gpuNode("gpu-a", long), gpuNode("gpu-b", long), gpuNode("gpu-c", long),
		apitest.MakeGPUNode("gpu-a").LastActive(long).Obj(), apitest.MakeGPUNode("gpu-c").LastActive(long).Obj(),
		pdbPod, apitest.MakePDB("api-pdb", "web").MatchLabel("app", "api").Obj(),
		&tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: tesserav1.ScaleDownPolicySpec{DryRun: true}},
	}
	plans := planCluster(t, now, objs...)
	if len(plans) != 1 || len(plans[0].Nodes) != 3 || !plans[0].DryRun {
		t.Fatalf("plans: %+v", plans)
	}
	got := decisions(plans[0])
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

// TestPlanClusterCooldownAfterNodeJoins: a node that joined within the cooldown holds
// scale-down back, as one the policy does not cover or one "created" after the
// planner's clock does not.
func TestPlanClusterCooldownAfterNodeJoins(t *testing.T) {
	now := testutil.Epoch.Add(24 * time.Hour)
	long := now.Add(-2 * time.Hour)
	cpuNode := apitest.MakeNode("cpu-a").Created(now.Add(-time.Minute)).Allocatable(corev1.ResourceCPU, "64").Obj()
	cpuNode.Labels = map[string]string{"pool": "cpu"}
	objs := []client.Object{
		gpuNode("gpu-a", long), apitest.MakeGPUNode("gpu-a").LastActive(long).Obj(),
		gpuNode("gpu-late", now.Add(time.Hour)), cpuNode,
		&tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: tesserav1.ScaleDownPolicySpec{DryRun: true,
			NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpDoesNotExist}}}}},
	}
	autoscaletest.Expect(t, decisions(planCluster(t, now, objs...)[0])["gpu-a"], true, "", "Empty for 2h0m0s")

	objs = append(objs, gpuNode("gpu-new", now.Add(-4*time.Minute)))
	autoscaletest.Expect(t, decisions(planCluster(t, now, objs...)[0])["gpu-a"], false, autoscale.ReasonCooldown,
		"cooldown after a node joined the cluster until 2026-01-02T00:06:00Z")
}

// planCluster plans with the tessera profile over objs, read through a fake client.
func planCluster(t *testing.T, now time.Time, objs ...client.Object) []*autoscale.Plan {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := tesserav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	_ = policyv1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := actuator.PlanCluster(context.Background(), c, nil, cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	return plans
}

// decisions are a plan's decisions by node.
func decisions(p *autoscale.Plan) map[string]autoscale.Decision {
	out := map[string]autoscale.Decision{}
	for _, d := range p.Nodes {
		out[d.Node] = d
	}
	return out
}
