package capi_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"

	"github.com/tessera-gpu/tessera/internal/controller"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/autoscaletest"
	"github.com/tessera-gpu/tessera/autoscale/capi"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var (
	env *testenv.Env
	// crds is the directory of Cluster API's CRDs.
	crds string
)

// TestMain starts one API server with Tessera's and Cluster API's CRDs (hack/capi-crds.sh
// copies the latter from the module proxy), and the workload kinds whose objects size
// gangs (hack/workload-crds.sh, the Workload API), which the autoscaler watches as the
// scheduler does. Nothing runs Cluster API's controllers:
// the tests create the MachineDeployments, MachineSets and Machines themselves.
func TestMain(m *testing.M) {
	root, err := testenv.RepoRoot()
	var dir []byte
	if err == nil {
		dir, err = exec.Command(filepath.Join(root, "hack", "capi-crds.sh")).Output()
	}
	if err != nil {
		testenv.MainWithout(m, fmt.Errorf("the Cluster API CRDs (hack/capi-crds.sh): %w", err))
	}
	crds = strings.TrimSpace(string(dir))
	testenv.Main(m, testenv.Options{ExtraCRDDirs: []string{crds}, WorkloadCRDs: true, WorkloadAPI: true}, func(e *testenv.Env) {
		if err := capi.AddToScheme(e.Scheme); err != nil {
			panic(err)
		}
		env = e
	})
}

// harness is one test's namespace: GPU nodes, each the Node of a Machine of one
// MachineDeployment, a ScaleDownPolicy selecting them, and the actuator on a fake clock.
type harness struct {
	t   *testing.T
	ctx context.Context
	c   client.Client // workload cluster
	// mc is the management cluster, where the Machines live; c unless a test sets it.
	mc     client.Client
	ns     string
	nodes  []string
	clock  *clocktesting.FakeClock
	events *autoscaletest.Recorder
	md     *clusterv1.MachineDeployment
	ms     *clusterv1.MachineSet
}

var namespaces atomic.Int32

// joinedBefore is how long before the harness's clock starts its nodes joined the
// cluster: the API server stamps them now, and the cooldown after a node joins must
// not hold back the scale-downs the tests watch.
const joinedBefore = time.Hour

func newHarness(t *testing.T) *harness {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	h := &harness{t: t, ctx: testenv.Context(t, 3*time.Minute), c: env.Client, mc: env.Client, ns: "as-" + strconv.Itoa(int(namespaces.Add(1))),
		clock: clocktesting.NewFakeClock(time.Now().Add(joinedBefore)), events: &autoscaletest.Recorder{}}
	if err := h.c.Create(h.ctx, apitest.MakeNamespace(h.ns).Obj()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.cleanup)
	return h
}

// cleanup removes the test's cluster-scoped objects, so that tests share the API server.
func (h *harness) cleanup() {
	ctx := context.Background()
	for _, n := range h.nodes {
		_ = h.c.Delete(ctx, apitest.MakeNode(n).Obj())
		_ = h.c.Delete(ctx, apitest.MakeGPUNode(n).Obj())
	}
	_ = h.c.Delete(ctx, &tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.ns}})
	_ = h.c.DeleteAllOf(ctx, &tesserav1.Queue{}, client.MatchingLabels{"test": h.ns})
}

// name is the cluster-wide name of the test's object n.
func (h *harness) name(n string) string { return h.ns + "-" + n }

// gpuNode creates an 8-GPU node whose GPUs were last active idleFor ago.
func (h *harness) gpuNode(n string, idleFor time.Duration, annotations map[string]string) *corev1.Node {
	h.t.Helper()
	name := h.name(n)
	w := apitest.MakeNode(name).Label("test", h.ns).GPUs(8, "A100-80GB", 81920).Allocatable(corev1.ResourceCPU, "64").
		Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110").Ready()
	for k, v := range annotations {
		w.Annotation(k, v)
	}
	node := w.Obj()
	h.nodes = append(h.nodes, name)
	if err := testenv.CreateNode(h.ctx, h.c, node); err != nil {
		h.t.Fatal(err)
	}
	gn := apitest.MakeGPUNode(name).Obj()
	h.create(gn)
	last := metav1.NewTime(h.clock.Now().Add(-idleFor))
	gn.Status = tesserav1.GPUNodeStatus{LastActiveTime: &last, ObservedTime: &last}
	if err := h.c.Status().Update(h.ctx, gn); err != nil {
		h.t.Fatal(err)
	}
	return node
}

func (h *harness) create(o client.Object) {
	h.t.Helper()
	h.createIn(h.c, o)
}

func (h *harness) createIn(c client.Client, o client.Object) {
	h.t.Helper()
	if err := c.Create(h.ctx, o); err != nil {
		h.t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

// machineDeployment creates MachineDeployment md with its MachineSet ms and one Machine
// per node, linked by status.nodeRef (the first through the Node's annotations only).
// minSize < 0: no min-size annotation.
func (h *harness) machineDeployment(minSize int, nodes ...string) {
	h.t.Helper()
	ann := map[string]string{}
	if minSize >= 0 {
		ann[clusterv1.AutoscalerMinSizeAnnotation] = strconv.Itoa(minSize)
	}
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}
	tmpl := clusterv1.MachineTemplateSpec{ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"pool": "gpu"}}, Spec: h.machineSpec()}
	h.md = &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "md", Annotations: ann},
		Spec: clusterv1.MachineDeploymentSpec{ClusterName: "c", Replicas: ptr.To(int32(len(nodes))), Selector: sel, Template: tmpl,
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{Type: clusterv1.RollingUpdateMachineDeploymentStrategyType}}}}
	h.createIn(h.mc, h.md)
	h.ms = h.machineSet("ms", h.md, nodes...)
}

// machineSet creates a MachineSet (owned by md unless nil) with one Machine per node.
func (h *harness) machineSet(name string, md *clusterv1.MachineDeployment, nodes ...string) *clusterv1.MachineSet {
	h.t.Helper()
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}
	ms := &clusterv1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: clusterv1.MachineSetSpec{ClusterName: "c", Replicas: ptr.To(int32(len(nodes))), Selector: sel,
			Template: clusterv1.MachineTemplateSpec{ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"pool": "gpu"}}, Spec: h.machineSpec()}}}
	if md != nil {
		ms.OwnerReferences = []metav1.OwnerReference{ownerRef("MachineDeployment", md)}
	}
	h.createIn(h.mc, ms)
	for i, n := range nodes {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name + "-" + n, Labels: map[string]string{"pool": "gpu"},
			OwnerReferences: []metav1.OwnerReference{ownerRef("MachineSet", ms)}}, Spec: h.machineSpec()}
		h.createIn(h.mc, m)
		if i == 0 && md != nil {
			h.annotateNode(n, map[string]string{clusterv1.MachineAnnotation: m.Name, clusterv1.ClusterNamespaceAnnotation: h.ns})
			continue
		}
		m.Status.NodeRef = clusterv1.MachineNodeReference{Name: h.name(n)}
		if err := h.mc.Status().Update(h.ctx, m); err != nil {
			h.t.Fatal(err)
		}
	}
	return ms
}

func (h *harness) machineSpec() clusterv1.MachineSpec {
	return clusterv1.MachineSpec{ClusterName: "c", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("none")},
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "FakeMachine", Name: "x"}}
}

func ownerRef(kind string, o client.Object) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(true)}
}

func (h *harness) annotateNode(n string, ann map[string]string) {
	h.t.Helper()
	node := h.node(n)
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	for k, v := range ann {
		node.Annotations[k] = v
	}
	if err := h.c.Update(h.ctx, node); err != nil {
		h.t.Fatal(err)
	}
}

// policy creates the test's ScaleDownPolicy, selecting its nodes.
func (h *harness) policy(spec tesserav1.ScaleDownPolicySpec) {
	h.t.Helper()
	spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"test": h.ns}}
	h.create(&tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.ns}, Spec: spec})
}

// pod creates a running pod on node n (none: pending) asking for gpus GPUs, owned by a
// controller of kind owner (a ReplicaSet that nothing runs).
func (h *harness) pod(name, n string, gpus int64, mut ...func(*apitest.PodWrapper)) *corev1.Pod {
	h.t.Helper()
	w := apitest.MakePod(name, h.ns).Label("app", name).SchedulerName(tesserav1.SchedulerName).
		OwnerReference(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: "0c7d9f0e-0000-4000-8000-000000000001", Controller: ptr.To(true)}).
		RequestAndLimit(corev1.ResourceCPU, "1").RequestAndLimit(corev1.ResourceMemory, "1Gi")
	if gpus > 0 {
		w.GPU(gpus)
	}
	if n != "" {
		w.NodeName(h.name(n))
	}
	for _, m := range mut {
		m(w)
	}
	p := w.Obj()
	h.create(p)
	if n != "" {
		// Running and ready: the Eviction API consults the budget only for healthy pods.
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := h.c.Status().Update(h.ctx, p); err != nil {
			h.t.Fatal(err)
		}
	}
	return p
}

// actuator builds an actuator, as a (re)started process would, writing through c
// (workload cluster) and mgmt (management cluster; here the same API server).
func (h *harness) actuator(c, mgmt client.Client) *actuator.Actuator {
	h.t.Helper()
	return h.actuatorWith(c, capi.New(mgmt))
}

// actuatorWith is actuator with infra as its Infrastructure.
func (h *harness) actuatorWith(c client.Client, infra actuator.Infrastructure) *actuator.Actuator {
	h.t.Helper()
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		h.t.Fatal(err)
	}
	return actuator.NewActuator(env.Client, c, infra, controller.NewEventSink(h.events, h.clock.Now), actuator.NewMetrics(nil), testr.New(h.t),
		actuator.Options{Scheduler: cfg, RevalidateAfter: 30 * time.Second, StepTimeout: 10 * time.Minute, Clock: h.clock})
}

// round runs one round d after the last one, then plays the kubelet: evicted pods end.
func (h *harness) round(a *actuator.Actuator, d time.Duration) error {
	h.clock.Step(d)
	err := a.RunOnce(h.ctx)
	h.kubelet()
	return err
}

// rounds runs n rounds 31s apart, failing on an error.
func (h *harness) rounds(a *actuator.Actuator, n int) {
	h.t.Helper()
	for range n {
		if err := h.round(a, 31*time.Second); err != nil {
			h.t.Fatal(err)
		}
	}
}

// kubelet deletes terminating pods at once.
func (h *harness) kubelet() {
	var pods corev1.PodList
	_ = h.c.List(h.ctx, &pods, client.InNamespace(h.ns))
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			_ = h.c.Delete(h.ctx, &pods.Items[i], client.GracePeriodSeconds(0))
		}
	}
}

func (h *harness) node(n string) *corev1.Node {
	h.t.Helper()
	var node corev1.Node
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.name(n)}, &node); err != nil {
		h.t.Fatal(err)
	}
	return &node
}

// phase is node n's scale-down phase ("" for none), whether it is tainted and cordoned.
func (h *harness) phase(n string) (autoscale.Phase, bool, bool) {
	h.t.Helper()
	node := h.node(n)
	sd, err := autoscale.StateOf(node)
	if err != nil {
		h.t.Fatal(err)
	}
	tainted := false
	for _, t := range node.Spec.Taints {
		tainted = tainted || t.Key == autoscale.TaintCandidate
	}
	var p autoscale.Phase
	if sd != nil {
		p = sd.Phase
	}
	return p, tainted, node.Spec.Unschedulable
}

func (h *harness) expectPhase(n string, want autoscale.Phase) {
	h.t.Helper()
	p, tainted, cordoned := h.phase(n)
	if p != want || tainted != (want != "") || cordoned != (want != "" && want != autoscale.PhaseCandidate) {
		h.t.Fatalf("node %s: phase %q tainted %v cordoned %v, want %q; events:\n%s", n, p, tainted, cordoned, want, h.events)
	}
}

// replicas is the MachineDeployment's spec.replicas.
func (h *harness) replicas(name string) int32 {
	h.t.Helper()
	var md clusterv1.MachineDeployment
	if err := h.mc.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &md); err != nil {
		h.t.Fatal(err)
	}
	return ptr.Deref(md.Spec.Replicas, -1)
}

// marked lists the Machines annotated for deletion.
func (h *harness) marked() []string {
	h.t.Helper()
	var ms clusterv1.MachineList
	if err := h.mc.List(h.ctx, &ms, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, m := range ms.Items {
		if _, ok := m.Annotations[clusterv1.DeleteMachineAnnotation]; ok {
			out = append(out, m.Name)
		}
	}
	return out
}

func (h *harness) podExists(name string) bool {
	return h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &corev1.Pod{}) == nil
}

func (h *harness) status() tesserav1.ScaleDownPolicyStatus {
	h.t.Helper()
	var p tesserav1.ScaleDownPolicy
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.ns}, &p); err != nil {
		h.t.Fatal(err)
	}
	return p.Status
}

func mustPolicy(t *testing.T) scheduler.Config {
	t.Helper()
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// decision finds node's decision in the plan of policy.
func decision(plans []*autoscale.Plan, policy, node string) autoscale.Decision {
	for _, p := range plans {
		if p.Policy != policy {
			continue
		}
		for _, d := range p.Nodes {
			if d.Node == node {
				return d
			}
		}
	}
	return autoscale.Decision{}
}
