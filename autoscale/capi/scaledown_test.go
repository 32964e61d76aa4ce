package capi_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/capi"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// threeNodes: a MachineDeployment of 3 Machines linked to Nodes a, b, c; a idle for
// two hours with a CPU pod, b and c each busy with an 8-GPU pod.
func threeNodes(t *testing.T, minSize int) *harness {
	h := newHarness(t)
	for _, n := range []string{"a", "b", "c"} {
		h.gpuNode(n, 2*time.Hour, nil)
	}
	h.machineDeployment(minSize, "a", "b", "c")
	h.pod("web", "a", 0)
	h.pod("train-b", "b", 8)
	h.pod("train-c", "c", 8)
	return h
}

// A node idle past idleAfter ends cordoned, drained, its Machine annotated
// cluster.x-k8s.io/delete-machine and the MachineDeployment at 2 replicas instead of 3.
func TestIdleNodeRemovedThroughClusterAPI(t *testing.T) {
	h := threeNodes(t, -1)
	h.policy(tesserav1.ScaleDownPolicySpec{})
	a := h.actuator(env.Client, env.Client)
	h.rounds(a, 1)
	h.expectPhase("a", autoscale.PhaseCandidate)
	h.rounds(a, 1)
	h.expectPhase("a", autoscale.PhaseDraining)
	h.rounds(a, 5)
	h.expectPhase("a", autoscale.PhaseRemoved)
	for _, n := range []string{"b", "c"} {
		h.expectPhase(n, "")
	}
	if h.podExists("web") || !h.podExists("train-b") || !h.podExists("train-c") {
		t.Fatalf("web should be evicted, the others kept; events:\n%s", h.events)
	}
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas, want 2", got)
	}
	if got := h.marked(); !slices.Equal(got, []string{"ms-a"}) {
		t.Fatalf("Machines marked for deletion: %v", got)
	}
	recs := h.status().RecentScaleDowns
	if len(recs) != 1 || recs[0].Node != h.name("a") || recs[0].Machine != h.ns+"/ms-a" || recs[0].GPUs != 8 {
		t.Fatalf("status records %+v", recs)
	}
	if !h.events.Has("ScaledDown " + h.name("a") + ": Empty with 8 GPUs (A100-80GB) removed: Machine " + h.ns + "/ms-a marked cluster.x-k8s.io/delete-machine, MachineDeployment " + h.ns + "/md 3 -> 2") {
		t.Fatalf("events:\n%s", h.events)
	}
	h.rounds(a, 3)
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas after more rounds, want 2", got)
	}
}

// Two clusters: the Nodes and pods in the workload cluster, the Machines in a
// management cluster of their own (a second API server); the node goes the same way,
// and nothing of Cluster API is written to the workload cluster.
func TestSeparateManagementCluster(t *testing.T) {
	h := newHarness(t)
	mgmt := testenv.Start(t, testenv.Options{ExtraCRDDirs: []string{crds}})
	if err := capi.AddToScheme(mgmt.Scheme); err != nil {
		t.Fatal(err)
	}
	h.mc = mgmt.Client
	h.createIn(h.mc, apitest.MakeNamespace(h.ns).Obj())
	for _, n := range []string{"a", "b", "c"} {
		h.gpuNode(n, 2*time.Hour, nil)
	}
	h.machineDeployment(-1, "a", "b", "c")
	h.pod("train-b", "b", 8)
	h.pod("train-c", "c", 8)
	h.policy(tesserav1.ScaleDownPolicySpec{})
	a := h.actuator(env.Client, mgmt.Client)
	h.rounds(a, 7)
	h.expectPhase("a", autoscale.PhaseRemoved)
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment in the management cluster at %d replicas, want 2", got)
	}
	if got := h.marked(); !slices.Equal(got, []string{"ms-a"}) {
		t.Fatalf("Machines marked: %v", got)
	}
	var inWorkload clusterv1.MachineDeploymentList
	if err := env.Client.List(h.ctx, &inWorkload, client.InNamespace(h.ns)); err != nil || len(inWorkload.Items) != 0 {
		t.Fatalf("MachineDeployments in the workload cluster: %v %d", err, len(inWorkload.Items))
	}
}

// A PodDisruptionBudget first keeps the node (the plan sees no disruption allowed),
// then, allowing one, lets it go; a budget used up between plan and drain answers 429,
// which is an event and a retry.
func TestPDBBlocksThenAllows(t *testing.T) {
	h := threeNodes(t, -1)
	pdb := apitest.MakePDB("web", h.ns).MinAvailable(1).MatchLabel("app", "web").Obj()
	h.create(pdb)
	allow := func(n int32) {
		t.Helper()
		// No kube-controller-manager computes the budget: the test does.
		if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			t.Fatal(err)
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: n, CurrentHealthy: 1 + n, DesiredHealthy: 1, ExpectedPods: 1 + n}
		if err := h.c.Status().Update(h.ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	allow(0)
	h.policy(tesserav1.ScaleDownPolicySpec{})
	a := h.actuator(env.Client, env.Client)
	h.rounds(a, 3)
	h.expectPhase("a", "")
	plans, err := actuator.PlanCluster(h.ctx, env.Client, nil, mustPolicy(t), h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d := decision(plans, h.ns, h.name("a")); d.Reason != autoscale.ReasonPDB {
		t.Fatalf("decision on a: %+v", d)
	}
	allow(1)
	h.rounds(a, 2)
	h.expectPhase("a", autoscale.PhaseDraining)
	allow(0)
	h.rounds(a, 2)
	h.expectPhase("a", autoscale.PhaseDraining)
	if !h.podExists("web") || !h.events.Has("EvictionBlocked web: a PodDisruptionBudget allows no disruption now") {
		t.Fatalf("web: exists %v; events:\n%s", h.podExists("web"), h.events)
	}
	allow(1)
	h.rounds(a, 5)
	h.expectPhase("a", autoscale.PhaseRemoved)
	if h.podExists("web") || h.replicas("md") != 2 {
		t.Fatalf("web exists %v, replicas %d", h.podExists("web"), h.replicas("md"))
	}
}

// The MachineDeployment's min-size annotation: at min size 2, of two idle nodes one
// goes and the other stays, whatever maxParallel allows.
func TestMinSizeRespected(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"a", "b", "c"} {
		h.gpuNode(n, 2*time.Hour, nil)
	}
	h.machineDeployment(2, "a", "b", "c")
	h.pod("train-c", "c", 8)
	h.policy(tesserav1.ScaleDownPolicySpec{MaxParallel: 2, Cooldown: &metav1.Duration{}})
	a := h.actuator(env.Client, env.Client)
	h.rounds(a, 12)
	h.expectPhase("a", autoscale.PhaseRemoved)
	h.expectPhase("b", "")
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas, want 2 (its min size)", got)
	}
	if got := h.status().Candidates; len(got) != 0 {
		t.Fatalf("candidates %+v at the min size", got)
	}
}

// fourIdleNodes: a MachineDeployment of min size 1 with 4 Machines linked to Nodes a-d,
// idle for two hours.
func fourIdleNodes(t *testing.T) *harness {
	h := newHarness(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		h.gpuNode(n, 2*time.Hour, nil)
	}
	h.machineDeployment(1, "a", "b", "c", "d")
	return h
}

// Two idle nodes of one MachineDeployment removed at once cost two replicas, not one
// (both Machines were marked at the same replica count), and rounds after the removal
// lower nothing more.
func TestParallelRemovalsLowerOncePerMachine(t *testing.T) {
	h := fourIdleNodes(t)
	h.pod("train-c", "c", 8)
	h.pod("train-d", "d", 8)
	h.policy(tesserav1.ScaleDownPolicySpec{MaxParallel: 2, Cooldown: &metav1.Duration{}})
	a := h.actuator(env.Client, env.Client)
	h.rounds(a, 8)
	h.expectPhase("a", autoscale.PhaseRemoved)
	h.expectPhase("b", autoscale.PhaseRemoved)
	if got := h.marked(); !slices.Equal(got, []string{"ms-a", "ms-b"}) {
		t.Fatalf("Machines marked for deletion: %v", got)
	}
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas, want 2 (4 less the 2 removed)", got)
	}
	h.rounds(a, 4)
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas after more rounds, want 2", got)
	}
}

// Two Machines marked, one Lower: the MachineSet may delete either marked Machine for a
// decrement, so the first Lower covers both marks; the second node's Lower then finds
// its Machine deleted (or covered) and lowers nothing more.
func TestLowerCoversEveryMarkItSees(t *testing.T) {
	h := fourIdleNodes(t)
	p := capi.New(env.Client)
	now := time.Now()
	for _, n := range []string{"a", "b"} {
		if _, err := p.Mark(h.ctx, h.node(n), now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Lower(h.ctx, h.node("b"), now); err != nil {
		t.Fatal(err)
	}
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas after one Lower with two marks, want 2", got)
	}
	// The MachineSet deletes b's Machine first; a's Lower lowers nothing more.
	if err := h.mc.Delete(h.ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "ms-b"}}); err != nil {
		t.Fatal(err)
	}
	if msg, err := p.Lower(h.ctx, h.node("a"), now); err != nil || h.replicas("md") != 2 {
		t.Fatalf("second Lower: %q, %v; MachineDeployment at %d replicas, want 2", msg, err, h.replicas("md"))
	}
}

// The MachineSet deletes any marked Machine for a decrement, and only those it has seen:
// the group is lowered once every mark in it settled, and then for all of them. (Counting
// only settled marks left an older mark uncovered when the MachineSet deleted a younger
// one in its place.)
func TestLowerWaitsForEveryMarkToSettle(t *testing.T) {
	h := fourIdleNodes(t)
	p := capi.New(env.Client)
	t0 := time.Now().Truncate(time.Second)
	if _, err := p.Mark(h.ctx, h.node("a"), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Mark(h.ctx, h.node("b"), t0.Add(8*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lower(h.ctx, h.node("a"), t0.Add(time.Second)); err == nil || !strings.Contains(err.Error(), "once every mark in it has settled") {
		t.Fatalf("a's Lower with b's mark 7s too young: %v, want a wait", err)
	}
	if got := h.replicas("md"); got != 4 {
		t.Fatalf("MachineDeployment at %d replicas while b's mark settles, want 4", got)
	}
	if _, err := p.Lower(h.ctx, h.node("a"), t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lower(h.ctx, h.node("b"), t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas once both marks settled, want 2", got)
	}
}

// pendingGang creates a queue deserving 8 GPUs and an admitted gang of one 8-GPU pod
// in it, waiting.
func (h *harness) pendingGang() {
	h.t.Helper()
	h.create(apitest.MakeQueue(h.ns).Label("test", h.ns).Weight(1).Deserved(tesserav1.ResourceGPU, "8").Obj())
	pg := apitest.MakePodGroup("gang", h.ns).MinMember(1).Queue(h.ns).Obj()
	h.create(pg)
	pg.Status.Phase = tesserav1.PodGroupInqueue
	if err := h.c.Status().Update(h.ctx, pg); err != nil {
		h.t.Fatal(err)
	}
	h.pod("gang-0", "", 8, func(w *apitest.PodWrapper) { w.Group("gang").Queue(h.ns) })
}

// A gang that arrives while the node drains cancels the scale-down before its
// Machine is marked: taint off, uncordoned, the MachineDeployment untouched.
func TestNewPendingGangCancelsTheDrain(t *testing.T) {
	h := threeNodes(t, -1)
	h.policy(tesserav1.ScaleDownPolicySpec{})
	a := h.actuator(env.Client, env.Client)
	h.rounds(a, 2)
	h.expectPhase("a", autoscale.PhaseDraining)
	h.pendingGang()
	h.rounds(a, 1)
	h.expectPhase("a", "")
	if !h.events.Has("ScaleDownCancelled "+h.name("a")) || len(h.marked()) != 0 || h.replicas("md") != 3 {
		t.Fatalf("marked %v, replicas %d; events:\n%s", h.marked(), h.replicas("md"), h.events)
	}
	h.rounds(a, 4)
	h.expectPhase("a", "")
}

// A pending gang within its queue's deserved share keeps the idle nodes it needs.
func TestPendingGangKeepsItsNodes(t *testing.T) {
	h := threeNodes(t, -1)
	h.pendingGang()
	h.policy(tesserav1.ScaleDownPolicySpec{})
	a := h.actuator(env.Client, env.Client)
	h.rounds(a, 6)
	h.expectPhase("a", "")
	if got := h.replicas("md"); got != 3 || len(h.marked()) != 0 {
		t.Fatalf("replicas %d, marked %v", got, h.marked())
	}
	var pol tesserav1.ScaleDownPolicy
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.ns}, &pol); err != nil {
		t.Fatal(err)
	}
	if len(pol.Status.Candidates) != 0 {
		t.Fatalf("candidates %+v", pol.Status.Candidates)
	}
}
