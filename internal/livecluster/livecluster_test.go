package livecluster_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
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
		n := apitest.MakeNode(name).Label("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB").Label("nvidia.com/gpu.memory", "81920").
			Allocatable(corev1.ResourceCPU, "96").Allocatable(corev1.ResourceMemory, "1Ti").Allocatable(corev1.ResourcePods, "110").
			Allocatable(tesserav1.ResourceNvidiaGPU, "8").Obj()
		if err := testenv.CreateNode(ctx, c, n); err != nil {
			t.Fatal(err)
		}
	}
	create(apitest.MakeNamespace("research").Annotation(tesserav1.AnnotationQueue, "research").Obj())
	create(apitest.MakePriorityClass("research-normal", 200).Obj())
	create(apitest.MakeQueue("research").Weight(1).AllowedPriorityClasses("research-normal").Obj())
	create(apitest.MakePod("serving", "default").NodeName("gpu-a").NvidiaGPU(2).Obj())
	trainer := apitest.MakePod("", "").SchedulerName(tesserav1.SchedulerName).PriorityClass("research-normal").NvidiaGPU(2).Obj()
	create(apitest.MakeJob("finetune", "research").Parallelism(4).Completions(4).Template(trainer).RestartPolicy(corev1.RestartPolicyNever).Obj())

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
