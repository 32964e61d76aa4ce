package idlereclaim_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale/autoscaletest"
	"github.com/tessera-gpu/tessera/autoscale/idlereclaim"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

// TestMain starts one API server with Tessera's CRDs and the workload kinds idle
// reclaim suspends (hack/workload-crds.sh). No controller runs: the tests create the
// pods of the workloads themselves, running on a GPU node whose GPUNode they sample.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{WorkloadCRDs: true}, func(e *testenv.Env) { env = e })
}

// harness is one test's namespace and Queue (named alike), an 8-GPU node and its
// GPUNode, and a reclaimer on a fake clock.
type harness struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	idx     int
	clock   *clocktesting.FakeClock
	events  *autoscaletest.Recorder
	metrics *idlereclaim.Metrics
	r       *idlereclaim.Reclaimer
	gn      *tesserav1.GPUNode
	used    int // GPUs assigned so far
}

var tests atomic.Int32

// newHarness creates the Queue with spec.idleReclaim ir and deserved GPUs.
func newHarness(t *testing.T, ir tesserav1.IdleReclaim, deserved string) *harness {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	idx := int(tests.Add(1))
	h := &harness{t: t, ctx: testenv.Context(t, 2*time.Minute), ns: "ir-" + strconv.Itoa(idx), idx: idx,
		clock: clocktesting.NewFakeClock(time.Now()), events: &autoscaletest.Recorder{}, metrics: idlereclaim.NewMetrics(nil)}
	h.create(apitest.MakeNamespace(h.ns).Obj())
	q := apitest.MakeQueue(h.ns).Deserved(tesserav1.ResourceGPU, deserved).Obj()
	q.Spec.IdleReclaim = &ir
	h.create(q)
	node := apitest.MakeNode(h.ns).GPUs(8, "A100-80GB", 81920).Allocatable(corev1.ResourceCPU, "64").
		Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110").Ready().Obj()
	if err := testenv.CreateNode(h.ctx, env.Client, node); err != nil {
		t.Fatal(err)
	}
	gn := apitest.MakeGPUNode(h.ns)
	for i := range 8 {
		gn.Device(tesserav1.GPUDevice{Index: int32(i), UUID: h.uuid(i), Model: "A100-80GB", MemoryMiB: 81920, Healthy: true})
	}
	h.gn = gn.Obj()
	status := h.gn.Status
	h.create(h.gn)
	h.gn.Status = status
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.Delete(ctx, node)
		_ = env.Client.Delete(ctx, h.gn)
		_ = env.Client.Delete(ctx, q)
	})
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		t.Fatal(err)
	}
	h.r, err = idlereclaim.New(env.Client, env.Client, env.Client, controller.NewEventSink(h.events, h.clock.Now), h.metrics, testr.New(t),
		idlereclaim.Options{Scheduler: cfg, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) uuid(i int) string { return fmt.Sprintf("GPU-%08x-%04x", h.idx, i) }

func (h *harness) create(o client.Object) {
	h.t.Helper()
	if err := env.Client.Create(h.ctx, o); err != nil {
		h.t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

// pod creates a pod of the queue running on the node with gpus GPUs assigned,
// controlled by owner (none: a bare pod).
func (h *harness) pod(name string, gpus int, owner client.Object, annotations map[string]string) *corev1.Pod {
	h.t.Helper()
	a := tesserav1.GPUAssignment{Node: h.ns, Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container}}}
	for range gpus {
		a.Containers[0].UUIDs = append(a.Containers[0].UUIDs, h.uuid(h.used))
		h.used++
	}
	w := apitest.MakePod(name, h.ns).Queue(h.ns).SchedulerName(tesserav1.SchedulerName).GPU(int64(gpus)).Assignment(a).NodeName(h.ns)
	for k, v := range annotations {
		w.Annotation(k, v)
	}
	if owner != nil {
		gvk, err := typeOf(owner)
		if err != nil {
			h.t.Fatal(err)
		}
		w.OwnerReference(metav1.OwnerReference{APIVersion: gvk.APIVersion, Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)})
	}
	p := w.Obj()
	h.create(p)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: h.clock.Now()},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := env.Client.Status().Update(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// typeOf is the object's apiVersion and kind, from the test scheme.
func typeOf(o client.Object) (metav1.TypeMeta, error) {
	gvk, err := apiutil.GVKForObject(o, env.Scheme)
	if err != nil {
		return metav1.TypeMeta{}, err
	}
	return metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, nil
}

// minutes runs n rounds a minute apart, each after the node agent sampled the GPUs
// at utilization util.
func (h *harness) minutes(n int, util int32) {
	h.t.Helper()
	for range n {
		h.clock.Step(time.Minute)
		for i := range h.gn.Status.Devices {
			h.gn.Status.Devices[i].UtilizationPercent = util
		}
		h.gn.Status.ObservedTime = &metav1.Time{Time: h.clock.Now()}
		if err := env.Client.Status().Update(h.ctx, h.gn); err != nil {
			h.t.Fatal(err)
		}
		if err := h.r.RunOnce(h.ctx); err != nil {
			h.t.Fatalf("round at %s: %v", h.clock.Now().Format(time.TimeOnly), err)
		}
	}
}

func (h *harness) expectEvent(line string) {
	h.t.Helper()
	if !h.events.Has(line) {
		h.t.Fatalf("no event %q; events:\n%s", line, h.events)
	}
}

// job creates a Job of the queue and its running pod.
func (h *harness) job(name string, gpus int, annotations map[string]string) *batchv1.Job {
	h.t.Helper()
	j := apitest.MakeJob(name, h.ns).Queue(h.ns).Obj()
	h.create(j)
	h.pod(name+"-0", gpus, j, annotations)
	return j
}

func (h *harness) suspended(j *batchv1.Job) bool {
	h.t.Helper()
	if err := env.Client.Get(h.ctx, client.ObjectKeyFromObject(j), j); err != nil {
		h.t.Fatal(err)
	}
	return ptr.Deref(j.Spec.Suspend, false)
}

func (h *harness) reclaimed(action, dryRun string) float64 {
	return testutil.ToFloat64(h.metrics.ReclaimedGPU.WithLabelValues(h.ns, action, dryRun))
}

var short = tesserav1.IdleReclaim{IdleFor: &metav1.Duration{Duration: 5 * time.Minute}, GracePeriod: &metav1.Duration{Duration: 5 * time.Minute}, DryRun: ptr.To(false)}

// A Job whose pod's GPUs report 0% for idleFor is told (event, pending metric) and,
// gracePeriod later, suspended: spec.suspend, an event on the Job and the pod, the
// reclaimed counter.
func TestIdleJobToldThenSuspended(t *testing.T) {
	h := newHarness(t, short, "8")
	j := h.job("train", 2, nil)
	h.minutes(5, 0)
	if h.events.Has("IdleReclaimPending") {
		t.Fatalf("told before idleFor; events:\n%s", h.events)
	}
	h.minutes(1, 0)
	h.expectEvent("IdleReclaimPending train-0: 2 GPUs at or below 1% utilization for 5m0s")
	h.expectEvent("queue " + h.ns + " suspends its workload after a grace period of 5m0s")
	if got := testutil.ToFloat64(h.metrics.PendingGPUs.WithLabelValues(h.ns, "train-0", h.ns)); got != 2 {
		t.Fatalf("pending GPUs %v, want 2", got)
	}
	h.minutes(4, 0)
	if h.suspended(j) {
		t.Fatalf("suspended before the grace period ended; events:\n%s", h.events)
	}
	h.minutes(1, 0)
	if !h.suspended(j) {
		t.Fatalf("Job not suspended; events:\n%s", h.events)
	}
	h.expectEvent("IdleReclaimed train: set spec.suspend to true for pod " + h.ns + "/train-0")
	h.expectEvent("IdleReclaimed train-0: its 2 GPUs stayed at or below queue " + h.ns + "'s idle threshold for 10m0s")
	if got := h.reclaimed("suspend", "false"); got != 2 {
		t.Fatalf("reclaimed GPUs %v, want 2", got)
	}
}

// GPUs used again reset the clock: the pod is told that reclaim is cancelled, and is
// not suspended when the first grace period would have ended.
func TestUsedAgainResetsTheClock(t *testing.T) {
	h := newHarness(t, short, "8")
	j := h.job("train", 2, nil)
	h.minutes(7, 0)
	h.minutes(1, 40)
	h.expectEvent("IdleReclaimCancelled train-0: its GPUs are in use again")
	h.minutes(5, 0)
	if h.suspended(j) {
		t.Fatalf("suspended although its GPUs were used; events:\n%s", h.events)
	}
}

// A dry run tells and says what it would suspend, and suspends nothing.
func TestDryRunSuspendsNothing(t *testing.T) {
	ir := short
	ir.DryRun = nil // the CRD's default: true
	h := newHarness(t, ir, "8")
	j := h.job("train", 2, nil)
	h.minutes(12, 0)
	if h.suspended(j) {
		t.Fatalf("dry run suspended the Job; events:\n%s", h.events)
	}
	h.expectEvent("IdleReclaimPending train-0: 2 GPUs at or below 1% utilization for 5m0s")
	h.expectEvent("would suspend its workload (dry run: it suspends nothing)")
	h.expectEvent("IdleReclaimDryRun train: would suspend it for pod " + h.ns + "/train-0 (dry run)")
	if got := h.reclaimed("suspend", "true"); got != 2 {
		t.Fatalf("dry-run reclaimed GPUs %v, want 2", got)
	}
}

// The opt-out spares a Job while its queue holds no more than it deserves; beyond
// its deserved share it does not hold, and the Job is suspended.
func TestOptOutHoldsWithinDeservedOnly(t *testing.T) {
	optOut := map[string]string{tesserav1.AnnotationIdleReclaim: "false"}
	t.Run("within", func(t *testing.T) {
		h := newHarness(t, short, "8")
		j := h.job("keep", 2, optOut)
		h.minutes(15, 0)
		if h.suspended(j) {
			t.Fatalf("opted-out Job suspended within the deserved share; events:\n%s", h.events)
		}
		h.expectEvent(`IdleReclaimSpared keep-0: 2 GPUs idle since`)
		h.expectEvent(`holds while queue ` + h.ns + ` holds 2 of the`)
	})
	t.Run("beyond", func(t *testing.T) {
		h := newHarness(t, short, "1")
		j := h.job("keep", 2, optOut)
		h.minutes(11, 0)
		if !h.suspended(j) {
			t.Fatalf("opted-out Job beyond the deserved share not suspended; events:\n%s", h.events)
		}
		h.expectEvent(`does not hold: queue ` + h.ns + ` holds 2 GPUs, more than the 1 it deserves`)
	})
}

// A Deployment is scaled to zero, its replicas recorded; a JobSet (through its child
// Job) is suspended; a bare pod is evicted.
func TestWorkloadKinds(t *testing.T) {
	h := newHarness(t, short, "8")
	labels := map[string]string{"app": "serve"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "serve", Namespace: h.ns}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(3)),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "server"}}}}}}
	h.create(dep)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "serve-x", Namespace: h.ns, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template}}
	h.create(rs)
	h.pod("serve-x-0", 1, rs, nil)

	js := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: sweep}
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        template: {spec: {restartPolicy: Never, containers: [{name: main, image: trainer}]}}
`), &js.Object); err != nil {
		t.Fatal(err)
	}
	js.SetNamespace(h.ns)
	h.create(js)
	child := apitest.MakeJob("sweep-workers-0", h.ns).Queue(h.ns).Obj()
	child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "sweep", UID: js.GetUID(), Controller: ptr.To(true)}}
	h.create(child)
	h.pod("sweep-workers-0-0", 2, child, nil)

	h.pod("notebook", 1, nil, nil)

	h.minutes(11, 0)
	if err := env.Client.Get(h.ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 0 || dep.Annotations[idlereclaim.AnnotationReplicas] != "3" {
		t.Fatalf("Deployment at %d replicas, annotations %v; events:\n%s", *dep.Spec.Replicas, dep.Annotations, h.events)
	}
	h.expectEvent("IdleReclaimed serve: scaled it from 3 to 0 replicas")
	if err := env.Client.Get(h.ctx, client.ObjectKeyFromObject(js), js); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedBool(js.Object, "spec", "suspend"); !s {
		t.Fatalf("JobSet not suspended; events:\n%s", h.events)
	}
	if h.suspended(child) {
		t.Fatal("the JobSet's child Job was suspended itself: its JobSet decides")
	}
	var nb corev1.Pod
	if err := env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "notebook"}, &nb); err == nil && nb.DeletionTimestamp == nil {
		t.Fatalf("bare pod not evicted; events:\n%s", h.events)
	}
	h.expectEvent("IdleReclaimed notebook: evicted: its 1 GPUs stayed")
	h.expectEvent("only if its controller recreates it")
	for action, want := range map[string]float64{"scale": 1, "suspend": 2, "evict": 1} {
		if got := h.reclaimed(action, "false"); got != want {
			t.Errorf("reclaimed GPUs by %s: %v, want %v", action, got, want)
		}
	}
}
