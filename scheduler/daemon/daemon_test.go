package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
)

// TestGangAllOrNothing: three 8-GPU pods of a gang of 3 on two 8-GPU nodes bind
// nothing, and say why on the PodGroup; a third node lets the whole gang bind, each pod
// with the UUIDs of its GPUs.
func TestGangAllOrNothing(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.node("b", 8, nil)
	h.node("c", 8, nil)
	// Another scheduler's pod holds 4 GPUs of node c.
	other := apitest.MakePod("other", h.ns).NodeName(h.ns + "-c").GPU(4).Obj()
	if err := h.c.Create(h.ctx, other); err != nil {
		t.Fatal(err)
	}
	h.podGroup("train", 3, "")
	for i := range 3 {
		h.pod(h.makePod(fmt.Sprintf("train-%d", i)).GPU(8).Group("train"))
	}
	h.run(h.daemon(nil))
	h.eventually("PodGroup reports why it waits", 10*time.Second, func() string {
		pg := h.getPodGroup("train")
		if pg == nil {
			return "no PodGroup"
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, tesserav1.ConditionScheduled)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "only 2 fit together") {
			return fmt.Sprintf("condition %+v", c)
		}
		return ""
	})
	if n := h.bound(); n != 1 {
		t.Fatalf("%d pods of an incomplete gang bound", n-1)
	}
	e := h.explain("podgroup", h.ns+"/train")
	if e.State != "Pending" || e.Reason != "GangIncomplete" || !strings.Contains(e.Message, "only 2 fit together") || e.Hint == "" {
		t.Fatalf("explain pending gang: %+v", e)
	}
	zero := int64(0)
	if err := h.c.Delete(h.ctx, other, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	h.waitBound("gang bound whole", 3, 10*time.Second)
	nodes := map[string]bool{}
	for _, p := range h.pods() {
		a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if a.Node != p.Spec.NodeName || len(a.Containers) != 1 || len(a.Containers[0].UUIDs) != 8 {
			t.Fatalf("%s on %s: assignment %+v", p.Name, p.Spec.NodeName, a)
		}
		// The Binding marks the assignment as the scheduler's with the pod's UID.
		if got := p.Annotations[tesserav1.AnnotationBoundPodUID]; got != string(p.UID) {
			t.Fatalf("%s: %s = %q, want its UID %q", p.Name, tesserav1.AnnotationBoundPodUID, got, p.UID)
		}
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("gang on %d nodes, want 3", len(nodes))
	}
	e = h.explain("pod", h.ns+"/train-0")
	if e.State != "Running" || len(e.Pods) != 1 || len(e.Pods[0].GPUs) != 8 || e.Pods[0].Node == "" {
		t.Fatalf("explain running pod: %+v", e)
	}
	var text strings.Builder
	if err := e.WriteText(&text); err != nil || !strings.Contains(text.String(), "GPUs GPU-") {
		t.Fatalf("explain text: %q %v", text.String(), err)
	}
	h.eventually("PodGroup Running", 5*time.Second, func() string {
		if pg := h.getPodGroup("train"); pg == nil || pg.Status.Phase != tesserav1.PodGroupRunning || pg.Status.Running != 3 {
			return fmt.Sprintf("%+v", pg)
		}
		return ""
	})
}

// TestGangWaitsForItsPods: a PodGroup of 4 whose first 2 pods exist binds nothing and
// says so; once all 4 exist they bind together.
func TestGangWaitsForItsPods(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.podGroup("g", 4, "")
	h.pod(h.makePod("g-0").GPU(1).Group("g"))
	h.pod(h.makePod("g-1").GPU(1).Group("g"))
	h.run(h.daemon(nil))
	h.eventually("reason names the missing pods", 10*time.Second, func() string {
		pg := h.getPodGroup("g")
		if c := meta.FindStatusCondition(pg.Status.Conditions, tesserav1.ConditionScheduled); c == nil || !strings.Contains(c.Message, "2 of 4 pods exist") {
			return fmt.Sprintf("condition %+v", c)
		}
		return ""
	})
	if n := h.bound(); n != 0 {
		t.Fatalf("%d pods of a gang of 4 with 2 pods bound", n)
	}
	h.pod(h.makePod("g-2").GPU(1).Group("g"))
	h.pod(h.makePod("g-3").GPU(1).Group("g"))
	h.waitBound("all 4 bound", 4, 10*time.Second)
}

// TestGPUSlices: twelve 30 GiB slices and two 4-GPU pods on two 8 x 80 GiB nodes all
// fit: slices share cards, whole-GPU pods get GPUs of their own, and no GPU holds more
// slices than its memory.
func TestGPUSlices(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.node("b", 8, nil)
	for i := range 12 {
		h.pod(h.makePod(fmt.Sprintf("nb-%d", i)).GPUMemory(30000))
	}
	h.pod(h.makePod("ft-0").GPU(4))
	h.pod(h.makePod("ft-1").GPU(4))
	h.run(h.daemon(nil))
	h.waitBound("slices and whole GPUs bound", 14, 15*time.Second)
	sliceMiB, whole := map[string]int64{}, map[string]int{}
	for _, p := range h.pods() {
		a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		c := a.Containers[0]
		if c.Container != "main" || a.Node != p.Spec.NodeName {
			t.Fatalf("%s on %s: %+v", p.Name, p.Spec.NodeName, a)
		}
		if strings.HasPrefix(p.Name, "ft-") {
			if len(c.UUIDs) != 4 || c.MemoryMiB != 0 {
				t.Fatalf("%s: %+v", p.Name, c)
			}
			for _, u := range c.UUIDs {
				whole[u]++
			}
			continue
		}
		if len(c.UUIDs) != 1 || c.MemoryMiB != 30000 {
			t.Fatalf("%s: %+v", p.Name, c)
		}
		sliceMiB[c.UUIDs[0]] += c.MemoryMiB
	}
	for g, mib := range sliceMiB {
		if mib > 81920 {
			t.Errorf("GPU %s holds %d MiB of slices, above its 81920", g, mib)
		}
		if whole[g] > 0 {
			t.Errorf("GPU %s is both sliced and given whole", g)
		}
	}
	for g, n := range whole {
		if n > 1 {
			t.Errorf("GPU %s given whole to %d pods", g, n)
		}
	}
}

// TestImplicitGangs: pods of a batch Job and pods with Volcano's group annotations are
// gangs; the scheduler creates their PodGroups, owned by the Job (or the first pod), and
// binds each gang whole.
func TestImplicitGangs(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	job := apitest.MakeJob("finetune", h.ns).Parallelism(2).Obj()
	if err := h.c.Create(h.ctx, job); err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}
	h.pod(h.makePod("finetune-0").GPU(2).OwnerReference(owner))
	h.pod(h.makePod("vc-0").GPU(2).Annotation(tesserav1.VolcanoGroupName, "vc").Annotation(tesserav1.VolcanoGroupMinMember, "2"))
	h.run(h.daemon(nil))
	h.eventually("PodGroups created for both gangs", 10*time.Second, func() string {
		for _, name := range []string{"finetune", "vc"} {
			pg := h.getPodGroup(name)
			if pg == nil {
				return "no PodGroup " + name
			}
			if pg.Annotations[daemon.AnnotationImplicit] != "true" || pg.Spec.MinMember != 2 || len(pg.OwnerReferences) != 1 {
				return fmt.Sprintf("%s: %+v", name, pg.ObjectMeta)
			}
		}
		return ""
	})
	if pg := h.getPodGroup("finetune"); pg.OwnerReferences[0].UID != job.UID {
		t.Fatalf("finetune PodGroup owned by %+v, want the Job", pg.OwnerReferences)
	}
	if n := h.bound(); n != 0 {
		t.Fatalf("%d pods bound while each gang has 1 of 2 pods", n)
	}
	h.pod(h.makePod("finetune-1").GPU(2).OwnerReference(owner))
	h.pod(h.makePod("vc-1").GPU(2).Annotation(tesserav1.VolcanoGroupName, "vc").Annotation(tesserav1.VolcanoGroupMinMember, "2"))
	h.waitBound("both gangs bound", 4, 10*time.Second)
}

// failingBinds makes the binds of the named pods fail while fail() is true.
func failingBinds(fail func(pod string) bool) client.Client {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		panic(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if sub == "binding" && fail(obj.GetName()) {
				return errors.New("injected bind failure")
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
	})
}

// TestBindFailureRetried: a gang member whose first bind fails is retried next
// session, and the gang ends whole.
func TestBindFailureRetried(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.podGroup("g", 4, "")
	for i := range 4 {
		h.pod(h.makePod(fmt.Sprintf("g-%d", i)).GPU(2).Group("g"))
	}
	var mu sync.Mutex
	failures := 1
	c := failingBinds(func(pod string) bool {
		mu.Lock()
		defer mu.Unlock()
		if pod == "g-3" && failures > 0 {
			failures--
			return true
		}
		return false
	})
	h.run(h.daemon(c))
	h.waitBound("gang completed after retries", 4, 10*time.Second)
}

// TestBindFailureEvictsPartialGang: a member that can never bind gets its gang's bound
// pods evicted after one retry period, so no GPUs stay held by a gang that cannot run.
func TestBindFailureEvictsPartialGang(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.podGroup("g", 4, "")
	for i := range 4 {
		h.pod(h.makePod(fmt.Sprintf("g-%d", i)).GPU(2).Group("g"))
	}
	h.run(h.daemon(failingBinds(func(pod string) bool { return pod == "g-3" })))
	h.eventually("bound members evicted", 10*time.Second, func() string {
		terminating := 0
		for _, p := range h.pods() {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		if terminating != 3 {
			return fmt.Sprintf("%d of 3 bound members terminating", terminating)
		}
		return ""
	})
}

// TestPreemptionThroughEviction: a high-priority pod evicts a low-priority one through
// the Eviction API and binds once the victim is gone.
func TestPreemptionThroughEviction(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	q := apitest.MakeQueue("preemption-through-eviction").Obj()
	q.Spec.AllowedPriorityClasses = []string{h.highPriority()}
	if err := h.c.Create(h.ctx, q); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	h.pod(h.makePod("low").GPU(8).Queue(q.Name))
	stop := h.run(h.daemon(nil))
	h.eventually("low bound", 10*time.Second, func() string {
		if h.bound() != 1 {
			return "not yet"
		}
		return ""
	})
	stop()
	h.pod(h.makePod("high").GPU(8).PriorityClass(h.highPriority()).Queue(q.Name))
	h.run(h.daemon(nil))
	h.eventually("low evicted, high bound", 15*time.Second, func() string {
		h.kubelet()
		var high corev1.Pod
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "high"}, &high); err != nil {
			return err.Error()
		}
		if high.Spec.NodeName == "" {
			return "high pending"
		}
		for _, p := range h.pods() {
			if p.Name == "low" {
				return "low still exists"
			}
		}
		return ""
	})
}

// slowBinds delays the bind of pod NAME-i by i times d, so that a scheduler can be
// stopped in the middle of a gang's binds.
func slowBinds(d time.Duration) client.Client {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		panic(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if sub == "binding" {
				name := obj.GetName()
				i, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
				select {
				case <-time.After(time.Duration(i) * d):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
	})
}

// TestKillRestartMidGang stops the scheduler in the middle of a gang's binds 20 times
// and starts a new one: after each restart the gang is whole (or wholly unbound) within
// one retry period.
func TestKillRestartMidGang(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.node("b", 8, nil)
	const size = 8
	partialSeen := 0
	for round := range 20 {
		name := fmt.Sprintf("g%d", round)
		h.podGroup(name, size, "")
		for i := range size {
			h.pod(h.makePod(fmt.Sprintf("%s-%d", name, i)).GPU(2).Group(name))
		}
		// The gang's binds land 40 ms apart; stop the scheduler after the first.
		d := h.daemon(slowBinds(40 * time.Millisecond))
		stop := h.run(d)
		deadline := time.Now().Add(10 * time.Second)
		for h.bound() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		stop()
		if n := h.bound(); n > 0 && n < size {
			partialSeen++
		}
		h.run(h.daemon(nil))
		h.eventually(fmt.Sprintf("round %d: gang whole after restart", round), 5*time.Second, func() string {
			if n := h.bound(); n != size {
				return fmt.Sprintf("%d of %d bound", n, size)
			}
			return ""
		})
		// Finish the gang so the next round has the nodes.
		zero := int64(0)
		for _, p := range h.pods() {
			_ = h.c.Delete(h.ctx, &p, &client.DeleteOptions{GracePeriodSeconds: &zero})
		}
		h.eventually("pods gone", 5*time.Second, func() string {
			if n := len(h.pods()); n > 0 {
				return fmt.Sprintf("%d pods left", n)
			}
			return ""
		})
	}
	if partialSeen == 0 {
		t.Fatal("no stop fell in the middle of a gang's binds; the test proves nothing")
	}
	t.Logf("%d of 20 stops left a gang partially bound; every one was whole after the restart", partialSeen)
}

// TestStopMidBindIsQuiet: binds cut short because the scheduler stops are not the
// pods' failures: no FailedBinding event per pod, none counted failed, and the pods stay
// pending for the next leader.
func TestStopMidBindIsQuiet(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	const pods = 4
	for i := range pods {
		h.pod(h.makePod(fmt.Sprintf("p-%d", i)).GPU(1))
	}
	var tried atomic.Int32
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	stuck := interceptor.NewClient(c, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if sub == "binding" {
				tried.Add(1)
				<-ctx.Done() // an API server that does not answer before the stop
				return ctx.Err()
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
	})
	rec := events.NewFakeRecorder(100)
	d := h.daemonRecording(stuck, rec)
	ctx, cancel := context.WithCancel(h.ctx)
	go func() {
		for tried.Load() < pods && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	sum, err := d.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	close(rec.Events)
	var recorded []string
	for e := range rec.Events {
		recorded = append(recorded, e)
	}
	if tried.Load() != pods || sum.Bound != 0 || sum.BindFailed != 0 || len(recorded) != 0 {
		t.Errorf("%d binds tried, session %+v, events %q; want %d tried, none bound or failed, no event", tried.Load(), sum, recorded, pods)
	}
	if h.bound() != 0 {
		t.Errorf("%d pods bound", h.bound())
	}
}

// TestQueueCapabilityAndReclaim: a queue at its capability keeps its next job pending
// and says so; another queue's job reclaims GPUs a queue holds beyond its deserved share.
func TestQueueCapabilityAndReclaim(t *testing.T) {
	h := newHarness(t)
	h.reclaimAfter = time.Second // the profile's 10 minutes, shortened
	h.node("a", 8, nil)
	for _, q := range []*tesserav1.Queue{
		apitest.MakeQueue("dev").Weight(1).Deserved(tesserav1.ResourceGPU, "2").Capability(tesserav1.ResourceGPU, "6").Obj(),
		apitest.MakeQueue("prod").Weight(1).Deserved(tesserav1.ResourceGPU, "6").Obj(),
	} {
		if err := h.c.Create(h.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		h.pod(h.makePod(fmt.Sprintf("dev-%d", i)).GPU(2).Queue("dev"))
	}
	h.run(h.daemon(nil))
	h.eventually("dev at its capability of 6 GPUs", 10*time.Second, func() string {
		if n := h.bound(); n != 3 {
			return fmt.Sprintf("%d of 3 bound", n)
		}
		var q tesserav1.Queue
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: "dev"}, &q); err != nil {
			return err.Error()
		}
		if g := q.Status.Allocated[tesserav1.ResourceGPU]; g.Value() != 6 || q.Status.Running != 3 {
			return fmt.Sprintf("dev status %+v", q.Status)
		}
		return ""
	})
	if e := h.explain("pod", h.ns+"/dev-3"); e.Reason == "" || !strings.Contains(e.Message, "capability") {
		t.Fatalf("pending dev pod: %+v", e)
	}
	h.pod(h.makePod("prod-0").GPU(4).Queue("prod"))
	h.waitPodBound("prod reclaims from dev", "prod-0", 15*time.Second)
}

// TestReclaimPastExhaustedBudget: a queue's pods borrowed beyond its deserved share
// carry a PodDisruptionBudget that allows no disruption (maxUnavailable 0). Another
// queue's pending pod reclaims them all the same: the Eviction API refuses, and once
// budgets have refused for the disruption-budget timeout the victim is deleted.
func TestReclaimPastExhaustedBudget(t *testing.T) {
	h := newHarness(t)
	h.reclaimAfter = time.Second  // the profile's 10 minutes, shortened
	h.budgetTimeout = time.Second // daemon.DefaultDisruptionBudgetTimeout, shortened
	h.node("a", 8, nil)
	for _, q := range []*tesserav1.Queue{
		apitest.MakeQueue("budget-dev").Weight(1).Deserved(tesserav1.ResourceGPU, "2").Obj(),
		apitest.MakeQueue("budget-prod").Weight(1).Deserved(tesserav1.ResourceGPU, "6").Obj(),
	} {
		if err := h.c.Create(h.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "never"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{tesserav1.LabelQueue: "budget-dev"}}}}
	if err := h.c.Create(h.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	// What the disruption controller, which does not run here, writes: no disruption
	// allowed (unprocessed, the Eviction API would ask the client to retry in 10s).
	pdb.Status.ObservedGeneration = pdb.Generation
	if err := h.c.Status().Update(h.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		h.pod(h.makePod(fmt.Sprintf("dev-%d", i)).GPU(2).Queue("budget-dev"))
	}
	rec := events.NewFakeRecorder(1000)
	h.run(h.daemonRecording(nil, rec))
	h.eventually("dev runs on the node", 10*time.Second, func() string {
		// The Eviction API lets pending pods go whatever their budget: all four
		// must be running before prod arrives.
		if n := h.startBound(); n != 4 {
			return fmt.Sprintf("%d of 4 running", n)
		}
		return ""
	})
	h.pod(h.makePod("prod-0").GPU(4).Queue("budget-prod"))
	h.waitPodBound("prod reclaims through the budget", "prod-0", 20*time.Second)
	var blocked, deleted bool
	for len(rec.Events) > 0 {
		e := <-rec.Events
		blocked = blocked || strings.Contains(e, "EvictionBlocked")
		deleted = deleted || strings.Contains(e, "Preempted") && strings.Contains(e, "PodDisruptionBudgets refused its eviction for 1s")
	}
	if !blocked || !deleted {
		t.Errorf("events: blocked %v, deleted past the budget %v; want both", blocked, deleted)
	}
}
