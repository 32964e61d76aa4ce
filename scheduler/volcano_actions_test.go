package scheduler_test

// Volcano's action tests (volcano-sh/volcano at the anchor commit ed72c7c,
// pkg/scheduler/actions/*/*_test.go), ported as inputs and expected outputs: which
// pods bind to which nodes, which pods are evicted, which jobs are enqueued. Pods are
// named as in Volcano; "1" cpu is 1000 millicores, "1G" 1e9 bytes and "1Gi" 2^30.
// Every job that Volcano's case has Inqueue starts Inqueue here.
//
// Adaptations, each repeated at its case:
//   - Tessera evicts whole jobs and protects a job any of whose pods is not
//     preemptible; Volcano evicts single pods and skips only the protected ones. Where a
//     victim podgroup mixes preemptable and non-preemptable pods (or, in one case, pod
//     priorities), each of its pods is a job of one pod of the same queue and priority.
//   - Volcano's minMember 0 (no gang) is minMember 1 here (0 means "all tasks" in the
//     wrappers); pods are then placed one by one, as in Volcano.
//   - The cases run the whole profile, not only the action under test: volcano for
//     enqueue and allocate, volcano-seed (preempt and reclaim on) for preempt and
//     reclaim. Every preempt and reclaim case also runs under volcano, which has no
//     preempt or reclaim action and must evict nothing.
//
// Skipped, as they need what the profiles do not model:
//   - allocate_test.go TestAllocate/"master's min member can not be allocated, break
//     from allocating": per-role minimum members (task-spec minMember map).
//   - allocate_test.go TestFareShareAllocate/"queue with low DRF share value has high
//     priority, should allocate first" and "queue's DRF share value will be updated
//     ...": they turn proportion's allocatable check off, which the profiles never do
//     (the first queue's job would exceed what its queue deserves).
//   - allocate_test.go TestAllocateWithNetWorkTopologies, TestNodeLevelScore/
//     TestHyperNodeBinpackWithNetWorkTopologies, TestAllocateWithPartitionPolicy
//     NetworkTopology (hypernodes, sub-jobs), TestAllocateWithPVC (volumes),
//     TestAllocateWithDRA (DRA), the nomination and worksheet tests (nominated
//     hypernodes, internals), TestParseArgs (predicate error cache).
//   - enqueue_test.go TestEnqueue/"pggroup cannot enqueue because the specified queue
//     is c1, but there is only c2": a job naming a missing queue is refused when the
//     snapshot is built, before the scheduler sees it. "when podgroup status is
//     inqueue" and "... is running": nothing to decide.
//   - reclaim_test.go TestReclaim/"can not reclaim resources when task preemption
//     policy is never", "Reclaim succeeds for second task when first task has
//     PreemptionPolicy=Never", preempt_test.go TestPreempt/"can not preempt resources
//     when task preemption policy is never": no preemption policy per pod.
//   - reclaim_test.go TestReclaim/"can not reclaim resources when queue is not
//     open(proportion plugin)" and "(capacity plugin)": no queue state.
//   - preempt_test.go TestPreempt/"BestEffort high-priority pod preempt BestEffort
//     low-priority pod in same queue": a preemptor without requests is left to
//     Volcano's backfill, which the profiles model only for pods without requests
//     that allocate never sees.
//   - preempt_test.go TestNormalPreemptRechecksPredicateAfterEviction (hidden device
//     capacity) and TestTopologyAwarePreempt (topology-aware preemption, pod
//     anti-affinity); backfill_test.go TestPickUpPendingTasks (backfill internals).

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// Volcano's memory units.
const (
	vG  = int64(1_000_000_000)
	vGi = int64(1) << 30
)

// Priorities of Volcano's priority classes: preempt_test.go's and reclaim_test.go's.
const (
	preemptLow, preemptHigh           = 10, 100000
	reclaimLow, reclaimMid, reclaimHi = 100, 500, 1000
)

// vNode is util.BuildNode: a node of cpu millicores and mem bytes, labelled kv.
func vNode(name string, cpu, mem int64, kv ...string) *framework.Node {
	w := testutil.MakeNode(name).CPU(cpu).Memory(mem)
	for i := 0; i+1 < len(kv); i += 2 {
		w.Label(kv[i], kv[i+1])
	}
	return w.Obj()
}

// vQueue is util.BuildQueue: weight, and a cpu and memory capability unless 0.
func vQueue(name string, weight int32, capCPU, capMem int64) *framework.Queue {
	q := testutil.MakeQueue(name).Weight(weight).Obj()
	if capCPU > 0 {
		q.Capability.MilliCPU, q.Capability.Memory = capCPU, capMem
	}
	return q
}

// vGroup is a podgroup with its pods, each asking cpu and mem, all pending and the
// group Inqueue.
func vGroup(name string, q *framework.Queue, prio int32, minMember int, cpu, mem int64, pods ...string) *framework.Job {
	j := testutil.MakeJob(name).Tasks(len(pods)).MinMember(minMember).CPU(cpu).Memory(mem).Queue(q).Priority(prio).Obj()
	for i, t := range j.Tasks {
		t.Name, t.UID = pods[i], pods[i]
	}
	j.Inqueue = true
	return j
}

// vRunning makes the group's first k pods run on n.
func vRunning(j *framework.Job, k int, n *framework.Node) *framework.Job {
	all := j.Tasks
	j.Tasks = all[:k]
	testutil.Run(j, testutil.Epoch, n)
	j.Tasks = all
	return j
}

// vPod is a group of one running pod on n: a victim pod of Volcano's case.
func vPod(pod string, q *framework.Queue, prio int32, cpu, mem int64, n *framework.Node) *framework.Job {
	return vRunning(vGroup(pod, q, prio, 1, cpu, mem, pod), 1, n)
}

// boundPods maps the pods a session bound to their nodes.
func boundPods(r *scheduler.Result) map[string]string {
	out := map[string]string{}
	for _, b := range r.Bindings {
		out[b.Task.Name] = b.Node.Name
	}
	return out
}

// evictedPods lists the pods a session evicted, sorted.
func evictedPods(r *scheduler.Result) []string {
	var out []string
	for _, e := range r.Evictions {
		out = append(out, e.Task.Name)
	}
	slices.Sort(out)
	return out
}

type volcanoWorld func() ([]*framework.Node, []*framework.Job, []*framework.Queue)

func runVolcano(t *testing.T, profile string, build volcanoWorld) (*scheduler.Result, []*framework.Job) {
	t.Helper()
	nodes, jobs, queues := build()
	snap := testutil.Snapshot(time.Hour, nodes, jobs, queues...)
	return testutil.Scheduler(t, profile).RunSession(snap), jobs
}

// TestVolcanoAllocate ports allocate_test.go's cases under the volcano profile: gangs
// all-or-nothing, node selectors, and queues allocating up to what proportion says
// they deserve.
func TestVolcanoAllocate(t *testing.T) {
	cases := []struct {
		name  string
		build volcanoWorld
		want  map[string]string
	}{
		{"allocate_test.go TestAllocate/prepredicate failed: node selector does not match", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1 := vQueue("c1", 1, 0, 0)
			pg1 := vGroup("pg1", c1, 0, 1, 1000, vG, "p1", "p2")
			pg1.Tasks[0].NodeSelector = map[string]string{"nodeRole": "master"}
			pg1.Tasks[1].NodeSelector = map[string]string{"nodeRole": "worker"}
			return []*framework.Node{vNode("n1", 2000, 4*vGi, "nodeRole", "worker")}, []*framework.Job{pg1}, []*framework.Queue{c1}
		}, map[string]string{"p2": "n1"}},
		// Volcano's per-role minimum (master 1, worker 1) is not modelled; the group's
		// minMember 2 alone gives the same placement.
		{"allocate_test.go TestAllocate/prepredicate failed and tasks are not used up, continue on until min member meet", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1 := vQueue("c1", 1, 0, 0)
			pg1 := vGroup("pg1", c1, 0, 2, 1000, vG, "p0", "p1", "p2", "p3")
			for i, role := range []string{"master", "master", "worker", "worker"} {
				pg1.Tasks[i].NodeSelector = map[string]string{"nodeRole": role}
			}
			return []*framework.Node{vNode("n1", 1000, 2*vGi, "nodeRole", "master"), vNode("n2", 1000, 2*vGi, "nodeRole", "worker")},
				[]*framework.Job{pg1}, []*framework.Queue{c1}
		}, map[string]string{"p0": "n1", "p2": "n2"}},
		{"allocate_test.go TestAllocate/one Job with two Pods on one node", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1 := vQueue("c1", 1, 0, 0)
			pg1 := vGroup("pg1", c1, 0, 1, 1000, vG, "p1", "p2")
			return []*framework.Node{vNode("n1", 2000, 4*vGi)}, []*framework.Job{pg1}, []*framework.Queue{c1}
		}, map[string]string{"p1": "n1", "p2": "n1"}},
		// Each queue deserves half the node: one pod each.
		{"allocate_test.go TestAllocate/two Jobs on one node", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1, c2 := vQueue("c1", 1, 0, 0), vQueue("c2", 1, 0, 0)
			pg1 := vGroup("pg1", c1, 0, 1, 1000, vG, "pg1-p-1", "pg1-p-2")
			pg2 := vGroup("pg2", c2, 0, 1, 1000, vG, "pg2-p-1", "pg2-p-2")
			return []*framework.Node{vNode("n1", 2000, 4*vG)}, []*framework.Job{pg1, pg2}, []*framework.Queue{c1, c2}
		}, map[string]string{"pg1-p-1": "n1", "pg2-p-1": "n1"}},
		{"allocate_test.go TestAllocate/high priority queue should not block others", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1, c2 := vQueue("c1", 1, 0, 0), vQueue("c2", 1, 0, 0)
			pg1 := vGroup("pg1", c1, 0, 1, 3000, vG, "p1")
			pg2 := vGroup("pg2", c2, 0, 1, 1000, vG, "p2")
			return []*framework.Node{vNode("n1", 2000, 4*vG)}, []*framework.Job{pg1, pg2}, []*framework.Queue{c1, c2}
		}, map[string]string{"p2": "n1"}},
		// Volcano's case turns proportion's allocatable check off; the queue deserves
		// all it asks for (3 cpu), so the outcome is the same with it on.
		{"allocate_test.go TestFareShareAllocate/queue's one jobs has no pending tasks, should be put back to queues for next job", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q-1", 1, 0, 0)
			n := vNode("node-1", 5000, 5*vG)
			pg1 := vPod("pod-1", q1, 0, 1000, vG, n)
			pg2 := vGroup("pg-2", q1, 0, 1, 2000, 2*vG, "pod-2")
			return []*framework.Node{n}, []*framework.Job{pg1, pg2}, []*framework.Queue{q1}
		}, map[string]string{"pod-2": "node-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := runVolcano(t, "volcano", tc.build)
			if got := boundPods(r); !maps.Equal(got, tc.want) {
				t.Fatalf("bound %v, want %v", got, tc.want)
			}
			if len(r.Evictions) > 0 {
				t.Fatalf("evicted %v", evictedPods(r))
			}
		})
	}
}

// TestVolcanoEnqueue ports enqueue_test.go's cases under the volcano profile (enqueue
// with overcommit and proportion's queue gate).
func TestVolcanoEnqueue(t *testing.T) {
	cases := []struct {
		name  string
		build volcanoWorld
		want  map[string]bool // job: Inqueue after the session
	}{
		// Volcano's podgroups here have no minResources and the cluster no nodes, so
		// the gates see nothing to admit. Tessera's minimum is the gang's requests
		// (what Volcano's controller fills minResources with), so a node of 4 cpu and
		// 4G stands for the cluster: 3 + 1 cpu fit it, and each queue's capability.
		{"enqueue_test.go TestEnqueue/when podgroup status is pending", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1, c2 := vQueue("c1", 1, 4000, 4*vG), vQueue("c2", 1, 4000, 4*vG)
			pg1 := vGroup("pg1", c1, 0, 1, 3000, vG, "p1")
			pg2 := vGroup("pg2", c2, 0, 1, 1000, vG, "p2")
			pg1.Inqueue, pg2.Inqueue = false, false
			return []*framework.Node{vNode("n1", 4000, 4*vG)}, []*framework.Job{pg1, pg2}, []*framework.Queue{c1, c2}
		}, map[string]bool{"pg1": true, "pg2": true}},
		{"enqueue_test.go TestEnqueue/pggroup cannot enqueue because queue resources are less than podgroup MinResources", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			c1 := vQueue("c1", 1, 1000, vG)
			pg1 := vGroup("pg1", c1, 0, 1, 1000, vG, "p1")
			pg1.MinResources = framework.Resources{MilliCPU: 8000, Memory: 8 * vG}
			pg1.Inqueue = false
			return nil, []*framework.Job{pg1}, []*framework.Queue{c1}
		}, map[string]bool{"pg1": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, jobs := runVolcano(t, "volcano", tc.build)
			got := map[string]bool{}
			for _, j := range jobs {
				got[j.Name] = j.Inqueue
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("inqueue %v, want %v", got, tc.want)
			}
			for _, j := range jobs {
				if !j.Inqueue && (j.Pending == nil || j.Pending.Code != framework.ReasonNotEnqueued) {
					t.Fatalf("%s not enqueued with reason %v", j.Name, j.Pending)
				}
			}
		})
	}
}

// TestVolcanoEvictions ports reclaim_test.go's and preempt_test.go's cases: reclaim
// between queues takes only from queues above what they deserve, preempt within a
// queue by priority. volcano-seed evicts what Volcano evicts; volcano, without those
// actions, never evicts.
func TestVolcanoEvictions(t *testing.T) {
	cases := []struct {
		name  string
		build volcanoWorld
		want  []string // pods volcano-seed evicts
	}{
		// pg1's pods (preemptable false, true, false) are three jobs of one pod. q1
		// deserves 2 cpu and holds 3; q2 deserves the 1 cpu its pod asks.
		{"reclaim_test.go TestReclaim/Two Queue with one Queue overusing resource, should reclaim", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1, q2 := vQueue("q1", 1, 0, 0), vQueue("q2", 1, 0, 0)
			n := vNode("n1", 3000, 3*vGi)
			p1 := vPod("preemptee1", q1, reclaimLow, 1000, vG, n)
			p2 := vPod("preemptee2", q1, reclaimLow, 1000, vG, n)
			p3 := vPod("preemptee3", q1, reclaimLow, 1000, vG, n)
			p1.Tasks[0].Preemptible, p3.Tasks[0].Preemptible = false, false
			pg2 := vGroup("pg2", q2, reclaimHi, 1, 1000, vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, p2, p3, pg2}, []*framework.Queue{q1, q2}
		}, []string{"preemptee2"}},
		// pg2's pods (preemptable true, false) are two jobs of one pod; pg1's are both
		// preemptable and stay one job. q1 and q2 each hold 2 cpu of the 1.5 they
		// deserve; the low-priority pod goes first.
		{"reclaim_test.go TestReclaim/sort reclaimees when reclaiming from overusing queue", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1, q2, q3 := vQueue("q1", 1, 0, 0), vQueue("q2", 1, 0, 0), vQueue("q3", 1, 0, 0)
			n := vNode("n1", 4000, 4*vGi)
			pg1 := vRunning(vGroup("pg1", q1, reclaimMid, 1, 1000, vG, "preemptee1-1", "preemptee1-2"), 2, n)
			p21 := vPod("preemptee2-1", q2, reclaimLow, 1000, vG, n)
			p22 := vPod("preemptee2-2", q2, reclaimLow, 1000, vG, n)
			p22.Tasks[0].Preemptible = false
			pg3 := vGroup("pg3", q3, reclaimHi, 1, 1000, vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{pg1, p21, p22, pg3}, []*framework.Queue{q1, q2, q3}
		}, []string{"preemptee2-1"}},
		// Volcano orders victims of different queues by their queues, the lowest
		// priority first (q1, priority 5, before q2, priority 10). Tessera orders them
		// by job priority, then start, then name; the jobs tie, and the name picks the
		// same pod.
		{"reclaim_test.go TestReclaim/sort reclaimees when reclaiming from overusing queues with different queue priority", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1, q2, q3 := vQueue("q1", 1, 0, 0), vQueue("q2", 1, 0, 0), vQueue("q3", 1, 0, 0)
			q1.Priority, q2.Priority, q3.Priority = 5, 10, 1
			n := vNode("n1", 4000, 4*vGi)
			p11 := vPod("preemptee1-1", q1, reclaimMid, 1000, vG, n)
			p12 := vPod("preemptee1-2", q1, reclaimMid, 1000, vG, n)
			p21 := vPod("preemptee2-1", q2, reclaimMid, 1000, vG, n)
			p22 := vPod("preemptee2-2", q2, reclaimMid, 1000, vG, n)
			p12.Tasks[0].Preemptible, p22.Tasks[0].Preemptible = false, false
			pg3 := vGroup("pg3", q3, reclaimMid, 1, 1000, vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p11, p12, p21, p22, pg3}, []*framework.Queue{q1, q2, q3}
		}, []string{"preemptee1-1"}},
		// cpu is free on the node, memory is not: one 1G pod must go, from q1 (queue
		// priority 1; the same remark on victim order as above applies).
		{"reclaim_test.go TestReclaim/Node available resources should be included in reclaimed resources", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1, q2, q3 := vQueue("q1", 1, 0, 0), vQueue("q2", 1, 0, 0), vQueue("q3", 3, 0, 0)
			q1.Priority, q2.Priority = 1, 2
			n := vNode("n1", 10000, 2*vGi)
			p1 := vPod("preemptee1-1", q1, reclaimMid, 1000, vG, n)
			p2 := vPod("preemptee2-1", q2, reclaimMid, 1000, vG, n)
			pg3 := vGroup("pg3", q3, reclaimMid, 1, 2000, vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, p2, pg3}, []*framework.Queue{q1, q2, q3}
		}, []string{"preemptee1-1"}},
		// The preemptor fits in what is free: allocate places it and nobody is evicted.
		{"reclaim_test.go TestReclaim/only commit evictions on the node where reclaim succeeds", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1, q2 := vQueue("q1", 1, 0, 0), vQueue("q2", 9, 0, 0)
			n := vNode("n1", 10000, 10*vG)
			v := vPod("victim-n1", q1, reclaimLow, 2000, 2*vG, n)
			pg := vGroup("pg-preemptor", q2, reclaimLow, 1, 3000, 3*vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{v, pg}, []*framework.Queue{q1, q2}
		}, nil},
		{"preempt_test.go TestPreempt/do not preempt if there are enough idle resources", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 0, 0)
			n := vNode("n1", 10000, 10*vG)
			pg1 := vRunning(vGroup("pg1", q1, 0, 3, 1000, vG, "preemptee1", "preemptee2", "preemptor1"), 2, n)
			return []*framework.Node{n}, []*framework.Job{pg1}, []*framework.Queue{q1}
		}, nil},
		{"preempt_test.go TestPreempt/do not preempt if job is pipelined", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 0, 0)
			n := vNode("n1", 3000, 3*vG)
			pg1 := vRunning(vGroup("pg1", q1, 0, 1, 1000, vG, "preemptee1", "preemptee2"), 2, n)
			pg2 := vRunning(vGroup("pg2", q1, 0, 1, 1000, vG, "preemptee3", "preemptor2"), 1, n)
			return []*framework.Node{n}, []*framework.Job{pg1, pg2}, []*framework.Queue{q1}
		}, nil},
		// pg1's pods (preemptable true, false) are two jobs of one pod.
		{"preempt_test.go TestPreempt/preempt one task of different job to fit both jobs on one node", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 0, 0)
			n := vNode("n1", 2000, 2*vG)
			p1 := vPod("preemptee1", q1, preemptLow, 1000, vG, n)
			p2 := vPod("preemptee2", q1, preemptLow, 1000, vG, n)
			p2.Tasks[0].Preemptible = false
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 1000, vG, "preemptor1", "preemptor2")
			return []*framework.Node{n}, []*framework.Job{p1, p2, pg2}, []*framework.Queue{q1}
		}, []string{"preemptee1"}},
		// pg1's pods (preemptable true, true, false) are three jobs of one pod.
		{"preempt_test.go TestPreempt/preempt enough tasks to fit large task of different job", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 0, 0)
			n := vNode("n1", 6000, 6*vG)
			p1 := vPod("preemptee1", q1, preemptLow, 1000, vG, n)
			p2 := vPod("preemptee2", q1, preemptLow, 1000, vG, n)
			p3 := vPod("preemptee3", q1, preemptLow, 1000, vG, n)
			p3.Tasks[0].Preemptible = false
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 5000, 5*vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, p2, p3, pg2}, []*framework.Queue{q1}
		}, []string{"preemptee1", "preemptee2"}},
		// The queue's capability (4 cpu), not the node, keeps the preemptor out.
		{"preempt_test.go TestPreempt/preempt low priority job in same queue", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 4000, 4*vG)
			n := vNode("n1", 12000, 12*vG)
			p1 := vPod("preemptee1", q1, preemptLow, 3000, 3*vG, n)
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 3000, 3*vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, pg2}, []*framework.Queue{q1}
		}, []string{"preemptee1"}},
		{"preempt_test.go TestPreempt/preempt low priority job in same queue: allocatable and has enough resource, don't preempt", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 6000, 6*vG)
			n := vNode("n1", 12000, 12*vG)
			p1 := vPod("preemptee1", q1, preemptLow, 3000, 3*vG, n)
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 3000, 3*vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, pg2}, []*framework.Queue{q1}
		}, nil},
		// pg1's pods (preemptable false; true; true with the high pod priority) are
		// three jobs of one pod, the last of high priority (priority is per job here).
		{"preempt_test.go TestPreempt/preempt low priority job in same queue but not pod with preemptable=false or higher priority", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 3000, 3*vG)
			n := vNode("n1", 12000, 12*vG)
			p1 := vPod("preemptee1", q1, preemptLow, 1000, vG, n)
			p2 := vPod("preemptee2", q1, preemptLow, 1000, vG, n)
			p3 := vPod("preemptee3", q1, preemptHigh, 1000, vG, n)
			p1.Tasks[0].Preemptible = false
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 1000, vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, p2, p3, pg2}, []*framework.Queue{q1}
		}, []string{"preemptee2"}},
		// The node takes one pod; the running one asks for nothing else.
		{"preempt_test.go TestPreempt/unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 6000, 6*vG)
			n := vNode("n1", 12000, 12*vG)
			n.Allocatable.Pods = 1
			p1 := vPod("preemptee1", q1, preemptLow, 0, 0, n)
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 3000, 3*vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{p1, pg2}, []*framework.Queue{q1}
		}, []string{"preemptee1"}},
		// The preemptor (4 cpu) exceeds the queue's capability (3 cpu) even with every
		// victim gone: nothing is evicted.
		{"preempt_test.go TestPreempt/rollback evictions when preemptor exceeds queue capacity after evicting victims", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 3000, 3*vG)
			n := vNode("n1", 10000, 10*vG)
			pg1 := vRunning(vGroup("pg1", q1, preemptLow, 1, 1000, vG, "preemptee1", "preemptee2"), 2, n)
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 4000, 4*vG, "preemptor1")
			return []*framework.Node{n}, []*framework.Job{pg1, pg2}, []*framework.Queue{q1}
		}, nil},
		{"preempt_test.go TestPreempt/only commit evictions on the node where preemption succeeds", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1 := vQueue("q1", 1, 6000, 6*vG)
			n1, n2 := vNode("n1", 3000, 3*vG), vNode("n2", 4000, 4*vG)
			pg1 := vPod("preemptee1", q1, preemptLow, 1000, vG, n1)
			pg3 := vPod("preemptee2", q1, preemptLow, 4000, 4*vG, n2)
			pg2 := vGroup("pg2", q1, preemptHigh, 1, 3000, 3*vG, "preemptor1")
			return []*framework.Node{n1, n2}, []*framework.Job{pg1, pg2, pg3}, []*framework.Queue{q1}
		}, []string{"preemptee2"}},
		// q2 holds what it deserves (1 cpu, 1G), so allocate skips it as overused; its
		// high-priority job preempts its low-priority one.
		{"preempt_test.go TestPreempt/multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue", func() ([]*framework.Node, []*framework.Job, []*framework.Queue) {
			q1, q2 := vQueue("q1", 1, 0, 0), vQueue("q2", 1, 4000, 4*vG)
			n := vNode("n1", 2000, 2*vG)
			pg1 := vPod("q1-runner1", q1, 0, 1000, vG, n)
			pg2 := vPod("q2-preemptee1", q2, preemptLow, 1000, vG, n)
			pg3 := vGroup("pg3", q2, preemptHigh, 1, 1000, vG, "q2-preemptor1")
			return []*framework.Node{n}, []*framework.Job{pg1, pg2, pg3}, []*framework.Queue{q1, q2}
		}, []string{"q2-preemptee1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, profile := range []string{"volcano-seed", "volcano"} {
				want := tc.want
				if profile == "volcano" {
					want = nil
				}
				r, _ := runVolcano(t, profile, tc.build)
				if got := evictedPods(r); !slices.Equal(got, want) {
					t.Errorf("%s evicted %v, want %v", profile, got, want)
				}
			}
		})
	}
}
