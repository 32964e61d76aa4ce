package e2e

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// workloadGangs runs the gangs of real workload controllers on the two nodes left (16
// GPUs), each made while a blocker Job holds 8 of them: a JobSet of two replicated Jobs
// (the JobSet controller, with its webhooks), a RayCluster (the KubeRay operator), and a
// Job whose pods belong to a Workload API PodGroup (kube-apiserver with feature gate
// GenericWorkload and scheduling.k8s.io/v1alpha3; the Job controller's own
// Workload/PodGroup needs the alpha gate WorkloadWithJob, which would turn every Job of
// the run into a Workload API group). Some pods of each would fit in the 8 free GPUs;
// none binds while the whole does not fit, and all bind once the blocker is deleted.
func (s *scenario) workloadGangs() {
	// Pods asking 4 GPUs each (nvidia.com/gpu, rewritten by the webhook) that run
	// until deleted.
	job := Job(TenantNamespace, "", 2, 4, 0, 0).Spec
	pod := job.Template
	replicatedJob := func(name string) map[string]any {
		return map[string]any{"name": name, "replicas": int64(1), "template": map[string]any{"spec": s.fields(&job)}}
	}
	jobSet := s.object("jobset.x-k8s.io/v1alpha2", "JobSet", "train", map[string]any{
		"replicatedJobs": []any{replicatedJob("trainer"), replicatedJob("evaluator")},
	})
	s.wholeOnceRoom("JobSet train (2 replicated Jobs of 2 pods x 4 GPUs)", 4,
		client.MatchingLabels{workloads.LabelJobSetName: "train"}, jobSet)

	head := Job(TenantNamespace, "", 1, 2, 0, 0).Spec.Template
	rayCluster := s.object("ray.io/v1", "RayCluster", "ray", map[string]any{
		"headGroupSpec": map[string]any{"rayStartParams": map[string]any{}, "template": s.fields(&head)},
		"workerGroupSpecs": []any{map[string]any{
			"groupName": "gpu", "replicas": int64(2), "minReplicas": int64(2), "maxReplicas": int64(2),
			"rayStartParams": map[string]any{}, "template": s.fields(&pod),
		}},
	})
	s.wholeOnceRoom("RayCluster ray (a 2-GPU head, 2 workers x 4 GPUs)", 3,
		client.MatchingLabels{workloads.LabelRayCluster: "ray"}, rayCluster)

	podGroup := s.object("scheduling.k8s.io/v1alpha3", "PodGroup", "gang", map[string]any{
		"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(3)}},
	})
	gang := Job(TenantNamespace, "gang", 3, 4, 0, 0)
	gang.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("gang")}
	s.wholeOnceRoom("Job gang in Workload API PodGroup gang (gang minCount 3, 3 pods x 4 GPUs)", 3,
		client.MatchingLabels{batchv1.JobNameLabel: "gang"}, podGroup, gang)
}

// wholeOnceRoom creates objs while a blocker Job holds 8 of the 16 free GPUs, waits for
// their n pods (those labelled selector), checks that none binds for 20 seconds,
// deletes the blocker, waits for all n bound, and deletes objs and their pods.
func (s *scenario) wholeOnceRoom(what string, n int, selector client.MatchingLabels, objs ...client.Object) {
	s.t.Helper()
	blocker := Job(TenantNamespace, "blocker", 1, 8, 0, 0)
	s.create(blocker)
	blockerPods := client.MatchingLabels{batchv1.JobNameLabel: blocker.Name}
	s.wait(time.Minute, "the blocker bound", func() error { return s.bound(blockerPods, 1) })
	for _, o := range objs {
		s.create(o)
	}
	s.wait(time.Minute, what+": its pods created", func() error {
		pods, err := s.pods(selector)
		if err != nil || len(pods) != n {
			return fmt.Errorf("%d of %d pods (%v)", len(pods), n, err)
		}
		return nil
	})
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if err := s.bound(selector, 0); err != nil {
			s.t.Fatalf("%s started partly while it does not fit: %v", what, err)
		}
	}
	why := "no PodScheduled condition"
	if pods, err := s.pods(selector); err == nil && len(pods) > 0 {
		for _, c := range pods[0].Status.Conditions {
			if c.Type == corev1.PodScheduled {
				why = c.Reason + ": " + c.Message
			}
		}
	}
	s.tl.Logf("%s: %d pods made by its controller, none bound for 20s with 8 of 16 GPUs free (%.160s)", what, n, why)
	s.gangGroup(objs[0], n)
	s.delete(blocker)
	s.wait(time.Minute, what+" bound whole", func() error { return s.bound(selector, n) })
	s.tl.Logf("the blocker deleted: %s bound whole", what)
	for _, o := range objs {
		s.delete(o)
	}
	s.wait(2*time.Minute, what+" and the blocker gone", func() error {
		for _, sel := range []client.MatchingLabels{selector, blockerPods} {
			if pods, err := s.pods(sel); err != nil || len(pods) > 0 {
				return fmt.Errorf("%d pods left (%v)", len(pods), err)
			}
		}
		if err := s.c.Client.Get(s.ctx, client.ObjectKeyFromObject(blocker), &batchv1.Job{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the blocker Job is still there (%v)", err)
		}
		return nil
	})
}

// gangGroup checks the scheduler's view of the gang of workload w: its own PodGroup
// named after w, owned by it, of minMember n; a Workload API PodGroup stands for its
// gang itself and gets none.
func (s *scenario) gangGroup(w client.Object, n int) {
	s.t.Helper()
	s.wait(30*time.Second, "the scheduler's PodGroup of "+w.GetName(), func() error {
		var pg tesserav1.PodGroup
		err := s.c.Client.Get(s.ctx, client.ObjectKeyFromObject(w), &pg)
		if w.GetObjectKind().GroupVersionKind().Group == "scheduling.k8s.io" {
			if !apierrors.IsNotFound(err) {
				return giveUp{fmt.Errorf("a Workload API gang got a PodGroup of the scheduler's too: %v", err)}
			}
			return nil
		}
		if err != nil {
			return err
		}
		if pg.Spec.MinMember != int32(n) || len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID != w.GetUID() {
			return fmt.Errorf("minMember %d, owners %v; want %d, owned by %s %s", pg.Spec.MinMember, pg.OwnerReferences, n, w.GetObjectKind().GroupVersionKind().Kind, w.GetUID())
		}
		return nil
	})
}

// pods lists the pods of the tenant's namespace labelled selector.
func (s *scenario) pods(selector client.MatchingLabels) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := s.c.Client.List(s.ctx, &pods, client.InNamespace(TenantNamespace), selector)
	return pods.Items, err
}

// bound returns nil when exactly n of the pods labelled selector are bound.
func (s *scenario) bound(selector client.MatchingLabels, n int) error {
	pods, err := s.pods(selector)
	if err != nil {
		return err
	}
	if b := Bound(pods); b != n {
		return fmt.Errorf("%d of %d pods bound, want %d", b, len(pods), n)
	}
	return nil
}

func (s *scenario) delete(o client.Object) {
	s.t.Helper()
	if err := s.c.Client.Delete(s.ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		s.t.Fatalf("delete %s/%s: %v", o.GetNamespace(), o.GetName(), err)
	}
}

// object is a custom resource of the tenant's namespace with spec.
func (s *scenario) object(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	o.SetNamespace(TenantNamespace)
	o.SetName(name)
	return o
}

// fields is a typed value as the field of an unstructured object.
func (s *scenario) fields(v any) map[string]any {
	s.t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}
