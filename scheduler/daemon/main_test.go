package daemon_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{WorkloadCRDs: true, WorkloadAPI: true}, func(e *testenv.Env) { env = e })
}

// harness is one test's namespace, nodes and scheduler against the shared API server.
type harness struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client // direct client, for the test's own reads and writes
	ns     string
	cache  crcache.Cache
	nodes  []string
	period time.Duration
	// reclaimAfter replaces the tessera profile's when set.
	reclaimAfter time.Duration
	// budgetTimeout replaces daemon.DefaultDisruptionBudgetTimeout when set.
	budgetTimeout time.Duration
}

var namespaces atomic.Int32

// newHarness starts an informer cache and makes a namespace; the test's nodes and
// objects are removed when it ends, so the tests of the package share one API server.
func newHarness(t *testing.T) *harness {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	ctx := testenv.Context(t, 2*time.Minute)
	h := &harness{t: t, ctx: ctx, c: env.Client, ns: "sched-" + strconv.Itoa(int(namespaces.Add(1))), period: 100 * time.Millisecond}
	if err := h.c.Create(ctx, apitest.MakeNamespace(h.ns).Obj()); err != nil {
		t.Fatal(err)
	}
	opts := cache.Options()
	opts.Scheme = env.Scheme
	ca, err := crcache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.cache = ca
	cctx, cancel := context.WithCancel(ctx)
	go func() { _ = ca.Start(cctx) }()
	t.Cleanup(func() {
		cancel()
		h.cleanup()
	})
	return h
}

// cleanup deletes the test's pods at once (no kubelet confirms graceful deletions),
// nodes and queues.
func (h *harness) cleanup() {
	ctx := context.Background()
	zero := int64(0)
	var pods corev1.PodList
	_ = h.c.List(ctx, &pods, client.InNamespace(h.ns))
	for i := range pods.Items {
		_ = h.c.Delete(ctx, &pods.Items[i], &client.DeleteOptions{GracePeriodSeconds: &zero})
	}
	for _, n := range h.nodes {
		_ = h.c.Delete(ctx, apitest.MakeNode(n).Obj())
	}
	_ = h.c.DeleteAllOf(ctx, &tesserav1.Queue{})
}

// daemon builds a scheduler daemon on the harness's cache writing through c (nil:
// the direct client).
func (h *harness) daemon(c client.Client) *daemon.Daemon {
	h.t.Helper()
	return h.daemonRecording(c, nil)
}

// daemonRecording is daemon with its events recorded by rec (nil: none).
func (h *harness) daemonRecording(c client.Client, rec events.EventRecorder) *daemon.Daemon {
	h.t.Helper()
	if c == nil {
		c = h.c
	}
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		h.t.Fatal(err)
	}
	if h.reclaimAfter > 0 {
		cfg.ReclaimAfter = scheduler.Duration{Duration: h.reclaimAfter}
	}
	core, err := scheduler.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ca := cache.New(h.cache, snapshot.Options{Workloads: cache.ServedWorkloads(h.c.RESTMapper()), DRA: cache.ServesDRA(h.c.RESTMapper())})
	if err := ca.Watch(h.ctx, h.cache); err != nil {
		h.t.Fatal(err)
	}
	if !h.cache.WaitForCacheSync(h.ctx) {
		h.t.Fatal("cache did not sync")
	}
	return daemon.NewDaemon(c, ca, core, rec, nil, testr.New(h.t), daemon.Options{Period: h.period, DisruptionBudgetTimeout: h.budgetTimeout})
}

// run starts d until the test ends or the returned stop is called.
func (h *harness) run(d *daemon.Daemon) (stop func()) {
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Start(ctx)
	}()
	stop = func() { cancel(); <-done }
	h.t.Cleanup(stop)
	return stop
}

// node creates a schedulable node with GPUs of 80 GiB.
func (h *harness) node(name string, gpus int, labels map[string]string) {
	h.t.Helper()
	name = h.ns + "-" + name
	w := apitest.MakeNode(name).GPUs(gpus, "A100-80GB", 81920).Allocatable(corev1.ResourceCPU, "128").
		Allocatable(corev1.ResourceMemory, "1Ti").Allocatable(corev1.ResourcePods, "110").Ready()
	for k, v := range labels {
		w.Label(k, v)
	}
	h.nodes = append(h.nodes, name)
	if err := testenv.CreateNode(h.ctx, h.c, w.Obj()); err != nil {
		h.t.Fatal(err)
	}
}

// makePod is a pod of the test's namespace for the tessera scheduler that asks 1 CPU
// and 1Gi; a priority class it names is resolved by the API server into spec.priority.
func (h *harness) makePod(name string) *apitest.PodWrapper {
	return apitest.MakePod(name, h.ns).SchedulerName(tesserav1.SchedulerName).
		RequestAndLimit(corev1.ResourceCPU, "1").RequestAndLimit(corev1.ResourceMemory, "1Gi")
}

// pod creates the pod that w builds.
func (h *harness) pod(w *apitest.PodWrapper) *corev1.Pod {
	h.t.Helper()
	p := w.Obj()
	// The Priority admission plugin resolves priorityClassName from its own informer,
	// which can lag a PriorityClass created a moment ago: retry while it says Forbidden.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := h.c.Create(h.ctx, p)
		if err == nil {
			return p
		}
		if !apierrors.IsForbidden(err) || p.Spec.PriorityClassName == "" || time.Now().After(deadline) {
			h.t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pods lists the namespace's pods.
func (h *harness) pods() []corev1.Pod {
	h.t.Helper()
	var l corev1.PodList
	if err := h.c.List(h.ctx, &l, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// bound counts the namespace's pods with a node.
func (h *harness) bound() int {
	n := 0
	for _, p := range h.pods() {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitBound waits until want pods of the namespace are bound.
func (h *harness) waitBound(what string, want int, d time.Duration) {
	h.t.Helper()
	h.eventually(what, d, func() string {
		if n := h.bound(); n != want {
			return fmt.Sprintf("%d of %d bound", n, want)
		}
		return ""
	})
}

// eventually polls cond until it returns "" or d passes, failing with the last message.
func (h *harness) eventually(what string, d time.Duration, cond func() string) {
	h.t.Helper()
	testenv.Eventually(h.t, what, d, cond)
}

// podGroup creates a PodGroup.
func (h *harness) podGroup(name string, minMember int32, queue string) {
	h.t.Helper()
	if err := h.c.Create(h.ctx, apitest.MakePodGroup(name, h.ns).MinMember(minMember).Queue(queue).Obj()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) getPodGroup(name string) *tesserav1.PodGroup {
	var pg tesserav1.PodGroup
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &pg); err != nil {
		return nil
	}
	return &pg
}

// kubelet plays the kubelet for terminating pods: it deletes them at once.
func (h *harness) kubelet() {
	zero := int64(0)
	for _, p := range h.pods() {
		if p.DeletionTimestamp != nil {
			_ = h.c.Delete(h.ctx, &p, &client.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
}

// waitPodBound waits until pod name is bound, deleting terminating pods meanwhile as their
// kubelet would.
func (h *harness) waitPodBound(what, name string, timeout time.Duration) {
	h.t.Helper()
	h.eventually(what, timeout, func() string {
		h.kubelet()
		var p corev1.Pod
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &p); err != nil {
			return err.Error()
		}
		if p.Spec.NodeName == "" {
			return name + " pending"
		}
		return ""
	})
}

// startBound marks the bound pods running, as their kubelet would, and says how
// many bound pods are now running (a write that lost a conflict is retried by the
// next call).
func (h *harness) startBound() int {
	running := 0
	for _, p := range h.pods() {
		if p.Spec.NodeName == "" {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &metav1.Time{Time: time.Now()}
			if h.c.Status().Update(h.ctx, &p) != nil {
				continue
			}
		}
		running++
	}
	return running
}

func isExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// explain runs tessera explain's logic against the API server.
func (h *harness) explain(kind, name string) daemon.Explanation {
	h.t.Helper()
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := daemon.Explain(h.ctx, h.c, cfg, kind, name, time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

// highPriority makes sure the PriorityClass test-high (value 100) exists and names it.
func (h *harness) highPriority() string {
	h.t.Helper()
	pc := apitest.MakePriorityClass("test-high", 100).Obj()
	if err := h.c.Create(h.ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatal(err)
	}
	return pc.Name
}
