package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// The queue tests build the scheduler's snapshot from the API server's objects, as the
// scheduler's cache does, and run one session of the tessera profile over it. Each
// test labels its pods, PodGroups and nodes with its case, and its session sees those
// alone (with every namespace, queue and priority class), so that the other tenant
// tests' pods do not take part.
const caseLabel = "tessera.dev/test-case"

// ofCase labels o as an object of test case c.
func ofCase[T client.Object](c string, o T) T {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[caseLabel] = c
	o.SetLabels(l)
	return o
}

// caseReader lists what its reader lists, less the namespaced objects and nodes of
// other test cases.
type caseReader struct {
	client.Reader
	c string
}

func (r caseReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(items, func(o runtime.Object) bool {
		obj := o.(client.Object)
		_, node := obj.(*corev1.Node)
		return (obj.GetNamespace() != "" || node) && obj.GetLabels()[caseLabel] != r.c
	})
	return meta.SetList(list, kept)
}

// session runs one scheduler session over case c's objects as the API server has them.
func session(ctx context.Context, t *testing.T, e *testenv.Env, c string) (*framework.Snapshot, *scheduler.Result) {
	t.Helper()
	cfg, err := scheduler.Profile("tessera")
	must(t, "tessera profile", err)
	cfg.ReclaimAfter = scheduler.Duration{} // what may be reclaimed, not when: at once
	s, err := scheduler.New(cfg)
	must(t, "scheduler", err)
	snap, _, errs, err := cache.New(caseReader{e.Client, c}, snapshot.Options{}).Snapshot(ctx, time.Now())
	must(t, "snapshot", err)
	for _, err := range errs {
		t.Logf("snapshot: %v", err)
	}
	r := s.RunSession(snap)
	for _, j := range snap.Jobs {
		q := ""
		if j.Queue != nil {
			q = j.Queue.Name
		}
		var st []string
		for _, task := range j.Tasks {
			st = append(st, task.Name+":"+task.Status.String())
		}
		t.Logf("job %s queue %s priority %d tasks %v pending %v", j.Key(), q, j.Priority, st, j.Pending)
	}
	return snap, r
}

// gpuNodes creates n nodes of case c with 8 GPUs each.
func gpuNodes(ctx context.Context, t *testing.T, e *testenv.Env, c string, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		node := ofCase(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", c, i)}})
		must(t, "create node", e.Client.Create(ctx, node))
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), node) })
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
			corev1.ResourcePods: resource.MustParse("110"), tesserav1.ResourceGPU: resource.MustParse("8")}
		node.Status.Allocatable = node.Status.Capacity
		must(t, "node status", e.Client.Status().Update(ctx, node))
		node.Spec.Taints = nil // the API server's not-ready taint: no node controller lifts it here
		must(t, "node taints", e.Client.Update(ctx, node))
		names = append(names, node.Name)
	}
	return names
}

// runOn binds the pod to node, as the scheduler would, and marks it running since start.
func runOn(ctx context.Context, t *testing.T, e *testenv.Env, pod *corev1.Pod, node string, start time.Time) {
	t.Helper()
	must(t, "bind "+pod.Name, bind(ctx, e.Client, pod, node, nil))
	p := get(ctx, t, e.Client, pod)
	p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &metav1.Time{Time: start}
	must(t, "pod status", e.Client.Status().Update(ctx, p))
}

// shareQueue creates queue name for the namespaces labelled team, deserving deserved
// GPUs and allowing batch-normal and offline-low, and waits until the webhook admits
// pods of namespace ns to it. The queue is deleted when the test ends.
func shareQueue(t *testing.T, e *testenv.Env, name, team, deserved, ns string) *tesserav1.Queue {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	q := &tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tesserav1.QueueSpec{
		Deserved:               corev1.ResourceList{tesserav1.ResourceGPU: resource.MustParse(deserved)},
		NamespaceSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		AllowedPriorityClasses: []string{"batch-normal", "offline-low"},
	}}
	must(t, "create queue "+name, e.Client.Create(ctx, q))
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), q) })
	for {
		p := inQueue(tenantPod("", 1), name)
		p.GenerateName, p.Namespace = "probe-", ns
		err := e.Client.Create(ctx, p, client.DryRunAll)
		if err == nil {
			return q
		}
		if ctx.Err() != nil {
			t.Fatalf("the webhook never took queue %s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reclaimCase is the tenant environment for case c: team a's queue queueA deserving
// deservedA GPUs (namespace tenant-a), team b's queueB deserving deservedB (tenant-b),
// n nodes of 8 GPUs, a context of a minute and a client acting as the tenant.
func reclaimCase(t *testing.T, c, queueA, deservedA, queueB, deservedB string, n int) (*testenv.Env, context.Context, client.Client, []string) {
	t.Helper()
	e := tenantEnv(t)
	tenantQueues(t, e) // tenant-b, labelled team=b
	shareQueue(t, e, queueA, "a", deservedA, tenantNS)
	shareQueue(t, e, queueB, "b", deservedB, "tenant-b")
	ctx := testenv.Context(t, 60*time.Second)
	return e, ctx, asTenant(t, e), gpuNodes(ctx, t, e, c, n)
}

// evictedPods are the pods a session evicts, sorted, and fails on an eviction that
// is not a reclaim.
func evictedPods(t *testing.T, r *scheduler.Result) []string {
	t.Helper()
	var out []string
	for _, ev := range r.Evictions {
		if !strings.Contains(ev.Reason, "reclaimed") {
			t.Errorf("%s evicted: %s, want a reclaim", ev.Task.Key(), ev.Reason)
		}
		out = append(out, ev.Task.Key())
	}
	slices.Sort(out)
	return out
}

// TestTenantSelfGrantedImmunity: the tenant marks its pods safe-to-evict "false" and
// do-not-disrupt, and gives its PodGroup a minRuntime of a year, while its queue holds
// 32 GPUs and deserves 8. Another queue's pending work reclaims the 24 GPUs it
// borrows, protection or not; the pod within its deserved share stays.
func TestTenantSelfGrantedImmunity(t *testing.T) {
	const c = "immunity"
	e, ctx, tenant, nodes := reclaimCase(t, c, "share-a", "8", "share-b", "24", 4)

	pg := ofCase(c, &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "immune-long"},
		Spec: tesserav1.PodGroupSpec{MinMember: 1, Queue: "share-a", MinRuntime: &metav1.Duration{Duration: 365 * 24 * time.Hour}}})
	must(t, "tenant PodGroup with a year's minRuntime", tenant.Create(ctx, pg))
	long := inQueue(tenantPod("immune-long-0", 8), "share-a")
	long.Labels[tesserav1.LabelPodGroup] = pg.Name
	pods := []*corev1.Pod{
		withAnnotation(inQueue(tenantPod("immune-kept", 8), "share-a"), "cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
		withAnnotation(inQueue(tenantPod("immune-pinned", 8), "share-a"), "cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
		withAnnotation(inQueue(tenantPod("immune-undisrupted", 8), "share-a"), "karpenter.sh/do-not-disrupt", "true"),
		long,
	}
	start := time.Now().Add(-time.Hour)
	for i, p := range pods {
		must(t, "tenant creates "+p.Name, tenant.Create(ctx, ofCase(c, p)))
		runOn(ctx, t, e, p, nodes[i], start.Add(time.Duration(i)*time.Minute)) // immune-kept is the oldest
	}
	for i := range 3 {
		p := inQueue(tenantPod(fmt.Sprintf("immunity-b-%d", i), 8), "share-b")
		p.Namespace = "tenant-b"
		must(t, "team b's pending pod", e.Client.Create(ctx, ofCase(c, p)))
	}

	_, r := session(ctx, t, e, c)
	want := []string{tenantNS + "/immune-long-0", tenantNS + "/immune-pinned", tenantNS + "/immune-undisrupted"}
	if got := evictedPods(t, r); !slices.Equal(got, want) {
		t.Fatalf("reclaimed %v, want %v: the protected pods beyond the queue's deserved share", got, want)
	}
}

// TestTenantDefaultQueueUnlistedNamespace: with the chart's default Queue, a GPU pod
// that names no queue in a namespace the queue does not select (kube-system, which the
// webhook never intercepts) is not charged to it: the scheduler leaves it pending and
// says why, though a node is free. A tenant's pod that names no queue and a class the
// default Queue does not allow is refused at admission.
func TestTenantDefaultQueueUnlistedNamespace(t *testing.T) {
	e := tenantEnv(t)
	const c = "default-queue"
	ctx := testenv.Context(t, 60*time.Second)
	root, err := testenv.RepoRoot()
	must(t, "repository root", err)
	objs, err := e.DecodeFiles(filepath.Join(root, "deploy", "kustomize", "base", "queue-default.yaml"))
	must(t, "the chart's default Queue", err)
	if len(objs) != 1 {
		t.Fatalf("the chart renders %d objects as its default Queue, want 1", len(objs))
	}
	def := objs[0]
	must(t, "create the default Queue", e.Client.Create(ctx, def))
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), def) })
	gpuNodes(ctx, t, e, c, 1)

	high := tenantPod("default-queue-high", 1)
	high.Spec.PriorityClassName = "production-high"
	for {
		err := asTenant(t, e).Create(ctx, high.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), `is not allowed in queue "default"`) {
			refused(t, "tenant pod in the default queue with production-high", err, `priorityClassName "production-high" is not allowed in queue "default"`)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("tenant pod in the default queue with production-high: %v, want refused", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	system := ofCase(c, tenantPod("unlisted-namespace", 1))
	system.Namespace = metav1.NamespaceSystem
	system.Spec.SchedulerName = tesserav1.SchedulerName
	must(t, "GPU pod in kube-system", e.Client.Create(ctx, system))
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), system) })

	snap, r := session(ctx, t, e, c)
	if len(r.Bindings) != 0 {
		t.Fatalf("the pod of kube-system was bound to %s in the default queue", r.Bindings[0].Node.Name)
	}
	for _, j := range snap.Jobs {
		if j.Namespace != metav1.NamespaceSystem {
			continue
		}
		if j.Queue.Name == tesserav1.DefaultQueue || j.Pending == nil || j.Pending.Code != framework.ReasonQueueRefused ||
			!strings.Contains(j.Pending.Message, `queue "default" does not take workloads from namespace "kube-system"`) {
			t.Fatalf("kube-system's pod charged to queue %s, pending %v; want refused by the default queue", j.Queue.Name, j.Pending)
		}
		t.Logf("pending: %v", j.Pending)
		return
	}
	t.Fatal("kube-system's pod is not in the snapshot")
}

// TestTenantUnknownQueueCharged: a running pod whose queue does not exist is charged
// to no queue of its own but stays reclaimable: another queue's pending work takes its
// GPUs back, its safe-to-evict "false" notwithstanding. Admission refuses relabelling
// the pod, to the tenant and to a privileged client alike; the pod loses its queue
// the way that remains: the queue is deleted under it (a relabel that got past
// admission, made while the webhook was down or before it refused relabels, leaves
// the scheduler the same objects).
func TestTenantUnknownQueueCharged(t *testing.T) {
	e := tenantEnv(t)
	const c = "unknown-queue"
	tenantQueues(t, e) // tenant-b, labelled team=b
	doomed := shareQueue(t, e, "doomed-a", "a", "8", tenantNS)
	shareQueue(t, e, "share-b", "b", "24", "tenant-b")
	ctx := testenv.Context(t, 60*time.Second)
	nodes := gpuNodes(ctx, t, e, c, 1)

	pod := withAnnotation(inQueue(tenantPod("relabelled", 8), doomed.Name), "cluster-autoscaler.kubernetes.io/safe-to-evict", "false")
	must(t, "tenant creates its pod", asTenant(t, e).Create(ctx, ofCase(c, pod)))
	runOn(ctx, t, e, pod, nodes[0], time.Now().Add(-time.Hour))
	p := get(ctx, t, e.Client, pod)
	p.Labels[tesserav1.LabelQueue] = "no-such-queue"
	if err := e.Client.Update(ctx, p); err != nil {
		t.Logf("relabel refused: %v", err)
		must(t, "delete the pod's queue", e.Client.Delete(ctx, doomed))
	}
	b := inQueue(tenantPod("unknown-queue-b", 8), "share-b")
	b.Namespace = "tenant-b"
	must(t, "team b's pending pod", e.Client.Create(ctx, ofCase(c, b)))

	snap, r := session(ctx, t, e, c)
	for _, j := range snap.Jobs {
		if j.Name == pod.Name && (j.Refused == nil || j.Refused.Code != framework.ReasonQueueNotFound) {
			t.Errorf("the pod's job refused %v, want %s", j.Refused, framework.ReasonQueueNotFound)
		}
	}
	if got, want := evictedPods(t, r), []string{tenantNS + "/relabelled"}; !slices.Equal(got, want) {
		t.Fatalf("reclaimed %v, want %v", got, want)
	}
}
