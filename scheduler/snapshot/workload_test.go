package snapshot

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// object decodes a workload object from YAML, as an informer hands it out.
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
		t.Fatal(err)
	}
	return o
}

// controlledBy makes the pod controlled by an object of apiVersion and kind.
func controlledBy(w *apitest.PodWrapper, apiVersion, kind, name, uid string) *apitest.PodWrapper {
	yes := true
	return w.OwnerReference(metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes})
}

// jobSetPod is a pod of JobSet js as the JobSet controller labels it (through its child
// Job's template) and the Job controller owns it; the webhook stamped min-available on
// the child Job's template.
func jobSetPod(name, js, rjob, attempt string) *apitest.PodWrapper {
	w := testPod(name, "ns").Queue("research")
	for k, v := range map[string]string{workloads.LabelJobSetName: js, workloads.LabelJobSetUID: "uid-" + js,
		"jobset.sigs.k8s.io/replicatedjob-name": rjob, workloads.LabelJobSetAttempt: attempt,
		"jobset.sigs.k8s.io/replicatedjob-replicas": "2", "jobset.sigs.k8s.io/job-index": "0"} {
		w.Label(k, v).Annotation(k, v)
	}
	return w.ControlledBy("Job", js+"-"+rjob+"-0").Annotation(tesserav1.AnnotationMinAvailable, "2")
}

// kubeflowPod is a pod of Kubeflow training job job, labelled by operator.
func kubeflowPod(name, job, operator string) *apitest.PodWrapper {
	return testPod(name, "ns").Label(workloads.LabelKubeflowJobName, job).Label(workloads.LabelKubeflowOperator, operator)
}

// lwsPod is worker worker of group group of LeaderWorkerSet lws, groups of 4 pods, as
// the LeaderWorkerSet controller labels it.
func lwsPod(name, group, worker string) *apitest.PodWrapper {
	return testPod(name, "ns").Label(workloads.LabelLWSName, "lws").Label(workloads.LabelLWSGroupIndex, group).
		Label(workloads.LabelLWSWorkerIndex, worker).Annotation(workloads.AnnotationLWSSize, "4")
}

// workloadAPIPod is a pod of the Workload API's PodGroup group, named in its
// spec.schedulingGroup.
func workloadAPIPod(name, group string) *corev1.Pod {
	p := testPod(name, "ns").Obj()
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

const jobSetYAML = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: ns, uid: uid-train, generation: 1}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template: {spec: {parallelism: 4, completions: 4}}
  - name: driver
    template: {spec: {parallelism: 2, completions: 1}}
`

// TestWorkloadGangs: pods shaped as each controller writes them form one gang of the
// whole workload, sized from the owning object or from what the pods declare.
func TestWorkloadGangs(t *testing.T) {
	all := workloads.Kinds()
	cases := []struct {
		name  string
		kinds []workloads.Kind
		add   func(t *testing.T, b *Builder)
		job   string
		tasks string
		min   int
		held  string // part of the Held message; "" for a job that is not held
		uid   string
	}{
		{name: "JobSet: one gang over its replicated jobs", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, jobSetYAML))
			b.AddPod(jobSetPod("train-workers-0-0", "train", "workers", "0").Obj(), 0)
			b.AddPod(jobSetPod("train-driver-0-0", "train", "driver", "0").Obj(), 0)
		}, job: "train", tasks: "train-driver-0-0,train-workers-0-0", min: 2*4 + 1, uid: "uid-train"},
		{name: "JobSet: a restart attempt is a gang of its own", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, jobSetYAML))
			b.AddPod(jobSetPod("old", "train", "workers", "0").RunningOn("n1", epoch).Obj(), 0)
			b.AddPod(jobSetPod("new", "train", "workers", "1").Obj(), 0)
		}, job: "train-attempt-1", tasks: "new", min: 9},
		{name: "JobSet: its tessera.dev/min-available annotation sizes it", add: func(t *testing.T, b *Builder) {
			o := object(t, jobSetYAML)
			o.SetAnnotations(map[string]string{tesserav1.AnnotationMinAvailable: "6"})
			b.AddWorkload(o)
			b.AddPod(jobSetPod("p", "train", "workers", "0").Obj(), 0)
		}, job: "train", tasks: "p", min: 6},
		{name: "JobSet InOrder: the child Jobs made so far", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, strings.Replace(jobSetYAML, "spec:\n  replicatedJobs:", "spec:\n  startupPolicy: {startupPolicyOrder: InOrder}\n  replicatedJobs:", 1)))
			for _, n := range []string{"train-workers-0", "train-workers-1"} {
				b.AddJob(testJob(n, "ns", 4).Label(workloads.LabelJobSetName, "train").Label(workloads.LabelJobSetAttempt, "0").Obj())
			}
			b.AddJob(testJob("other", "ns", 4).Label(workloads.LabelJobSetName, "train").Label(workloads.LabelJobSetAttempt, "1").Obj())
			b.AddPod(jobSetPod("p", "train", "workers", "0").Obj(), 0)
		}, job: "train", tasks: "p", min: 8},
		{name: "JobSet not seen yet: held", add: func(t *testing.T, b *Builder) {
			b.AddPod(jobSetPod("p", "train", "workers", "0").Obj(), 0)
		}, job: "train", tasks: "p", min: 1, held: "waiting for JobSet ns/train", uid: "uid-train"},
		{name: "JobSet kind not fed: each child Job is a gang", kinds: []workloads.Kind{}, add: func(t *testing.T, b *Builder) {
			b.AddJob(testJob("train-workers-0", "ns", 4).Obj())
			b.AddPod(jobSetPod("p", "train", "workers", "0").Obj(), 0)
		}, job: "train-workers-0", tasks: "p", min: 2},
		{name: "RayCluster: head and workers × hosts within [minReplicas, maxReplicas], suspended groups left out", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: ns, uid: uid-rc}
spec:
  headGroupSpec: {}
  workerGroupSpecs:
  - {groupName: gpu, replicas: 3, minReplicas: 1, numOfHosts: 2}
  - {groupName: cpu, replicas: 2}
  - {groupName: off, replicas: 5, suspend: true}
  - {groupName: raised, replicas: 1, minReplicas: 2}
  - {groupName: capped, replicas: 9, maxReplicas: 4}
`))
			for _, n := range []struct{ name, typ string }{{"rc-head-x", "head"}, {"rc-gpu-worker-a", "worker"}} {
				b.AddPod(controlledBy(testPod(n.name, "ns").Label(workloads.LabelRayCluster, "rc").Label("ray.io/node-type", n.typ),
					"ray.io/v1", "RayCluster", "rc", "uid-rc").Obj(), 0)
			}
		}, job: "rc", tasks: "rc-gpu-worker-a,rc-head-x", min: 1 + 3*2 + 2 + 2 + 4, uid: "uid-rc"},
		{name: "RayCluster autoscaling: minReplicas", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: ns, uid: uid-rc}
spec:
  enableInTreeAutoscaling: true
  workerGroupSpecs: [{groupName: gpu, replicas: 3, minReplicas: 1, maxReplicas: 8}]
`))
			b.AddPod(controlledBy(testPod("rc-head", "ns").Label(workloads.LabelRayCluster, "rc"), "ray.io/v1", "RayCluster", "rc", "uid-rc").Obj(), 0)
		}, job: "rc", tasks: "rc-head", min: 2},
		{name: "RayJob submitter: a batch Job of one, apart from the cluster", add: func(t *testing.T, b *Builder) {
			b.AddJob(testJob("rj", "ns", 1).Obj())
			b.AddPod(testPod("rj-submit", "ns").Label("ray.io/originated-from-crd", "RayJob").ControlledBy("Job", "rj").Obj(), 0)
		}, job: "rj", tasks: "rj-submit", min: 1},
		{name: "LeaderWorkerSet: one gang per group, sized by the pods", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: lws, namespace: ns}, spec: {replicas: 2}}`))
			for _, p := range []struct{ name, group, worker string }{{"lws-0", "0", "0"}, {"lws-0-1", "0", "1"}, {"lws-1", "1", "0"}} {
				b.AddPod(lwsPod(p.name, p.group, p.worker).Obj(), 0)
			}
		}, job: "lws-0", tasks: "lws-0,lws-0-1", min: 4},
		{name: "LeaderWorkerSet LeaderReady: the leader alone first", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: lws, namespace: ns}, spec: {startupPolicy: LeaderReady}}`))
			b.AddPod(lwsPod("lws-0", "0", "0").Obj(), 0)
		}, job: "lws-0", tasks: "lws-0", min: 1},
		{name: "LeaderWorkerSet LeaderReady: the leader placed, alone until its workers are made", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: lws, namespace: ns}, spec: {startupPolicy: LeaderReady}}`))
			b.AddPod(lwsPod("lws-0", "0", "0").RunningOn("n1", time.Unix(0, 0)).Obj(), 0)
		}, job: "lws-0", tasks: "lws-0", min: 1},
		{name: "LeaderWorkerSet LeaderReady: the whole group once its workers are made", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: lws, namespace: ns}, spec: {startupPolicy: LeaderReady}}`))
			for _, p := range []struct{ name, worker string }{{"lws-0", "0"}, {"lws-0-1", "1"}} {
				b.AddPod(lwsPod(p.name, "0", p.worker).Obj(), 0)
			}
		}, job: "lws-0", tasks: "lws-0,lws-0-1", min: 4},
		{name: "PyTorchJob: Σ replicas", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns, uid: uid-pt}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1}
    Worker: {replicas: 3}
`))
			b.AddPod(controlledBy(kubeflowPod("pt-master-0", "pt", "pytorchjob-controller").Label("training.kubeflow.org/replica-type", "master"),
				"kubeflow.org/v1", "PyTorchJob", "pt", "uid-pt").Obj(), 0)
		}, job: "pt", tasks: "pt-master-0", min: 4, uid: "uid-pt"},
		{name: "PyTorchJob: schedulingPolicy.minAvailable", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns}
spec:
  runPolicy: {schedulingPolicy: {minAvailable: 2}}
  pytorchReplicaSpecs: {Master: {replicas: 1}, Worker: {replicas: 3}}
`))
			b.AddPod(kubeflowPod("pt-worker-0", "pt", "pytorchjob-controller").Obj(), 0)
		}, job: "pt", tasks: "pt-worker-0", min: 2},
		{name: "MPIJob: workers and the launcher's Job pod", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, namespace: ns}
spec:
  mpiReplicaSpecs: {Launcher: {replicas: 1}, Worker: {replicas: 4}}
`))
			mpi := func(name, role string) *apitest.PodWrapper {
				return kubeflowPod(name, "mpi", "mpi-operator").Label("training.kubeflow.org/job-role", role)
			}
			b.AddPod(controlledBy(mpi("mpi-worker-0", "worker"), "kubeflow.org/v2beta1", "MPIJob", "mpi", "uid-mpi").Obj(), 0)
			b.AddPod(mpi("mpi-launcher-x", "launcher").ControlledBy("Job", "mpi-launcher").Obj(), 0)
		}, job: "mpi", tasks: "mpi-launcher-x,mpi-worker-0", min: 5},
		{name: "MPIJob: a Worker's replicas default to none", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: kubeflow.org/v2beta1, kind: MPIJob, metadata: {name: mpi, namespace: ns}, spec: {mpiReplicaSpecs: {Launcher: {}, Worker: {}}}}`))
			b.AddPod(kubeflowPod("mpi-launcher-x", "mpi", "mpi-operator").Obj(), 0)
		}, job: "mpi", tasks: "mpi-launcher-x", min: 1},
		{name: "MPIJob WaitForWorkersReady: the workers", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, namespace: ns}
spec:
  launcherCreationPolicy: WaitForWorkersReady
  mpiReplicaSpecs: {Launcher: {replicas: 1}, Worker: {replicas: 4}}
`))
			b.AddPod(kubeflowPod("mpi-worker-0", "mpi", "mpi-operator").Obj(), 0)
		}, job: "mpi", tasks: "mpi-worker-0", min: 4},
		{name: "Workload API: gang.minCount, apart from a Tessera PodGroup of the same name", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `
apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata: {name: pg, namespace: ns, uid: uid-kpg}
spec: {schedulingPolicy: {gang: {minCount: 3}}}
`))
			b.AddPodGroup(testPodGroup("pg", "ns", "", 7).Obj())
			b.AddPod(workloadAPIPod("pg-0", "pg"), 0)
			b.AddPod(testPod("tessera-0", "ns").Group("pg").Obj(), 0)
		}, job: "pg", tasks: "pg-0", min: 3, uid: "uid-kpg"},
		{name: "Workload API: a basic policy is no gang", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: scheduling.k8s.io/v1alpha3, kind: PodGroup, metadata: {name: pg, namespace: ns}, spec: {schedulingPolicy: {basic: {}}}}`))
			b.AddPod(workloadAPIPod("pg-0", "pg"), 0)
		}, job: "pg", tasks: "pg-0", min: 1},
		{name: "coscheduling PodGroup: minMember", add: func(t *testing.T, b *Builder) {
			b.AddWorkload(object(t, `{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: {name: cs, namespace: ns}, spec: {minMember: 3}}`))
			b.AddPod(testPod("cs-0", "ns").Label(workloads.LabelCoscheduling, "cs").Obj(), 0)
		}, job: "cs", tasks: "cs-0", min: 3},
		{name: "Kueue pod group: the declared total count", kinds: []workloads.Kind{}, add: func(t *testing.T, b *Builder) {
			for _, n := range []string{"kq-0", "kq-1"} {
				b.AddPod(testPod(n, "ns").Label(workloads.LabelKueuePodGroup, "kq").Annotation(workloads.AnnotationKueueTotal, "4").Obj(), 0)
			}
		}, job: "kq", tasks: "kq-0,kq-1", min: 4},
		{name: "Kueue pod group without its count: held", add: func(t *testing.T, b *Builder) {
			b.AddPod(testPod("kq-0", "ns").Label(workloads.LabelKueuePodGroup, "kq").Obj(), 0)
		}, job: "kq", tasks: "kq-0", min: 1, held: "annotation kueue.x-k8s.io/pod-group-total-count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kinds := all
			if tc.kinds != nil {
				kinds = tc.kinds
			}
			snap, errs := buildOne(t, Options{Workloads: kinds}, func(b *Builder) {
				b.AddNode(testNode("n1").Obj(), nil)
				tc.add(t, b)
			})
			wantErrs(t, errs)
			var j *framework.Job
			for _, c := range snap.Jobs { // by name and tasks: a Tessera PodGroup may share the name
				if c.Name == tc.job && taskNames(c) == tc.tasks {
					j = c
				}
			}
			if j == nil {
				t.Fatalf("no job %s with tasks %s in %d jobs", tc.job, tc.tasks, len(snap.Jobs))
			}
			if taskNames(j) != tc.tasks || j.MinMember != tc.min || (tc.uid != "" && j.UID != tc.uid) {
				t.Errorf("job %s: tasks %s min %d uid %s; want %s min %d uid %s", j.Name, taskNames(j), j.MinMember, j.UID, tc.tasks, tc.min, tc.uid)
			}
			switch {
			case tc.held == "" && j.Held != nil:
				t.Errorf("held: %v", j.Held)
			case tc.held != "" && (j.Held == nil || j.Held.Code != framework.ReasonGangSizeUnknown || !strings.Contains(j.Held.Message, tc.held)):
				t.Errorf("held = %v, want GangSizeUnknown with %q", j.Held, tc.held)
			}
		})
	}
}

// TestWorkloadObjectErrors: a field that does not say a size is reported, naming the
// object and the field, and the gang waits.
func TestWorkloadObjectErrors(t *testing.T) {
	snap, errs := buildOne(t, Options{Workloads: workloads.Kinds()}, func(b *Builder) {
		b.AddWorkload(object(t, `{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: {name: cs, namespace: ns}, spec: {minMember: "three"}}`))
		b.AddPod(testPod("cs-0", "ns").Label(workloads.LabelCoscheduling, "cs").Obj(), 0)
	})
	wantErrs(t, errs, `PodGroup.scheduling.x-k8s.io ns/cs: spec.minMember: three is not an integer`)
	if j := jobByName(snap, "cs"); j == nil || j.Held == nil {
		t.Fatalf("job cs is not held: %+v", j)
	}
}

// TestWorkloadMaintained: a maintained builder sizes a gang again when its object
// arrives or changes, and when a JobSet that orders its jobs makes the next one.
func TestWorkloadMaintained(t *testing.T) {
	b := NewBuilder(epoch, Options{Workloads: workloads.Kinds()}).WithMemo(NewMemo())
	b.AddNode(testNode("n1").Obj(), nil)
	b.AddPod(jobSetPod("p", "train", "workers", "0").Obj(), 0)
	min := func(want int, held bool) {
		t.Helper()
		snap, errs := b.Build()
		wantErrs(t, errs)
		j := jobByName(snap, "train")
		if j == nil || j.MinMember != want || (j.Held != nil) != held {
			t.Fatalf("job train = %+v; want min %d held %v", j, want, held)
		}
	}
	min(1, true)
	b.AddWorkload(object(t, jobSetYAML))
	min(9, false)
	o := object(t, strings.Replace(jobSetYAML, "replicas: 2", "replicas: 3", 1))
	o.SetGeneration(2)
	b.AddWorkload(o)
	min(13, false)
	o = object(t, strings.Replace(jobSetYAML, "spec:\n  replicatedJobs:", "spec:\n  startupPolicy: {startupPolicyOrder: InOrder}\n  replicatedJobs:", 1))
	o.SetGeneration(3)
	b.AddWorkload(o)
	min(1, false)
	b.AddJob(testJob("train-workers-0", "ns", 4).Label(workloads.LabelJobSetName, "train").Label(workloads.LabelJobSetAttempt, "0").Obj())
	min(4, false)
	b.RemoveWorkload(workloads.JobSet, "ns", "train")
	min(1, true)
}
