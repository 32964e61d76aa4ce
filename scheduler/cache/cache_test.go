package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// TestIncrementalSnapshotIsFullRebuild applies random sequences of added, updated and
// deleted objects and of assumed binds and evictions, and checks after each step that
// the snapshot of a watching cache, which converts only what changed, equals a
// snapshot built from scratch from the same objects.
func TestIncrementalSnapshotIsFullRebuild(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			const nodes, pods = 12, 60
			cl := bigCluster(nodes, pods, rng)
			opts := snapshot.Options{WholeGPUs: seed%3 == 0}
			inc := watched(cl, opts)
			full := New(cl, opts)
			ctx := context.Background()
			now := epoch.Add(2 * time.Hour)
			next := pods
			partly := 0
			for step := range 40 {
				for range 1 + rng.IntN(6) {
					mutate(t, rng, cl, inc, full, nodes, &next, now)
				}
				now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
				got, _, gotErrs, err := inc.Snapshot(ctx, now)
				if err != nil {
					t.Fatal(err)
				}
				in, err := full.list(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want, _, wantErrs := full.snapshot(&in, now, nil)
				if g, w := testutil.State(got, "Node.Version"), testutil.State(want, "Node.Version"); g != w {
					t.Fatalf("step %d: the incremental snapshot differs from a full rebuild:\n%s", step, firstDiff(g, w))
				}
				if g, w := fmt.Sprint(gotErrs), fmt.Sprint(wantErrs); g != w {
					t.Fatalf("step %d: errors differ:\n got %s\nwant %s", step, g, w)
				}
				if assembled, jobs := inc.memo.Jobs(); assembled < jobs {
					partly++
				}
			}
			if reused, _ := inc.memo.Stats(); reused == 0 {
				t.Error("the memo reused nothing")
			}
			if partly == 0 {
				t.Error("every snapshot assembled every job again")
			}
		})
	}
}

func firstDiff(a, b string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			lo := max(0, i-300)
			return fmt.Sprintf("got  …%s\nwant …%s", a[lo:min(len(a), i+200)], b[lo:min(len(b), i+200)])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

// mutate makes one random change to cl and reports it to inc as informer events, or
// assumes a bind or an eviction in both caches.
func mutate(t *testing.T, rng *rand.Rand, cl *cluster, inc, full *Cache, nodes int, next *int, now time.Time) {
	t.Helper()
	put := func(o client.Object) {
		cl.put(o)
		inc.observe(o, false)
	}
	del := func(o client.Object) {
		cl.del(o)
		if rng.IntN(2) == 0 {
			inc.observe(toolscache.DeletedFinalStateUnknown{Key: keyOf(o), Obj: o}, true)
		} else {
			inc.observe(o, true)
		}
	}
	pod := func() *corev1.Pod {
		ps := cl.objs[kindOf(&corev1.Pod{})]
		for _, o := range ps {
			if rng.IntN(len(ps)) == 0 {
				return o.(*corev1.Pod).DeepCopy()
			}
		}
		return nil
	}
	node := gpuNodeName(rng.IntN(nodes + 1)) // sometimes one that does not exist
	switch rng.IntN(15) {
	case 0, 1: // a new pod
		put(bigPod(*next, rng.IntN(3) == 0, nodes+1, rng).Obj())
		*next++
	case 2: // a pod is bound, with or without a device assignment
		if p := pod(); p != nil && p.Spec.NodeName == "" {
			p.Spec.NodeName = node
			if rng.IntN(2) == 0 {
				p.Annotations = map[string]string{tesserav1.AnnotationGPUAssign: tesserav1.GPUAssignment{Node: node,
					Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container, UUIDs: []string{apitest.GPUUUID(node, rng.IntN(9))}}}}.Encode()}
			}
			put(p)
		}
	case 3: // a pod finishes, starts terminating, changes labels or annotations, or is recreated with another spec
		if p := pod(); p != nil {
			switch rng.IntN(5) {
			case 3:
				p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
			case 4:
				p.UID = types.UID(fmt.Sprint("uid-again-", rng.IntN(1000)))
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(fmt.Sprint(1 + rng.IntN(8))), tesserav1.ResourceGPU: resource.MustParse(fmt.Sprint(rng.IntN(3)))}}
			case 0:
				p.Status.Phase = corev1.PodSucceeded
			case 1:
				p.DeletionTimestamp = &metav1.Time{Time: now}
			default:
				p.Labels = map[string]string{"app": "keep", tesserav1.LabelQueue: fmt.Sprintf("team-%d", rng.IntN(5))}
			}
			put(p)
		}
	case 4, 5: // a pod is deleted
		if p := pod(); p != nil {
			del(p)
		}
	case 6: // a node is added, changed or removed
		w := bigNode(rng.IntN(nodes + 1))
		switch rng.IntN(4) {
		case 0:
			del(w.Obj())
		case 1:
			put(w.Unschedulable().Obj())
		case 2:
			put(w.Allocatable(tesserav1.ResourceGPU, "4").Obj())
		default:
			put(w.Obj())
		}
	case 7: // a GPUNode is published, changed or removed
		switch g := apitest.MakeGPUNode(node); rng.IntN(3) {
		case 0:
			del(g.Obj())
		case 1:
			put(g.GPUs(8, "H100", 81559).Obj())
		default:
			put(g.GPUs(4, "A100", 40960).Obj())
		}
	case 8: // a queue or a namespace changes
		q := fmt.Sprintf("team-%d", rng.IntN(5))
		switch rng.IntN(3) {
		case 0:
			put(apitest.MakeQueue(q).Weight(int32(1 + rng.IntN(4))).Obj())
		case 1:
			del(apitest.MakeQueue(q).Obj())
		default:
			put(apitest.MakeNamespace(q).Annotation(tesserav1.AnnotationQueue, fmt.Sprintf("team-%d", rng.IntN(5))).Obj())
		}
	case 9: // a PodGroup or a batch Job changes
		base := rng.IntN(*next) / 20 * 20
		ns := fmt.Sprintf("team-%d", base%4)
		switch rng.IntN(3) {
		case 0:
			put(apitest.MakePodGroup(fmt.Sprintf("gang-%d", base), ns).UID(fmt.Sprint("uid-pg-", base)).MinMember(int32(1 + rng.IntN(5))).Obj())
		case 1:
			del(apitest.MakePodGroup(fmt.Sprintf("gang-%d", base), ns).Obj())
		default:
			put(apitest.MakeJob(fmt.Sprintf("job-%d", base+10), ns).UID(fmt.Sprint("uid-job-", base+10)).Parallelism(int32(1 + rng.IntN(3))).Obj())
		}
	case 10: // the PDB allows disruptions or not
		pdb := cl.get(&policyv1.PodDisruptionBudget{ObjectMeta: meta("keep", "team-0")}).(*policyv1.PodDisruptionBudget).DeepCopy()
		pdb.Status.DisruptionsAllowed = int32(rng.IntN(2))
		put(pdb)
	case 13: // a priority class changes value, or goes
		if rng.IntN(3) == 0 {
			del(&schedulingv1.PriorityClass{ObjectMeta: meta("high", "")})
		} else {
			put(&schedulingv1.PriorityClass{ObjectMeta: meta("high", ""), Value: int32(rng.IntN(2000))})
		}
	case 11, 12: // the scheduler assumes a bind
		if p := pod(); p != nil && p.Spec.NodeName == "" {
			a := ""
			if rng.IntN(2) == 0 {
				a = tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container,
					UUIDs: []string{apitest.GPUUUID(node, rng.IntN(8))}}}}.Encode()
			}
			at := now.Add(-time.Duration(rng.IntN(40)) * time.Second)
			inc.Assume(p.UID, node, a, at)
			full.Assume(p.UID, node, a, at)
		}
	default: // an eviction, or a bind that failed
		if p := pod(); p != nil {
			if rng.IntN(2) == 0 {
				inc.AssumeEvicted(p.UID, now)
				full.AssumeEvicted(p.UID, now)
			} else {
				inc.Forget(p.UID)
				full.Forget(p.UID)
			}
		}
	}
}

// listCounter counts the lists a cache reads through it.
type listCounter struct {
	*cluster
	lists atomic.Int32
}

func (r *listCounter) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	r.lists.Add(1)
	return r.cluster.List(ctx, l, opts...)
}

// TestSnapshotWaitsForHandlers: a snapshot taken while the registered event handlers
// are still catching up with the informers waits for them and is built from what they
// reported, without listing a second copy of every object.
func TestSnapshotWaitsForHandlers(t *testing.T) {
	cl := bigCluster(20, 100, rand.New(rand.NewPCG(1, 2)))
	r := &listCounter{cluster: cl}
	c := New(r, snapshot.Options{})
	c.track()
	var caughtUp atomic.Bool
	for range Objects() {
		c.synced = append(c.synced, caughtUp.Load)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		for _, o := range cl.all() {
			c.observe(o, false)
		}
		caughtUp.Store(true)
	}()
	snap, _, _, err := c.Snapshot(context.Background(), epoch)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.lists.Load(); n != 0 {
		t.Fatalf("the snapshot listed %d times; want it built from the handlers' objects", n)
	}
	if len(snap.Nodes) != 20 {
		t.Fatalf("snapshot has %d nodes, want 20", len(snap.Nodes))
	}

	// A cache without handlers lists at once.
	plain := &listCounter{cluster: cl}
	if _, _, _, err := New(plain, snapshot.Options{}).Snapshot(context.Background(), epoch); err != nil || plain.lists.Load() == 0 {
		t.Fatalf("a cache without Watch: err %v, %d lists", err, plain.lists.Load())
	}
}

func TestPriorityClassesGlobalDefault(t *testing.T) {
	pc := func(name string, value int32, def bool) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: def}
	}
	for _, tc := range []struct {
		name string
		pcs  []*schedulingv1.PriorityClass
		want string
	}{
		{"none", []*schedulingv1.PriorityClass{pc("batch-normal", 50, false)}, ""},
		{"one", []*schedulingv1.PriorityClass{pc("batch-normal", 50, false), pc("research", 200, true)}, "research"},
		{"several: the lowest value, as the API server picks", []*schedulingv1.PriorityClass{pc("high", 100, true), pc("low", 10, true)}, "low"},
	} {
		values, def := priorityClasses(tc.pcs)
		if def != tc.want || len(values) != len(tc.pcs) {
			t.Errorf("%s: default %q, %d values; want %q, %d", tc.name, def, len(values), tc.want, len(tc.pcs))
		}
	}
}
