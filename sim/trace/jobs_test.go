package trace

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/internal/apitest"
)

func job(name string, parallelism, completions *int32, mutate ...func(*batchv1.Job)) batchv1.Job {
	j := apitest.MakeJob(name, "ns").UID("uid-" + name).
		Template(apitest.MakePod("", "").Label("app", name).SchedulerName("tessera").Obj()).Obj()
	j.Spec.Parallelism, j.Spec.Completions = parallelism, completions
	for _, m := range mutate {
		m(j)
	}
	return *j
}

func jobPod(name, jobName string, phase corev1.PodPhase) corev1.Pod {
	return *apitest.MakePod(name, "ns").ControlledBy("Job", jobName).Phase(phase).Obj()
}

// TestExpandJobs: pods are made as the Job controller would, counting the listed ones.
func TestExpandJobs(t *testing.T) {
	suspended := func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }
	complete := func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	succeededTwice := func(j *batchv1.Job) { j.Status.Succeeded = 2 }
	for _, tc := range []struct {
		name string
		job  batchv1.Job
		pods []corev1.Pod
		want int // pods made
	}{
		{"parallelism", job("a", ptr.To[int32](4), nil), nil, 4},
		{"parallelism defaults to 1", job("a", nil, nil), nil, 1},
		{"listed pods count", job("a", ptr.To[int32](4), nil), []corev1.Pod{jobPod("a-x", "a", corev1.PodRunning), jobPod("a-y", "a", corev1.PodPending)}, 2},
		{"failed pods do not", job("a", ptr.To[int32](2), nil), []corev1.Pod{jobPod("a-x", "a", corev1.PodFailed)}, 2},
		{"completions left", job("a", ptr.To[int32](4), ptr.To[int32](5), succeededTwice), nil, 3},
		{"succeeded pods count", job("a", ptr.To[int32](4), ptr.To[int32](3)), []corev1.Pod{jobPod("a-x", "a", corev1.PodSucceeded)}, 2},
		{"work queue done once one succeeded", job("a", ptr.To[int32](4), nil), []corev1.Pod{jobPod("a-x", "a", corev1.PodSucceeded)}, 0},
		{"suspended", job("a", ptr.To[int32](4), nil, suspended), nil, 0},
		{"finished", job("a", ptr.To[int32](4), nil, complete), nil, 0},
		{"other job's pods do not count", job("a", ptr.To[int32](2), nil), []corev1.Pod{jobPod("b-x", "b", corev1.PodRunning)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifests{Jobs: []batchv1.Job{tc.job}, Pods: tc.pods}
			if err := m.ExpandJobs(); err != nil {
				t.Fatal(err)
			}
			if got := len(m.Pods) - len(tc.pods); got != tc.want {
				t.Fatalf("made %d pods, want %d", got, tc.want)
			}
			if tc.want > 0 && (len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "made from its template")) {
				t.Errorf("notes = %q, want one saying pods were made", m.Notes)
			}
		})
	}
}

// TestExpandJobsPods: made pods carry what the Job controller puts on them and skip
// names already taken.
func TestExpandJobsPods(t *testing.T) {
	indexed := func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }
	taken := *apitest.MakePod("a-0", "ns").Obj()
	m := &Manifests{Jobs: []batchv1.Job{job("a", ptr.To[int32](2), nil, indexed)}, Pods: []corev1.Pod{taken}}
	if err := m.ExpandJobs(); err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 3 || m.Pods[1].Name != "a-1" || m.Pods[2].Name != "a-2" {
		t.Fatalf("pods = %v, want a-0 (listed), a-1, a-2", podNames(m.Pods))
	}
	p := m.Pods[1]
	if p.Labels["app"] != "a" || p.Labels[batchv1.JobNameLabel] != "a" || p.Labels[batchv1.ControllerUidLabel] != string(m.Jobs[0].UID) {
		t.Errorf("labels = %v, want the template's and the Job controller's", p.Labels)
	}
	if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "" || p.Spec.SchedulerName != "tessera" || p.Status.Phase != corev1.PodPending {
		t.Errorf("pod = %+v, want an indexed pending pod from the template", p)
	}
	if ownerJob(&p) != "a" {
		t.Errorf("owner = %v, want Job a as controller", p.OwnerReferences)
	}
}

// TestExpandJobsBound: a Job asking more pods than the bound fails naming the field.
func TestExpandJobsBound(t *testing.T) {
	m := &Manifests{Jobs: []batchv1.Job{job("huge", ptr.To[int32](MaxExpandedPods+1), nil)}}
	err := m.ExpandJobs()
	if err == nil || !strings.Contains(err.Error(), "spec.parallelism") {
		t.Fatalf("err = %v, want one naming spec.parallelism", err)
	}
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestDecodeVolcanoAndPriorityClasses: Volcano objects become Tessera's, a Volcano Job's
// pods are made, and PriorityClasses are read.
func TestDecodeVolcanoAndPriorityClasses(t *testing.T) {
	const in = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 2}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pretrain, namespace: research}
spec:
  minAvailable: 2
  queue: research
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: main
          image: x
          resources: {limits: {nvidia.com/gpu: 4}}
`
	m, err := DecodeManifests(strings.NewReader(in), "in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.PriorityClasses) != 1 || m.PriorityClasses[0].Value != 1000 {
		t.Errorf("priority classes = %+v", m.PriorityClasses)
	}
	if len(m.Queues) != 1 || m.Queues[0].Name != "research" || len(m.PodGroups) != 1 || len(m.Jobs) != 1 {
		t.Fatalf("queues %d, podgroups %d, jobs %d; want the Volcano objects converted", len(m.Queues), len(m.PodGroups), len(m.Jobs))
	}
	if len(m.Pods) != 2 {
		t.Errorf("pods = %v, want the Volcano task's 2 replicas", podNames(m.Pods))
	}
	for _, p := range m.Pods {
		if _, ok := p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; !ok {
			t.Errorf("pod %s requests = %v, want requests defaulted from limits", p.Name, p.Spec.Containers[0].Resources.Requests)
		}
	}
}

// TestDecodeVolcanoCollision: a Volcano Queue named like a Tessera Queue of the input
// is an error that says to keep one.
func TestDecodeVolcanoCollision(t *testing.T) {
	const in = `apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 2}
`
	_, err := DecodeManifests(strings.NewReader(in), "in.yaml")
	if err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Fatalf("err = %v, want a collision naming Queue research", err)
	}
}

// TestExpandJobsVolcanoPods: the running pods of a Volcano Job count for the batch/v1
// Job its task converts to, so none is made twice.
func TestExpandJobsVolcanoPods(t *testing.T) {
	p := *apitest.MakePod("pretrain-worker-0", "ns").Label(volcanoTaskLabel, "worker").Phase(corev1.PodRunning).
		OwnerReference(metav1.OwnerReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "pretrain", Controller: ptr.To(true)}).Obj()
	m := &Manifests{Jobs: []batchv1.Job{job("pretrain-worker", ptr.To[int32](2), nil)}, Pods: []corev1.Pod{p}}
	if err := m.ExpandJobs(); err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 2 {
		t.Errorf("pods = %v, want the running worker and one more", podNames(m.Pods))
	}
}
