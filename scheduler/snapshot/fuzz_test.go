package snapshot

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// oddQuantities include fractions, negatives, zero and huge values.
var oddQuantities = []string{"0", "1", "2", "8", "0.5", "-1", "1500m", "1e9", "20Gi", "64", "65", "20480", "9223372036854775807"}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomObjects adds a random, often malformed, cluster to b.
func randomObjects(r *rand.Rand, b *Builder) {
	names := []string{"", "a", "b", "c", "n0", "n1"}
	resources := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, tesserav1.ResourceGPU,
		tesserav1.ResourceNvidiaGPU, tesserav1.ResourceGPUMemory, "example.com/fpga"}
	randList := func() corev1.ResourceList {
		if r.IntN(4) == 0 {
			return nil
		}
		l := corev1.ResourceList{}
		for range r.IntN(4) {
			l[pick(r, resources)] = resource.MustParse(pick(r, oddQuantities))
		}
		return l
	}
	for range r.IntN(5) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pick(r, names)}}
		if r.IntN(2) == 0 {
			n.Labels = map[string]string{tesserav1.LabelGPUCount: pick(r, oddQuantities), tesserav1.LabelRack: "r"}
		}
		n.Status.Allocatable, n.Status.Capacity = randList(), randList()
		var g *tesserav1.GPUNode
		if r.IntN(3) == 0 {
			g = &tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: pick(r, names)}}
			for range r.IntN(5) {
				g.Status.Devices = append(g.Status.Devices, tesserav1.GPUDevice{Index: int32(r.IntN(4)), UUID: fmt.Sprintf("GPU-%d", r.IntN(4)),
					MemoryMiB: int64(r.IntN(3)) * 40960, Healthy: r.IntN(2) == 0, Island: int32(r.IntN(2)), NUMANode: int32(r.IntN(3) - 1)})
			}
		}
		b.AddNode(n, g)
	}
	for range r.IntN(4) {
		q := &tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: pick(r, names)}}
		q.Spec.Parent = pick(r, names)
		q.Spec.Weight = int32(r.IntN(3) - 1)
		q.Spec.Capability, q.Spec.Deserved, q.Spec.Guarantee = randList(), randList(), randList()
		b.AddQueue(q)
	}
	for range r.IntN(3) {
		pg := &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pick(r, names)}}
		pg.Spec.MinMember = int32(r.IntN(4) - 1)
		pg.Spec.Queue = pick(r, names)
		pg.Spec.MinResources = randList()
		pg.Status.Phase = pick(r, []tesserav1.PodGroupPhase{"", tesserav1.PodGroupRunning, tesserav1.PodGroupInqueue})
		b.AddPodGroup(pg)
	}
	for range r.IntN(3) {
		b.AddJob(testJob(pick(r, names), "ns", int32(r.IntN(3)-1)).Obj())
	}
	for i := range r.IntN(12) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, []string{"", "ns"}), Name: fmt.Sprintf("p%d", i)}}
		if r.IntN(8) == 0 {
			p.Name = ""
		}
		p.Spec.SchedulerName = pick(r, []string{"tessera", "", "other"})
		p.Spec.NodeName = pick(r, names)
		p.Status.Phase = pick(r, []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed})
		if r.IntN(6) == 0 {
			p.DeletionTimestamp = &metav1.Time{Time: epoch}
		}
		for c := range r.IntN(3) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", c),
				Resources: corev1.ResourceRequirements{Requests: randList(), Limits: randList()}})
		}
		if r.IntN(3) == 0 {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: randList()}}}
		}
		if r.IntN(4) == 0 {
			p.Spec.Overhead = randList()
		}
		p.Labels = map[string]string{}
		p.Annotations = map[string]string{}
		if r.IntN(2) == 0 {
			p.Labels[tesserav1.LabelPodGroup] = pick(r, names)
		}
		if r.IntN(3) == 0 {
			p.Labels[tesserav1.LabelQueue] = pick(r, names)
		}
		if r.IntN(3) == 0 {
			p.Annotations[tesserav1.AnnotationMinAvailable] = pick(r, oddQuantities)
		}
		if r.IntN(3) == 0 {
			p.Annotations[tesserav1.AnnotationGPUAssign] = pick(r, []string{"", "{", `{"node":"n0","containers":[{"container":"c0","uuids":["GPU-1","GPU-2"]}]}`,
				`{"node":"a","containers":[{"container":"c0","uuids":["GPU-a-0"],"memoryMiB":100}]}`})
		}
		if r.IntN(3) == 0 {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: pick(r, names)}}
		}
		b.AddPod(p, int32(r.IntN(100)))
	}
}

// TestBuildNeverPanics builds many random, often malformed clusters, checks the
// snapshot's invariants, and runs a scheduling session over each.
func TestBuildNeverPanics(t *testing.T) {
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 1))
		b := NewBuilder(epoch, Options{})
		randomObjects(r, b)
		snap, errs := b.Build()
		for _, e := range errs {
			if _, ok := e.(*ObjectError); !ok {
				t.Fatalf("seed %d: error %v is not an *ObjectError", seed, e)
			}
		}
		checkInvariants(t, seed, snap)
		s, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.RunSession(snap)
	}
}

func checkInvariants(t *testing.T, seed uint64, snap *framework.Snapshot) {
	t.Helper()
	for i, n := range snap.Nodes {
		if n.Index != i || len(n.GPUs) > framework.MaxGPUsPerNode || n.Allocatable.GPU != int64(len(n.GPUs))*1000 {
			t.Fatalf("seed %d: node %s index %d GPUs %d", seed, n.Name, n.Index, len(n.GPUs))
		}
		var used int64
		for _, task := range n.Tasks {
			used += task.Placed.GPU
			if task.Node != n || !task.Status.Holds() {
				t.Fatalf("seed %d: task %s on node %s is %v", seed, task.Key(), n.Name, task.Status)
			}
		}
		if used != n.Used.GPU {
			t.Fatalf("seed %d: node %s used %d, tasks hold %d", seed, n.Name, n.Used.GPU, used)
		}
	}
	queues := map[*framework.Queue]bool{}
	for _, q := range snap.Queues {
		queues[q] = true
	}
	seen := map[*framework.Queue]bool{}
	for _, q := range snap.Queues {
		clear(seen)
		for x := q; x != nil; x = x.Parent {
			if seen[x] {
				t.Fatalf("seed %d: queue %s has a parent cycle", seed, q.Name)
			}
			seen[x] = true
		}
	}
	for i, j := range snap.Jobs {
		if len(j.Tasks) == 0 || j.MinMember < 1 {
			t.Fatalf("seed %d: job %s has %d tasks, min %d", seed, j.Key(), len(j.Tasks), j.MinMember)
		}
		if j.Queue != nil && !queues[j.Queue] {
			t.Fatalf("seed %d: job %s's queue is not in the snapshot", seed, j.Key())
		}
		if i > 0 && j.Created.Before(snap.Jobs[i-1].Created) {
			t.Fatalf("seed %d: jobs out of order", seed)
		}
		for _, task := range j.Tasks {
			if task.Job != j || task.Status.Holds() != (task.Node != nil) {
				t.Fatalf("seed %d: task %s status %v node %v", seed, task.Key(), task.Status, task.Node)
			}
		}
	}
}

// FuzzBuild drives the random cluster generator from fuzzed seeds (go test -fuzz=FuzzBuild).
func FuzzBuild(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		b := NewBuilder(time.Time{}, Options{})
		randomObjects(rand.New(rand.NewPCG(seed, 2)), b)
		snap, _ := b.Build()
		checkInvariants(t, seed, snap)
	})
}
