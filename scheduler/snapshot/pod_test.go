package snapshot

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

func jobByName(s *framework.Snapshot, name string) *framework.Job {
	for _, j := range s.Jobs {
		if j.Name == name {
			return j
		}
	}
	return nil
}

func taskNames(j *framework.Job) string {
	var n []string
	for _, t := range j.Tasks {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func TestJobIdentity(t *testing.T) {
	cases := []struct {
		name    string
		add     func(b *Builder)
		job     string
		tasks   string
		min     int
		uid     string
		errs    []string
		setting func(t *testing.T, j *framework.Job)
	}{
		{name: "PodGroup by label", add: func(b *Builder) {
			b.AddPodGroup(testPodGroup("train", "ns", "", 2).MinRuntime(time.Hour).MinResources(tesserav1.ResourceGPU, "8").Topology(tesserav1.LabelRack).Obj())
			b.AddPod(testPod("train-1", "ns").Group("train").Obj(), 0)
			b.AddPod(testPod("train-0", "ns").Group("train").Obj(), 0)
			b.AddPod(testPod("train-x", "other").Group("train").Obj(), 0) // other namespace: its own gang
		}, job: "train", tasks: "train-0,train-1", min: 2, uid: "uid-pg-train", setting: func(t *testing.T, j *framework.Job) {
			if j.MinRuntime != time.Hour || j.MinResources.GPU != 8000 || j.Topology.Required != tesserav1.LabelRack || j.Namespace != "ns" {
				t.Errorf("job = %+v", j)
			}
		}},
		{name: "PodGroup by Volcano annotation", add: func(b *Builder) {
			b.AddPodGroup(testPodGroup("vc", "ns", "", 3).Obj())
			b.AddPod(testPod("vc-0", "ns").Annotation(tesserav1.VolcanoGroupName, "vc").Obj(), 0)
		}, job: "vc", tasks: "vc-0", min: 3, uid: "uid-pg-vc"},
		{name: "label without a PodGroup or a declared size is held", add: func(b *Builder) {
			for _, n := range []string{"g-0", "g-1", "g-2"} {
				b.AddPod(testPod(n, "ns").Group("g").Obj(), 0)
			}
		}, job: "g", tasks: "g-0,g-1,g-2", min: 3, uid: "pg:ns/g", setting: func(t *testing.T, j *framework.Job) {
			if j.Held == nil || j.Held.Code != framework.ReasonGangSizeUnknown || !strings.Contains(j.Held.Message, "create the PodGroup or set the annotation tessera.dev/min-available") {
				t.Errorf("held = %v, want GangSizeUnknown naming the fixes", j.Held)
			}
		}},
		{name: "label gang sized by Volcano min-member", add: func(b *Builder) {
			b.AddPod(testPod("g-0", "ns").Group("g").Annotation(tesserav1.VolcanoGroupMinMember, "4").Obj(), 0)
		}, job: "g", tasks: "g-0", min: 4},
		{name: "batch Job sized by pod annotation", add: func(b *Builder) {
			b.AddJob(testJob("bj", "ns", 5).Obj())
			b.AddPod(testPod("bj-a", "ns").ControlledBy("Job", "bj").Annotation(tesserav1.AnnotationMinAvailable, "2").Obj(), 0)
			b.AddPod(testPod("bj-b", "ns").ControlledBy("Job", "bj").Obj(), 0)
		}, job: "bj", tasks: "bj-a,bj-b", min: 2, uid: "uid-bj"},
		{name: "expected runtime from the PodGroup's annotation, class from the label", add: func(b *Builder) {
			b.AddPodGroup(testPodGroup("er", "ns", "", 1).Obj())
			b.podGroups["ns/er"].Annotations = map[string]string{tesserav1.AnnotationExpectedRuntime: "90m"}
			b.AddPod(testPod("er-0", "ns").Group("er").Label("tessera.dev/runtime", "short").Obj(), 0)
		}, job: "er", tasks: "er-0", min: 1, uid: "uid-pg-er", setting: func(t *testing.T, j *framework.Job) {
			if j.ExpectedRuntime != 90*time.Minute || j.Class != "short" {
				t.Errorf("expected runtime %s, class %q; want 1h30m, short", j.ExpectedRuntime, j.Class)
			}
		}},
		{name: "expected runtime from the Job's activeDeadlineSeconds", add: func(b *Builder) {
			b.AddJob(testJob("ad", "ns", 1).Obj())
			b.jobs["ns/ad"].Spec.ActiveDeadlineSeconds = new(int64(7200))
			b.AddPod(testPod("ad-0", "ns").ControlledBy("Job", "ad").Annotation(tesserav1.AnnotationExpectedRuntime, "soon").Obj(), 0)
		}, job: "ad", tasks: "ad-0", min: 1, uid: "uid-ad", setting: func(t *testing.T, j *framework.Job) {
			if j.ExpectedRuntime != 2*time.Hour {
				t.Errorf("expected runtime %s, want 2h (an annotation that does not parse is ignored)", j.ExpectedRuntime)
			}
		}},
		{name: "batch Job sized by parallelism", add: func(b *Builder) {
			b.AddJob(testJob("bj", "ns", 4).Obj())
			b.AddPod(testPod("bj-a", "ns").ControlledBy("Job", "bj").Obj(), 0)
		}, job: "bj", tasks: "bj-a", min: 4},
		{name: "batch Job sized by its annotation", add: func(b *Builder) {
			b.AddJob(testJob("bj", "ns", 4).Annotation(tesserav1.AnnotationMinAvailable, "3").Obj())
			b.AddPod(testPod("bj-a", "ns").ControlledBy("Job", "bj").Obj(), 0)
		}, job: "bj", tasks: "bj-a", min: 3},
		{name: "batch Job not added: all its pods", add: func(b *Builder) {
			b.AddPod(testPod("bj-a", "ns").ControlledBy("Job", "bj").Obj(), 0)
			b.AddPod(testPod("bj-b", "ns").ControlledBy("Job", "bj").Obj(), 0)
		}, job: "bj", tasks: "bj-a,bj-b", min: 2},
		{name: "bad min-available is reported and ignored", add: func(b *Builder) {
			b.AddPod(testPod("bj-a", "ns").ControlledBy("Job", "bj").Annotation(tesserav1.AnnotationMinAvailable, "zero").Obj(), 0)
		}, job: "bj", tasks: "bj-a", min: 1, errs: []string{`Pod ns/bj-a: metadata.annotations[tessera.dev/min-available]: "zero" is not a gang size`}},
		{name: "lone pod", add: func(b *Builder) {
			b.AddPod(testPod("solo", "ns").Obj(), 0)
		}, job: "solo", tasks: "solo", min: 1, uid: "uid-solo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, errs := buildOne(t, Options{}, tc.add)
			wantErrs(t, errs, tc.errs...)
			j := jobByName(snap, tc.job)
			if j == nil {
				t.Fatalf("no job %s in %d jobs", tc.job, len(snap.Jobs))
			}
			if taskNames(j) != tc.tasks || j.MinMember != tc.min || (tc.uid != "" && j.UID != tc.uid) {
				t.Errorf("job %s: tasks %s min %d uid %s; want %s min %d uid %s", j.Name, taskNames(j), j.MinMember, j.UID, tc.tasks, tc.min, tc.uid)
			}
			for _, task := range j.Tasks {
				if task.Job != j {
					t.Errorf("task %s does not point at its job", task.Name)
				}
			}
			if tc.setting != nil {
				tc.setting(t, j)
			}
		})
	}
}

func TestJobQueue(t *testing.T) {
	cases := []struct {
		name    string
		add     func(b *Builder)
		queue   string
		errs    []string
		jobs    int
		refused string // the reason the job's queue refuses it
		tasks   string
	}{
		{name: "PodGroup spec.queue beats pod labels", add: func(b *Builder) {
			b.AddPodGroup(testPodGroup("g", "ns", "pgq", 1).Obj())
			b.AddPod(testPod("p", "ns").Group("g").Queue("labelq").Obj(), 0)
		}, queue: "pgq", jobs: 1},
		{name: "pod label", add: func(b *Builder) { b.AddPod(testPod("p", "ns").Queue("labelq").Obj(), 0) }, queue: "labelq", jobs: 1},
		{name: "Volcano label", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Label(tesserav1.VolcanoQueueName, "vcq").Obj(), 0)
		}, queue: "vcq", jobs: 1},
		{name: "Volcano annotation", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Annotation(tesserav1.VolcanoQueueName, "vcq").Obj(), 0)
		}, queue: "vcq", jobs: 1},
		{name: "Kueue label", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Label(tesserav1.KueueQueueName, "kq").Obj(), 0)
		}, queue: "kq", jobs: 1},
		{name: "tessera label beats compat labels", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Label(tesserav1.KueueQueueName, "kq").Queue("labelq").Obj(), 0)
		}, queue: "labelq", jobs: 1},
		{name: "namespace default", add: func(b *Builder) {
			b.AddNamespace(apitest.MakeNamespace("ns").Annotation(tesserav1.AnnotationQueue, "nsq").Obj())
			b.AddPod(testPod("p", "ns").Obj(), 0)
		}, queue: "nsq", jobs: 1},
		{name: "default queue created", add: func(b *Builder) { b.AddPod(testPod("p", "ns").Obj(), 0) }, queue: "default", jobs: 1},
		{name: "unknown queue: refused, pending pod kept", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Queue("ghost").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1,
			refused: `QueueNotFound: queue "ghost" does not exist (named by pod ns/p metadata.labels[tessera.dev/queue])`},
		{name: "unknown PodGroup queue: running and pending pods charged to the unqueued queue", add: func(b *Builder) {
			b.AddNode(testNode("n").Obj(), nil)
			b.AddPodGroup(testPodGroup("g", "ns", "ghost", 2).Obj())
			b.AddPod(testPod("g-0", "ns").Group("g").RunningOn("n", epoch).Obj(), 0)
			b.AddPod(testPod("g-1", "ns").Group("g").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1, refused: `QueueNotFound: queue "ghost" does not exist (named by PodGroup ns/g spec.queue)`, tasks: "g-0,g-1"},
		{name: "namespace the queue does not select", add: func(b *Builder) {
			b.AddNamespace(apitest.MakeNamespace("ns").Label("team", "b").Obj())
			b.AddPod(testPod("p", "ns").Queue("team-a").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1, refused: `QueueRefused: queue "team-a" does not take workloads from namespace "ns"`},
		{name: "namespace the queue selects", add: func(b *Builder) {
			b.AddNamespace(apitest.MakeNamespace("ns").Label("team", "a").Obj())
			b.AddPod(testPod("p", "ns").Queue("team-a").PriorityClass("batch-normal").Obj(), 0)
		}, queue: "team-a", jobs: 1},
		{name: "namespace selected by name without a Namespace object", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Queue("by-name").Obj(), 0)
		}, queue: "by-name", jobs: 1},
		{name: "pod class the queue does not allow", add: func(b *Builder) {
			b.AddNamespace(apitest.MakeNamespace("ns").Label("team", "a").Obj())
			b.AddPod(testPod("p", "ns").Queue("team-a").PriorityClass("production-high").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1,
			refused: `QueueRefused: priorityClassName "production-high" is not allowed in queue "team-a" (its spec.allowedPriorityClasses: [batch-normal, offline-low])`},
		{name: "PodGroup class the queue does not allow", add: func(b *Builder) {
			b.AddNamespace(apitest.MakeNamespace("ns").Label("team", "a").Obj())
			b.AddPodGroup(testPodGroup("g", "ns", "team-a", 1).PriorityClass("production-high").Obj())
			b.AddPod(testPod("g-0", "ns").Group("g").PriorityClass("batch-normal").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1, refused: `priorityClassName "production-high" is not allowed in queue "team-a"`},
		{name: "queue without allowed classes takes the default class only", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Queue("labelq").PriorityClass("production-high").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1,
			refused: `QueueRefused: priorityClassName "production-high" is not allowed in queue "labelq": it lists no spec.allowedPriorityClasses, so it takes only the cluster's default class "batch-normal"`},
		{name: "queue without allowed classes takes the default class", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").Queue("labelq").PriorityClass("batch-normal").Obj(), 0)
			b.AddPod(testPod("q", "ns").Queue("labelq").Obj(), 0)
		}, queue: "labelq", jobs: 2},
		{name: "implicit default queue takes every namespace, the default class only", add: func(b *Builder) {
			b.AddPod(testPod("p", "ns").PriorityClass("production-high").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1, refused: `priorityClassName "production-high" is not allowed in queue "default": it lists no spec.allowedPriorityClasses`},
		{name: "invalid selector takes no namespace", add: func(b *Builder) {
			q := apitest.MakeQueue("broken").Obj()
			q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}
			b.AddQueue(q)
			b.AddPod(testPod("p", "ns").Queue("broken").Obj(), 0)
		}, queue: framework.UnqueuedQueue, jobs: 1, refused: `queue "broken" does not take workloads from namespace "ns"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, errs := buildOne(t, Options{DefaultPriorityClass: "batch-normal"}, func(b *Builder) {
				for _, q := range []string{"pgq", "labelq", "vcq", "kq", "nsq"} {
					b.AddQueue(apitest.MakeQueue(q).Obj())
				}
				teamA := apitest.MakeQueue("team-a").Obj()
				teamA.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
				teamA.Spec.AllowedPriorityClasses = []string{"batch-normal", "offline-low"}
				byName := apitest.MakeQueue("by-name").Obj()
				byName.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "ns"}}
				b.AddQueue(teamA)
				b.AddQueue(byName)
				tc.add(b)
			})
			wantErrs(t, errs, tc.errs...)
			if len(snap.Jobs) != tc.jobs {
				t.Fatalf("jobs = %d, want %d", len(snap.Jobs), tc.jobs)
			}
			if tc.jobs == 0 {
				return
			}
			j := snap.Jobs[0]
			got := ""
			if j.Queue != nil {
				got = j.Queue.Name
				if queueByName(snap, got) != j.Queue {
					t.Errorf("job's queue %s is not in the snapshot", got)
				}
			}
			if got != tc.queue {
				t.Errorf("queue = %q, want %q", got, tc.queue)
			}
			switch {
			case tc.refused == "" && j.Refused != nil:
				t.Errorf("refused: %v", j.Refused)
			case tc.refused != "" && (j.Refused == nil || !strings.Contains(j.Refused.String(), tc.refused)):
				t.Errorf("refused: %v, want %q", j.Refused, tc.refused)
			case tc.refused != "" && !j.Queue.Unqueued:
				t.Errorf("refused job in queue %s, want the unqueued queue", j.Queue.Name)
			}
			if tc.tasks != "" && taskNames(j) != tc.tasks {
				t.Errorf("tasks = %s, want %s", taskNames(j), tc.tasks)
			}
		})
	}
}

func TestDefaultQueueOptions(t *testing.T) {
	snap, errs := buildOne(t, Options{DefaultQueue: "batch"}, func(b *Builder) {
		b.AddQueue(apitest.MakeQueue("batch").Capability(tesserav1.ResourceGPU, "2").Obj())
		b.AddPod(testPod("p", "ns").Obj(), 0)
	})
	wantErrs(t, errs)
	if len(snap.Queues) != 1 || snap.Jobs[0].Queue.Capability.GPU != 2000 {
		t.Errorf("queues = %d, job queue %+v", len(snap.Queues), snap.Jobs[0].Queue)
	}
	snap, _ = buildOne(t, Options{}, func(b *Builder) { b.AddQueue(apitest.MakeQueue("a").Obj()) })
	if len(snap.Queues) != 1 {
		t.Errorf("default queue created without a job using it")
	}
}

func TestForeignPods(t *testing.T) {
	snap, errs := buildOne(t, Options{}, func(b *Builder) {
		b.AddNode(testNode("n").GPUs(2, "T4", 15109).Obj(), nil)
		b.AddPod(testPod("unbound", "ns").SchedulerName("default-scheduler").Obj(), 0)
		b.AddPod(testPod("done", "ns").SchedulerName("default-scheduler").RunningOn("n", epoch).Phase(corev1.PodSucceeded).Obj(), 0)
		b.AddPod(testPod("running", "ns").SchedulerName("").Request(tesserav1.ResourceNvidiaGPU, "1").RunningOn("n", epoch).Obj(), 9)
		b.AddPod(testPod("mine", "ns").SchedulerName("volcano").Obj(), 0)
	})
	wantErrs(t, errs)
	if len(snap.Jobs) != 1 {
		t.Fatalf("jobs = %d, want only the running foreign pod", len(snap.Jobs))
	}
	j := snap.Jobs[0]
	task := j.Tasks[0]
	if j.Name != "running" || j.Queue != nil || !j.Inqueue || j.Priority != 9 || task.Preemptible || task.Status != framework.TaskRunning || task.Node != snap.Nodes[0] || task.GPUs.Len() != 1 {
		t.Errorf("foreign job = %+v, task %+v", j, task)
	}
	if len(snap.Queues) != 0 {
		t.Errorf("queues = %d; a foreign pod needs none", len(snap.Queues))
	}
	snap, _ = buildOne(t, Options{SchedulerName: "volcano"}, func(b *Builder) {
		b.AddPod(testPod("mine", "ns").SchedulerName("volcano").Obj(), 0)
	})
	if len(snap.Jobs) != 1 {
		t.Errorf("SchedulerName option not honoured")
	}
}

func TestTaskRequests(t *testing.T) {
	withInit := testPod("p", "ns").CPU("2").Obj()
	withInit.Spec.Containers = append(withInit.Spec.Containers, corev1.Container{Name: "side", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "example.com/fpga": resource.MustParse("1")}}})
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5"), corev1.ResourceMemory: resource.MustParse("100Mi")}}}}
	withInit.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}

	limitsOnly := testPod("p", "ns").Limit(tesserav1.ResourceNvidiaGPU, "2").Limit(corev1.ResourceCPU, "3").Obj()
	limitsOnly.Spec.Containers[0].Resources.Requests = nil

	slice := testPod("p", "ns").Obj()
	slice.Spec.Containers = append(slice.Spec.Containers, corev1.Container{Name: "cuda", Resources: corev1.ResourceRequirements{
		Requests: apitest.Resources("tessera.dev/gpu-memory", "20480")}})

	// A limit beside the request changes nothing here: the scheduler packs requests.
	burstable := slice.DeepCopy()
	burstable.Annotations = map[string]string{tesserav1.AnnotationGPUMemoryLimit: "60Gi"}

	twoSlices := slice.DeepCopy()
	twoSlices.Spec.Containers[0].Resources.Requests[tesserav1.ResourceGPUMemory] = resource.MustParse("1024")

	cases := []struct {
		name      string
		pod       *corev1.Pod
		whole     bool
		cpu       int64
		mem       int64
		scalar    int64
		gpu       framework.GPURequest
		container string
		err       string
	}{
		{name: "plain", pod: testPod("p", "ns").Obj(), cpu: 1000, mem: 1 << 30, container: "main"},
		{name: "init max, sidecar sum, overhead", pod: withInit, cpu: 5250, mem: 1 << 30, scalar: 1, container: "main"},
		{name: "limits only", pod: limitsOnly, cpu: 3000, gpu: framework.GPURequest{Count: 2}, container: "main"},
		{name: "whole GPUs", pod: testPod("p", "ns").GPU(4).Obj(), cpu: 1000, mem: 1 << 30, gpu: framework.GPURequest{Count: 4}, container: "main"},
		{name: "memory slice names its container", pod: slice, cpu: 1000, mem: 1 << 30, gpu: framework.GPURequest{MemoryMiB: 20480}, container: "cuda"},
		{name: "packed on the request, not the limit", pod: burstable, cpu: 1000, mem: 1 << 30, gpu: framework.GPURequest{MemoryMiB: 20480}, container: "cuda"},
		{name: "slice as a whole GPU", pod: slice, whole: true, cpu: 1000, mem: 1 << 30, gpu: framework.GPURequest{Count: 1}, container: "cuda"},
		{name: "fractional GPU", pod: testPod("p", "ns").Request(tesserav1.ResourceGPU, "0.5").Obj(),
			err: "Pod ns/p: spec.containers[0].resources.requests[tessera.dev/gpu]: 500m is not a whole number of GPUs; ask tessera.dev/gpu-memory"},
		{name: "negative GPU", pod: testPod("p", "ns").Request(tesserav1.ResourceGPU, "-1").Obj(), err: "is negative"},
		{name: "both GPU resources", pod: testPod("p", "ns").GPU(1).Request(tesserav1.ResourceNvidiaGPU, "1").Obj(), err: "asks both tessera.dev/gpu and nvidia.com/gpu"},
		{name: "slice and whole GPUs", pod: testPod("p", "ns").GPU(1).GPUMemory(1024).Obj(), err: "asks whole GPUs and a tessera.dev/gpu-memory slice"},
		{name: "two slices", pod: twoSlices, err: `spec.containers[1].resources.requests[tessera.dev/gpu-memory]: container "main" asks a GPU memory slice too`},
		{name: "slice in bytes", pod: testPod("p", "ns").Request(tesserav1.ResourceGPUMemory, "20Gi").Obj(), err: "is not a GPU memory slice in MiB"},
		{name: "negative cpu", pod: testPod("p", "ns").CPU("-1").Obj(), err: "requests[cpu]: is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, errs := buildOne(t, Options{WholeGPUs: tc.whole}, func(b *Builder) { b.AddPod(tc.pod, 0) })
			if tc.err != "" {
				wantErrs(t, errs, tc.err)
				if len(snap.Jobs) != 0 {
					t.Errorf("faulty pod kept")
				}
				return
			}
			wantErrs(t, errs)
			task := snap.Jobs[0].Tasks[0]
			r := task.Request
			if r.MilliCPU != tc.cpu || r.Memory != tc.mem || r.Pods != 1 || r.GPU != 0 || r.Scalar["example.com/fpga"] != tc.scalar {
				t.Errorf("request = %v (pods %d, gpu %d), want cpu %d memory %d", r, r.Pods, r.GPU, tc.cpu, tc.mem)
			}
			if task.GPU.Count != tc.gpu.Count || task.GPU.MemoryMiB != tc.gpu.MemoryMiB || task.GPU.Milli != 0 || task.Container != tc.container {
				t.Errorf("gpu = %+v container %q, want %+v %q", task.GPU, task.Container, tc.gpu, tc.container)
			}
			if _, nvidia := r.Scalar[tesserav1.ResourceNvidiaGPU]; nvidia {
				t.Errorf("nvidia.com/gpu left in the scalars")
			}
		})
	}
}

func TestTaskSpecCopied(t *testing.T) {
	p := testPod("p", "ns").Obj()
	p.Spec.NodeSelector = map[string]string{tesserav1.LabelGPUModel: "H100"}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	snap, _ := buildOne(t, Options{}, func(b *Builder) { b.AddPod(p, 0) })
	task := snap.Jobs[0].Tasks[0]
	if task.NodeSelector[tesserav1.LabelGPUModel] != "H100" || len(task.Tolerations) != 1 || task.Affinity == nil || task.Key() != "ns/p" || task.UID != "uid-p" || len(task.GPU.Models) != 0 {
		t.Errorf("task = %+v", task)
	}
}

func TestTaskStatusAndPlacement(t *testing.T) {
	start := epoch.Add(-time.Hour)
	deleting := testPod("deleting", "ns").GPU(1).RunningOn("n", start).Deleting(epoch).Obj()
	pendingDeleted := testPod("gone", "ns").Deleting(epoch).Obj()
	sliceAssign := testPod("slice", "ns").GPUMemory(40960).RunningOn("n", start).Assignment(tesserav1.GPUAssignment{Node: "n",
		Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{uuid("n", 6)}, MemoryMiB: 40960}}}).Obj()

	snap, errs := buildOne(t, Options{}, func(b *Builder) {
		b.AddNode(testNode("n").Obj(), gpuNode("n", 8))
		b.AddPod(testPod("assigned", "ns").GPU(2).RunningOn("n", start).Assignment(assign("n", uuid("n", 5), uuid("n", 7))).Obj(), 0)
		b.AddPod(testPod("picked", "ns").GPU(4).RunningOn("n", start).Obj(), 0) // placed after the assigned pods
		b.AddPod(deleting, 0)
		b.AddPod(sliceAssign, 0)
		b.AddPod(testPod("done", "ns").GPU(8).RunningOn("n", start).Phase(corev1.PodSucceeded).Obj(), 0)
		b.AddPod(testPod("failed", "ns").GPU(8).RunningOn("n", start).Phase(corev1.PodFailed).Obj(), 0)
		b.AddPod(testPod("waiting", "ns").GPU(1).Obj(), 0)
		b.AddPod(pendingDeleted, 0)
		b.AddPod(testPod("lost", "ns").RunningOn("ghost-node", start).Obj(), 0)
		b.AddPod(testPod("lost-done", "ns").RunningOn("ghost-node", start).Phase(corev1.PodSucceeded).Obj(), 0)
	})
	wantErrs(t, errs, `Pod ns/lost: spec.nodeName: node "ghost-node" is not in the snapshot`)
	n := snap.Nodes[0]
	want := map[string]struct {
		status framework.TaskStatus
		gpus   []int
		milli  int64
	}{
		"assigned":  {framework.TaskRunning, []int{5, 7}, 1000},
		"picked":    {framework.TaskRunning, []int{1, 2, 3, 4}, 1000}, // after "deleting" took GPU 0
		"deleting":  {framework.TaskReleasing, []int{0}, 1000},
		"slice":     {framework.TaskRunning, []int{6}, 503},
		"done":      {framework.TaskSucceeded, nil, 0},
		"failed":    {framework.TaskSucceeded, nil, 0},
		"waiting":   {framework.TaskPending, nil, 0},
		"lost-done": {framework.TaskSucceeded, nil, 0},
	}
	if len(snap.Jobs) != len(want) {
		t.Errorf("jobs = %d, want %d", len(snap.Jobs), len(want))
	}
	for _, j := range snap.Jobs {
		task := j.Tasks[0]
		w, ok := want[task.Name]
		if !ok {
			t.Errorf("unexpected task %s", task.Name)
			continue
		}
		if task.Status != w.status || len(task.GPUs.Indices()) != len(w.gpus) || task.GPUMilli != w.milli {
			t.Errorf("%s: status %v GPUs %v milli %d, want %v %v %d", task.Name, task.Status, task.GPUs.Indices(), task.GPUMilli, w.status, w.gpus, w.milli)
			continue
		}
		for i, g := range task.GPUs.Indices() {
			if g != w.gpus[i] {
				t.Errorf("%s: GPUs %v, want %v", task.Name, task.GPUs.Indices(), w.gpus)
			}
		}
		if task.Status.Holds() != (task.Node == n) {
			t.Errorf("%s: node %v, holds %v", task.Name, task.Node, task.Status.Holds())
		}
		if task.Status == framework.TaskRunning && !task.StartTime.Equal(start) {
			t.Errorf("%s: start %v", task.Name, task.StartTime)
		}
		if task.Status.Holds() != j.Inqueue && task.Status != framework.TaskSucceeded {
			t.Errorf("%s: inqueue %v", task.Name, j.Inqueue)
		}
	}
	if n.Used.GPU != 7503 || n.Used.Pods != 4 || n.FreeWholeGPUs() != 0 || len(n.Tasks) != 4 {
		t.Errorf("node used %v (pods %d), free whole %d, tasks %d", n.Used, n.Used.Pods, n.FreeWholeGPUs(), len(n.Tasks))
	}
}

func TestBadAssignment(t *testing.T) {
	cases := []struct {
		name, annotation, err string
	}{
		{"not JSON", "{", "annotation tessera.dev/gpu-assignment"},
		{"other node", tesserav1.GPUAssignment{Node: "m", Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{uuid("n", 0)}}}}.Encode(), `names node "m"`},
		{"unknown GPU", tesserav1.GPUAssignment{Node: "n", Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{"GPU-x"}}}}.Encode(), "GPU GPU-x is not on node n"},
		{"wrong count", tesserav1.GPUAssignment{Node: "n", Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{uuid("n", 3)}}}}.Encode(), "names 1 GPUs, the pod asks 2 whole GPU(s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, errs := buildOne(t, Options{}, func(b *Builder) {
				b.AddNode(testNode("n").Obj(), gpuNode("n", 4))
				b.AddPod(testPod("p", "ns").GPU(2).RunningOn("n", epoch).Annotation(tesserav1.AnnotationGPUAssign, tc.annotation).Obj(), 0)
			})
			wantErrs(t, errs, "Pod ns/p: metadata.annotations[tessera.dev/gpu-assignment]: "+tc.err)
			if task := snap.Jobs[0].Tasks[0]; task.GPUs.Len() != 2 || snap.Nodes[0].Used.GPU != 2000 {
				t.Errorf("running pod with a bad assignment not counted: GPUs %v", task.GPUs.Indices())
			}
		})
	}
	// Two pods claiming the same GPU: both are counted, the conflict is reported.
	snap, errs := buildOne(t, Options{}, func(b *Builder) {
		b.AddNode(testNode("n").Obj(), gpuNode("n", 2))
		b.AddPod(testPod("a", "ns").GPU(1).RunningOn("n", epoch).Assignment(assign("n", uuid("n", 0))).Obj(), 0)
		b.AddPod(testPod("b", "ns").GPU(1).RunningOn("n", epoch).Assignment(assign("n", uuid("n", 0))).Obj(), 0)
		b.AddPod(testPod("c", "ns").GPU(2).RunningOn("n", epoch).Obj(), 0)
	})
	wantErrs(t, errs, "Pod ns/b: metadata.annotations[tessera.dev/gpu-assignment]: GPU GPU-n-0 on node n is oversubscribed",
		"Pod ns/c: spec.nodeName: node n has no free GPUs for the running pod's 2 whole GPU(s)")
	if snap.Nodes[0].Used.GPU != 2000 || snap.Nodes[0].Used.Pods != 3 {
		t.Errorf("used = %v", snap.Nodes[0].Used)
	}
}

func TestPreemptible(t *testing.T) {
	cases := []struct {
		key, value string
		want       bool
	}{
		{"", "", true},
		{"cluster-autoscaler.kubernetes.io/safe-to-evict", "false", false},
		{"cluster-autoscaler.kubernetes.io/safe-to-evict", "true", true},
		{"karpenter.sh/do-not-disrupt", "true", false},
		{"karpenter.sh/do-not-disrupt", "false", true},
	}
	for _, tc := range cases {
		w := testPod("p", "ns")
		if tc.key != "" {
			w.Annotation(tc.key, tc.value)
		}
		snap, _ := buildOne(t, Options{}, func(b *Builder) { b.AddPod(w.Obj(), 0) })
		if got := snap.Jobs[0].Tasks[0].Preemptible; got != tc.want {
			t.Errorf("%s=%q: preemptible %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

func TestPriority(t *testing.T) {
	snap, _ := buildOne(t, Options{PriorityClasses: map[string]int32{"high": 100}}, func(b *Builder) {
		b.AddPod(testPod("arg", "ns").Obj(), 5)
		b.AddPod(testPod("spec", "ns").Priority(7).Obj(), 5)
		b.AddPod(testPod("g-0", "ns").Group("g").Obj(), 1)
		b.AddPod(testPod("g-1", "ns").Group("g").Obj(), 3)
		b.AddPodGroup(testPodGroup("classed", "ns", "", 1).PriorityClass("high").Obj())
		b.AddPod(testPod("c-0", "ns").Group("classed").Obj(), 1)
		b.AddPodGroup(testPodGroup("unknown", "ns", "", 1).PriorityClass("nope").Obj())
		b.AddPod(testPod("u-0", "ns").Group("unknown").Obj(), 2)
	})
	for name, want := range map[string]int32{"arg": 5, "spec": 7, "g": 3, "classed": 100, "unknown": 2} {
		if j := jobByName(snap, name); j == nil || j.Priority != want {
			t.Errorf("job %s priority = %v, want %d", name, j, want)
		}
	}
}

func TestJobOrder(t *testing.T) {
	snap, _ := buildOne(t, Options{}, func(b *Builder) {
		b.AddPod(testPod("late", "ns").Created(epoch.Add(time.Minute)).Obj(), 0)
		b.AddPod(testPod("b", "ns").Obj(), 0)
		b.AddPod(testPod("a", "ns").Obj(), 0)
		b.AddPod(testPod("z", "aa").Obj(), 0)
		b.AddPod(testPod("g-1", "ns").Group("g").Created(epoch.Add(-time.Minute)).Obj(), 0)
		b.AddPod(testPod("g-0", "ns").Group("g").Created(epoch.Add(2*time.Minute)).Obj(), 0)
		b.AddPodGroup(testPodGroup("pg", "ns", "", 1).Created(epoch.Add(-time.Hour)).Obj())
		b.AddPod(testPod("pg-0", "ns").Group("pg").Created(epoch.Add(time.Hour)).Obj(), 0)
	})
	var keys []string
	for _, j := range snap.Jobs {
		keys = append(keys, j.Key())
	}
	if got := strings.Join(keys, " "); got != "ns/pg ns/g aa/z ns/a ns/b ns/late" {
		t.Errorf("job order = %s", got)
	}
	if taskNames(jobByName(snap, "g")) != "g-0,g-1" {
		t.Errorf("tasks of g = %s", taskNames(jobByName(snap, "g")))
	}
}

func TestBadPodDoesNotSinkSnapshot(t *testing.T) {
	snap, errs := buildOne(t, Options{}, func(b *Builder) {
		b.AddNode(testNode("n").GPUs(8, "A100-80GB", 81920).Obj(), nil)
		b.AddNode(testNode("bad").Allocatable(tesserav1.ResourceGPU, "0.5").Obj(), nil)
		b.AddPod(testPod("good", "ns").GPU(1).Obj(), 0)
		b.AddPod(testPod("bad", "ns").Request(tesserav1.ResourceGPU, "1.5").Obj(), 0)
		b.AddPod(testPod("", "ns").Obj(), 0)
	})
	wantErrs(t, errs, "Node bad:", "Pod ns/: metadata.name: is empty", "Pod ns/bad: spec.containers[0].resources.requests[tessera.dev/gpu]")
	if len(snap.Nodes) != 1 || len(snap.Jobs) != 1 || snap.Jobs[0].Name != "good" {
		t.Errorf("snapshot: %d nodes, %d jobs", len(snap.Nodes), len(snap.Jobs))
	}
	var oe *ObjectError
	if !asObjectError(errs[2], &oe) || oe.Kind != "Pod" || oe.Namespace != "ns" || oe.Name != "bad" {
		t.Errorf("error is not an ObjectError naming the pod: %#v", errs[2])
	}
}

// The checkpoint annotations reach the task; values that do not parse count as absent.
func TestCheckpointAnnotations(t *testing.T) {
	at := "2026-01-02T03:04:05Z"
	for _, c := range []struct {
		every, at string
		want      time.Duration
		wantAt    bool
	}{{"30m", at, 30 * time.Minute, true}, {"often", "yesterday", 0, false}, {"-5m", "", 0, false}} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			tesserav1.AnnotationCheckpointInterval: c.every, tesserav1.AnnotationCheckpointedAt: c.at}}}
		every, last := checkpoints(p)
		if every != c.want || last.IsZero() == c.wantAt {
			t.Errorf("%q, %q: every %v, at %v", c.every, c.at, every, last)
		}
	}
}
