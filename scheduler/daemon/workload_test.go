package daemon_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// create creates the workload object the YAML describes in the test's namespace, and
// returns it as the API server has it.
func (h *harness) create(doc string) *unstructured.Unstructured {
	h.t.Helper()
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
		h.t.Fatal(err)
	}
	o.SetNamespace(h.ns)
	if err := h.c.Create(h.ctx, o); err != nil {
		h.t.Fatal(err)
	}
	return o
}

// owned makes w a pod controlled by o.
func owned(w *apitest.PodWrapper, o *unstructured.Unstructured) *apitest.PodWrapper {
	yes := true
	return w.OwnerReference(metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), Controller: &yes})
}

// stillUnbound checks that no pod of the namespace binds during a few sessions.
func (h *harness) stillUnbound(what string) {
	h.t.Helper()
	deadline := time.Now().Add(15 * h.period)
	for time.Now().Before(deadline) {
		if n := h.bound(); n != 0 {
			h.t.Fatalf("%s: %d pod(s) bound", what, n)
		}
		time.Sleep(h.period)
	}
}

// allBound waits until n pods of the namespace are bound.
func (h *harness) allBound(what string, n int) {
	h.t.Helper()
	h.eventually(what, 20*time.Second, func() string {
		if b := h.bound(); b != n {
			return fmt.Sprintf("%d of %d bound", b, n)
		}
		return ""
	})
}

// TestJobSetGangIsWhole: a JobSet of two replicated jobs that asks more GPUs than are
// free never starts partly (its child Jobs, each small enough alone, are not gangs of
// their own) and starts whole when room appears; its PodGroup is owned by the JobSet.
func TestJobSetGangIsWhole(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	js := h.create(`
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template: {spec: {restartPolicy: Never, containers: [{name: main, image: trainer}]}}
`)
	h.run(h.daemon(nil))
	for job := range 2 {
		for i := range 2 {
			w := h.makePod(fmt.Sprintf("train-workers-%d-%d", job, i)).GPU(4).ControlledBy("Job", fmt.Sprintf("train-workers-%d", job))
			for k, v := range map[string]string{workloads.LabelJobSetName: "train", workloads.LabelJobSetUID: string(js.GetUID()),
				"jobset.sigs.k8s.io/replicatedjob-name": "workers", workloads.LabelJobSetAttempt: "0", "jobset.sigs.k8s.io/job-index": fmt.Sprint(job)} {
				w.Label(k, v).Annotation(k, v)
			}
			h.pod(w)
		}
	}
	h.stillUnbound("16 GPUs asked of 8")
	if pg := h.getPodGroup("train"); pg == nil || len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID != js.GetUID() || pg.Spec.MinMember != 4 {
		t.Fatalf("PodGroup train = %+v; want minMember 4, owned by the JobSet", pg)
	}
	// explain sees the same gang as the scheduler: the JobSet's, not a child Job's.
	if e := h.explain("podgroup", h.ns+"/train"); e.Reason != "ClusterTooSmall" || len(e.Pods) != 4 {
		t.Errorf("explain podgroup train: %+v; want the JobSet's 4 pods, ClusterTooSmall", e)
	}
	h.node("b", 8, nil)
	h.allBound("the JobSet starts whole", 4)
}

// TestRayClusterBindsTogether: a RayCluster's head does not bind before its workers
// exist; head and workers then bind together.
func TestRayClusterBindsTogether(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	rc := h.create(`
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    rayStartParams: {}
    template: {spec: {containers: [{name: ray-head, image: rayproject/ray}]}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: 2
    minReplicas: 0
    maxReplicas: 4
    rayStartParams: {}
    template: {spec: {containers: [{name: ray-worker, image: rayproject/ray}]}}
`)
	h.run(h.daemon(nil))
	ray := func(name, typ string) *apitest.PodWrapper {
		return owned(h.makePod(name).Label(workloads.LabelRayCluster, "rc").Label("ray.io/node-type", typ).Label("ray.io/group", typ), rc)
	}
	h.pod(ray("rc-head-x", "head"))
	h.stillUnbound("the head alone")
	h.pod(ray("rc-gpu-worker-a", "worker").GPU(4))
	h.pod(ray("rc-gpu-worker-b", "worker").GPU(4))
	h.allBound("head and workers", 3)
}

// TestWorkloadAPIGang: pods of a Workload API PodGroup with a gang policy (feature
// gate GenericWorkload, scheduling.k8s.io/v1alpha3) bind all or nothing.
func TestWorkloadAPIGang(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.create(`
apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata: {name: gang}
spec: {schedulingPolicy: {gang: {minCount: 3}}}
`)
	h.run(h.daemon(nil))
	member := func(name string) *apitest.PodWrapper {
		w := h.makePod(name).GPU(2)
		group := "gang"
		w.Obj().Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
		return w
	}
	h.pod(member("gang-0"))
	h.pod(member("gang-1"))
	h.stillUnbound("2 of a gang of 3")
	h.pod(member("gang-2"))
	h.allBound("the gang of 3", 3)
}

// TestLeaderReadyGroupStartsInTwoSteps: a LeaderWorkerSet group under LeaderReady
// places its leader alone; while its workers are not made (the controller waits for the
// leader to be ready) the bound leader is not evicted as a partial gang; the workers,
// once made, bind beside it as one gang, and the group's PodGroup grows to its size.
func TestLeaderReadyGroupStartsInTwoSteps(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	h.create(`
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: serve}
spec:
  startupPolicy: LeaderReady
  leaderWorkerTemplate:
    size: 3
    workerTemplate: {spec: {containers: [{name: main, image: server}]}}
`)
	member := func(name, worker string) *apitest.PodWrapper {
		return h.makePod(name).GPU(2).Label(workloads.LabelLWSName, "serve").Label(workloads.LabelLWSGroupIndex, "0").
			Label(workloads.LabelLWSWorkerIndex, worker).Annotation(workloads.AnnotationLWSSize, "3")
	}
	h.pod(member("serve-0", "0"))
	h.run(h.daemon(nil))
	h.allBound("the leader alone", 1)
	time.Sleep(5 * h.period)
	for _, p := range h.pods() {
		if p.DeletionTimestamp != nil {
			t.Fatalf("%s evicted while the group's workers were not made yet", p.Name)
		}
	}
	h.pod(member("serve-0-1", "1"))
	h.pod(member("serve-0-2", "2"))
	h.allBound("the workers beside their leader", 3)
	h.eventually("the group's PodGroup sized 3", 10*time.Second, func() string {
		if pg := h.getPodGroup("serve-0"); pg == nil || pg.Spec.MinMember != 3 {
			return fmt.Sprintf("%+v", pg)
		}
		return ""
	})
}
