package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// TestTenantKueueGangLabelEdit: a pod of a Kueue pod group may not leave it, nor shrink
// the gang its pods are scheduled as: the tenant's edits of kueue.x-k8s.io/pod-group-name
// and pod-group-total-count are refused, and so is joining a scheduler-plugins
// PodGroup after creation.
func TestTenantKueueGangLabelEdit(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)
	pod := tenantPod("kueue-gang-0", 1)
	pod.Labels = map[string]string{tesserav1.KueuePodGroupName: "train"}
	pod.Annotations = map[string]string{tesserav1.KueuePodGroupTotalCount: "4"}
	must(t, "tenant creates a pod of a Kueue pod group", tenant.Create(ctx, pod))

	for _, edit := range []struct {
		what string
		edit func(p *corev1.Pod)
		want string
	}{
		{"leave the pod group", func(p *corev1.Pod) { p.Labels[tesserav1.KueuePodGroupName] = "solo" },
			`metadata.labels[kueue.x-k8s.io/pod-group-name] (from "train" to "solo")`},
		{"drop the pod group", func(p *corev1.Pod) { delete(p.Labels, tesserav1.KueuePodGroupName) },
			`metadata.labels[kueue.x-k8s.io/pod-group-name] (from "train" to "")`},
		{"shrink the gang", func(p *corev1.Pod) { p.Annotations[tesserav1.KueuePodGroupTotalCount] = "1" },
			`metadata.annotations[kueue.x-k8s.io/pod-group-total-count] (from "4" to "1")`},
		{"join a coscheduling PodGroup", func(p *corev1.Pod) { p.Labels[tesserav1.CoschedulingPodGroup] = "other" },
			`metadata.labels[scheduling.x-k8s.io/pod-group]`},
	} {
		p := get(ctx, t, tenant, pod)
		edit.edit(p)
		refused(t, "tenant edits its pod to "+edit.what, tenant.Update(ctx, p), edit.want, "cannot change after the Pod is created")
	}
}

// TestTenantMinAvailableEdit: a Job's tessera.dev/min-available is its gang size, fixed
// when it is admitted; the tenant's edit of it (and of the Job's queue) is refused, while
// other annotations may change.
func TestTenantMinAvailableEdit(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)
	job := tenantJob("min-available-edit", tenantPod("", 1))
	job.Annotations = map[string]string{tesserav1.AnnotationMinAvailable: "4"}
	job.Spec.Parallelism, job.Spec.Completions = ptr.To[int32](4), ptr.To[int32](4)
	must(t, "tenant creates a gang Job of 4", tenant.Create(ctx, job))

	edit := func(f func(a map[string]string)) error {
		return retryOnConflict(ctx, tenant, job, func() { f(job.Annotations) })
	}
	refused(t, "tenant shrinks its Job's gang to 1", edit(func(a map[string]string) { a[tesserav1.AnnotationMinAvailable] = "1" }),
		`metadata.annotations[tessera.dev/min-available] (from "4" to "1") cannot change after the Job is created`, "delete the Job")
	refused(t, "tenant drops its Job's gang size", edit(func(a map[string]string) { delete(a, tesserav1.AnnotationMinAvailable) }),
		`metadata.annotations[tessera.dev/min-available] (from "4" to "")`)
	must(t, "tenant annotates its Job otherwise", edit(func(a map[string]string) { a["note"] = "rerun" }))
}

// retryOnConflict gets o afresh, applies f and updates it as c, again on a conflict.
func retryOnConflict(ctx context.Context, c client.Client, o client.Object, f func()) error {
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		if o.GetAnnotations() == nil {
			o.SetAnnotations(map[string]string{})
		}
		f()
		if err := c.Update(ctx, o); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// TestTenantDefaultQueueInTeamNamespace: the chart's default Queue selects every tenant
// namespace, but a namespace a team's Queue selects is that team's: a pod there that
// names the default queue is refused (it would escape the team Queue's
// spec.capability), a pod that names none goes to the team's Queue, and an admitted pod
// may not be relabelled to default.
func TestTenantDefaultQueueInTeamNamespace(t *testing.T) {
	_, ctx, tenant := tenantWithQueues(t)
	want := []string{`namespace "` + tenantNS + `" belongs to queue(s) [team-a]`, "spec.capability", "tessera.dev/queue"}
	refused(t, "tenant pod labelled into the default queue", tenant.Create(ctx, inQueue(tenantPod("default-in-team", 1), tesserav1.DefaultQueue)), want...)

	unnamed := tenantPod("no-queue-in-team", 1)
	must(t, "tenant pod naming no queue", tenant.Create(ctx, unnamed))
	if q := unnamed.Labels[tesserav1.LabelQueue]; q != "team-a" {
		t.Fatalf("a pod naming no queue in team a's namespace went to queue %q, want team-a", q)
	}
	p := get(ctx, t, tenant, unnamed)
	p.Labels[tesserav1.LabelQueue] = tesserav1.DefaultQueue
	refused(t, "tenant relabels its pod into the default queue", tenant.Update(ctx, p),
		`metadata.labels[tessera.dev/queue] (from "team-a" to "default")`)
}

// TestTenantDisruptionBudget: the tenant's PodDisruptionBudget that allows no
// disruption (maxUnavailable 0) over pods its queue borrows does not keep them from
// reclaim: the session picks them, the Eviction API refuses (429), and the scheduler
// deletes them once budgets have refused for --disruption-budget-timeout
// (TestReclaimPastExhaustedBudget in scheduler/daemon runs that part).
func TestTenantDisruptionBudget(t *testing.T) {
	const c = "budget"
	e, ctx, tenant, nodes := reclaimCase(t, c, "budget-a", "8", "budget-b", "8", 2)

	zero := intstr.FromInt32(0)
	pdb := ofCase(c, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "never-disrupt"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{tesserav1.LabelQueue: "budget-a"}}}})
	must(t, "tenant creates a budget that allows no disruption", tenant.Create(ctx, pdb))
	// What the disruption controller, which does not run here, writes: no disruption
	// allowed (unprocessed, the Eviction API would ask the client to retry in 10s).
	pdb.Status.ObservedGeneration = pdb.Generation
	must(t, "budget status", e.Client.Status().Update(ctx, pdb))
	var pods []*corev1.Pod
	for i, name := range []string{"budget-kept", "budget-borrowed"} {
		p := inQueue(tenantPod(name, 8), "budget-a")
		must(t, "tenant creates "+name, tenant.Create(ctx, ofCase(c, p)))
		runOn(ctx, t, e, p, nodes[i], time.Now().Add(-time.Hour+time.Duration(i)*time.Minute))
		pods = append(pods, p)
	}
	b := inQueue(tenantPod("budget-b-0", 8), "budget-b")
	b.Namespace = "tenant-b"
	must(t, "team b's pending pod", e.Client.Create(ctx, ofCase(c, b)))

	_, r := session(ctx, t, e, c)
	victims := evictedPods(t, r)
	if len(victims) != 1 || !strings.HasPrefix(victims[0], tenantNS+"/budget-") {
		t.Fatalf("reclaimed %v, want one of the budget's pods beyond the queue's deserved 8 GPUs", victims)
	}
	victim := pods[0]
	if victims[0] != tenantNS+"/"+victim.Name {
		victim = pods[1]
	}
	err := controller.Evict(ctx, asScheduler(t, e), get(ctx, t, e.Client, victim))
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting %s through its budget: %v, want 429 (the scheduler then deletes it once the budget has refused for its timeout)", victim.Name, err)
	}
	t.Logf("eviction refused: %v", err)
}

// TestTenantJobQueueEdit: a Job's queue is decided when it is admitted; the tenant's
// relabel of its Job into another queue, its namespace's own or the default one, is
// refused (the pods the Job makes later would be charged there unchecked).
func TestTenantJobQueueEdit(t *testing.T) {
	_, ctx, tenant := tenantWithQueues(t)
	job := tenantJob("job-queue-edit", inQueue(tenantPod("", 1), "team-a"))
	must(t, "tenant creates a Job in its queue", tenant.Create(ctx, job))
	for _, q := range []string{tesserav1.DefaultQueue, "team-b"} {
		err := retryOnConflict(ctx, tenant, job, func() { job.Labels[tesserav1.LabelQueue] = q })
		refused(t, "tenant relabels its Job into queue "+q, err,
			`metadata.labels[tessera.dev/queue] (from "team-a" to "`+q+`") cannot change after the Job is created`)
	}
}
