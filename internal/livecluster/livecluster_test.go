package livecluster_test

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/livecluster"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// TestReadCluster reads a live API server's objects as ReadManifests reads a dump:
// nodes with NVIDIA's resources and GPU feature discovery labels, a running pod, a
// PriorityClass, a Queue and a Job whose pods no controller made yet. Volcano's CRDs
// are not installed, so its kinds are left out without an error.
func TestReadCluster(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t, time.Minute)
	c := env.Client
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"gpu-a", "gpu-b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920"}}}
		create(n)
		n.Spec.Taints = nil // the API server's not-ready taint: no kubelet will lift it here
		if err := c.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1Ti"),
			corev1.ResourcePods: resource.MustParse("110"), tesserav1.ResourceNvidiaGPU: resource.MustParse("8")}
		n.Status.Capacity = n.Status.Allocatable
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "research", Annotations: map[string]string{tesserav1.LabelQueue: "research"}}})
	create(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "research-normal"}, Value: 200})
	create(&tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}, Spec: tesserav1.QueueSpec{Weight: 1}})
	gpus := func(n string) corev1.ResourceRequirements {
		q := corev1.ResourceList{tesserav1.ResourceNvidiaGPU: resource.MustParse(n)}
		return corev1.ResourceRequirements{Requests: q, Limits: q}
	}
	create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "serving", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "gpu-a", Containers: []corev1.Container{{Name: "main", Image: "serving", Resources: gpus("2")}}}})
	create(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "finetune", Namespace: "research"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](4), Completions: ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, SchedulerName: tesserav1.SchedulerName,
				PriorityClassName: "research-normal", Containers: []corev1.Container{{Name: "main", Image: "trainer", Resources: gpus("2")}}}}}})

	m, err := livecluster.Read(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 2 || len(m.Queues) != 1 || len(m.Pods) != 5 || len(m.Jobs) != 1 {
		t.Fatalf("read %d nodes, %d queues, %d pods, %d jobs; want 2, 1, 5 (1 running, 4 made for the Job), 1",
			len(m.Nodes), len(m.Queues), len(m.Pods), len(m.Jobs))
	}
	if classes, _ := sim.PriorityClasses(m); classes["research-normal"] != 200 {
		t.Errorf("priority classes = %v, want research-normal = 200", classes)
	}
	r, err := sim.RunManifests(m, "tessera", nil, sim.FirstSeed)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Placements) != 5 || len(r.Pending) != 0 || r.AllocatedGPUPct != 62.5 {
		t.Errorf("placements %+v, pending %+v, allocated %.1f%%; want all 5 pods placed, 62.5%% of 16 GPUs", r.Placements, r.Pending, r.AllocatedGPUPct)
	}
}
