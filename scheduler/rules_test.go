package scheduler_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// held sums the GPUs (in whole GPUs) that the jobs of q hold after a session.
func held(snap *framework.Snapshot, q *framework.Queue) float64 {
	var milli int64
	for _, j := range snap.Jobs {
		for x := j.Queue; x != nil; x = x.Parent {
			if x == q {
				for _, task := range j.Tasks {
					if task.Status.Holds() {
						milli += task.Placed.GPU
					}
				}
				break
			}
		}
	}
	return float64(milli) / framework.MilliPerGPU
}

// evictedJobs lists the keys of the jobs a session evicted tasks of, sorted.
func evictedJobs(r *scheduler.Result) []string {
	var out []string
	for _, e := range r.Evictions {
		if !slices.Contains(out, e.Task.Job.Name) {
			out = append(out, e.Task.Job.Name)
		}
	}
	slices.Sort(out)
	return out
}

// jobsOf makes count single-task jobs named prefix-i asking gpus GPUs each in q.
func jobsOf(prefix string, count, gpus int, q *framework.Queue) []*framework.Job {
	out := make([]*framework.Job, count)
	for i := range out {
		out[i] = testutil.MakeJob(fmt.Sprintf("%s-%d", prefix, i)).GPU(gpus).Queue(q).Created(time.Duration(i) * time.Second).Obj()
	}
	return out
}

// waitedAnHour marks the jobs as waiting since an hour before now, longer than the
// tessera profile's reclaimAfter, so that they may reclaim at once.
func waitedAnHour(now time.Time, jobs ...*framework.Job) {
	for _, j := range jobs {
		j.WaitingSince = now.Add(-time.Hour)
	}
}

func wantReason(t *testing.T, j *framework.Job, code, msg string) {
	t.Helper()
	if j.Pending == nil || j.Pending.Code != code || !strings.Contains(j.Pending.Message, msg) {
		t.Fatalf("%s: reason %v, want %s containing %q", j.Name, j.Pending, code, msg)
	}
}

func TestGangRules(t *testing.T) {
	tests := []struct {
		name      string
		freeNodes int // 8-GPU nodes left completely free (the rest have one GPU in use)
		job       *framework.Job
		wantBound int
		wantCode  string
		wantMsg   string
	}{
		{"whole gang fits", 4, testutil.MakeJob("g").Tasks(4).GPU(8).Obj(), 4, "", ""},
		{"one short binds nothing", 3, testutil.MakeJob("g").Tasks(4).GPU(8).Obj(), 0,
			framework.ReasonGangIncomplete, "gang needs 4 x 8 GPUs, only 3 fit together"},
		{"minMember below tasks binds what fits", 3, testutil.MakeJob("g").Tasks(4).MinMember(2).GPU(8).Obj(), 3,
			framework.ReasonUnschedulable, "3 of 4 pending pods placed"},
		{"minMember not reached", 1, testutil.MakeJob("g").Tasks(4).MinMember(2).GPU(8).Obj(), 0,
			framework.ReasonGangIncomplete, "gang needs 2 x 8 GPUs, only 1 fit together"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := nodes(4, 8)
			var jobs []*framework.Job
			for i := tc.freeNodes; i < 4; i++ {
				busy := testutil.MakeJob(fmt.Sprintf("busy-%d", i)).GPU(1).Obj()
				testutil.Run(busy, testutil.Epoch, ns[i])
				jobs = append(jobs, busy)
			}
			jobs = append(jobs, tc.job)
			snap := testutil.Snapshot(0, ns, jobs)
			r := newTessera(t).RunSession(snap)
			checkInvariants(t, tc.name, true, snap, r)
			if got := boundTasks(r, tc.job); got != tc.wantBound {
				t.Fatalf("bound %d tasks, want %d", got, tc.wantBound)
			}
			if tc.wantCode == "" {
				if tc.job.Pending != nil {
					t.Fatalf("unexpected reason %v", tc.job.Pending)
				}
				return
			}
			wantReason(t, tc.job, tc.wantCode, tc.wantMsg)
		})
	}
}

// TestTwoGangsTakeTurns: two gangs that together exceed the cluster never deadlock; the
// older runs, and the other runs once it finishes.
func TestTwoGangsTakeTurns(t *testing.T) {
	ns := nodes(4, 8)
	a := testutil.MakeJob("a").Tasks(3).GPU(8).Obj()
	b := testutil.MakeJob("b").Tasks(3).GPU(8).Created(time.Second).Obj()
	s := newTessera(t)
	snap := testutil.Snapshot(0, ns, []*framework.Job{a, b})
	r := s.RunSession(snap)
	if boundTasks(r, a) != 3 || boundTasks(r, b) != 0 {
		t.Fatalf("first session: a=%d b=%d", boundTasks(r, a), boundTasks(r, b))
	}
	wantReason(t, b, framework.ReasonGangIncomplete, "gang needs 3 x 8 GPUs, only 1 fit together")
	commitResult(snap)
	finishJob(a)
	snap.Now = snap.Now.Add(time.Minute)
	if r = s.RunSession(snap); boundTasks(r, b) != 3 {
		t.Fatalf("b did not run after a finished: %d bound, %v", boundTasks(r, b), b.Pending)
	}
}

func TestQueueCapabilityOfParent(t *testing.T) {
	parent := testutil.MakeQueue("train").CapabilityGPUs(12).Obj()
	dev := testutil.MakeQueue("train-dev").Parent(parent).Obj()
	prod := testutil.MakeQueue("train-prod").Parent(parent).Obj()
	a := testutil.MakeJob("a").GPU(8).Queue(dev).Obj()
	b := testutil.MakeJob("b").GPU(8).Queue(prod).Created(time.Second).Obj()
	snap := testutil.Snapshot(0, nodes(4, 8), []*framework.Job{a, b}, parent, dev, prod)
	r := newTessera(t).RunSession(snap)
	checkInvariants(t, "parent capability", true, snap, r)
	if boundTasks(r, a)+boundTasks(r, b) != 1 {
		t.Fatalf("both children ran past the parent's capability: a=%d b=%d", boundTasks(r, a), boundTasks(r, b))
	}
	waiting := b
	if boundTasks(r, b) == 1 {
		waiting = a
	}
	wantReason(t, waiting, framework.ReasonQueueCapability, "queue train at capability 8/12 GPU")

	// A gang that can never fit the capability is not enqueued at all.
	huge := testutil.MakeJob("huge").Tasks(2).GPU(8).Queue(dev).Obj()
	snap = testutil.Snapshot(0, nodes(4, 8), []*framework.Job{huge}, parent, dev, prod)
	newTessera(t).RunSession(snap)
	wantReason(t, huge, framework.ReasonNotEnqueued, "queue train has capability")
}

// TestQueueShares covers deserved, lending and reclaim, weights and guarantees on a
// 16-GPU cluster (two 8-GPU nodes).
func TestQueueShares(t *testing.T) {
	t.Run("weight splits the cluster 2:1", func(t *testing.T) {
		a := testutil.MakeQueue("a").Weight(2).Obj()
		b := testutil.MakeQueue("b").Weight(1).Obj()
		jobs := append(jobsOf("a", 12, 1, a), jobsOf("b", 12, 1, b)...)
		snap := testutil.Snapshot(0, nodes(3, 4), jobs, a, b)
		r := newTessera(t).RunSession(snap)
		checkInvariants(t, "weights", true, snap, r)
		if held(snap, a) != 8 || held(snap, b) != 4 {
			t.Fatalf("a holds %g GPUs, b %g; want 8 and 4", held(snap, a), held(snap, b))
		}
	})
	t.Run("deserved guaranteed under contention", func(t *testing.T) {
		a := testutil.MakeQueue("a").DeservedGPUs(12).Obj()
		b := testutil.MakeQueue("b").Weight(10).Obj()
		jobs := append(jobsOf("a", 16, 1, a), jobsOf("b", 16, 1, b)...)
		snap := testutil.Snapshot(0, nodes(2, 8), jobs, a, b)
		newTessera(t).RunSession(snap)
		if held(snap, a) != 12 || held(snap, b) != 4 {
			t.Fatalf("a holds %g GPUs, b %g; want 12 and 4", held(snap, a), held(snap, b))
		}
	})
	t.Run("guarantee never lent", func(t *testing.T) {
		a := testutil.MakeQueue("a").GuaranteeGPUs(6).Obj()
		b := testutil.MakeQueue("b").Obj()
		snap := testutil.Snapshot(0, nodes(2, 8), jobsOf("b", 16, 1, b), a, b)
		newTessera(t).RunSession(snap)
		if held(snap, b) != 10 {
			t.Fatalf("b holds %g GPUs, want 10 (6 guaranteed to idle queue a)", held(snap, b))
		}
	})
	for _, reclaimable := range []bool{true, false} {
		t.Run(fmt.Sprintf("idle deserved lent, reclaimable=%v", reclaimable), func(t *testing.T) {
			owner := testutil.MakeQueue("owner").DeservedGPUs(8).Obj()
			bw := testutil.MakeQueue("borrower").DeservedGPUs(8)
			if !reclaimable {
				bw.NotReclaimable()
			}
			borrower := bw.Obj()
			s := newTessera(t)
			snap := testutil.Snapshot(0, nodes(2, 8), jobsOf("borrow", 4, 4, borrower), owner, borrower)
			checkInvariants(t, "lend", true, snap, s.RunSession(snap))
			if held(snap, borrower) != 16 {
				t.Fatalf("idle deserved not lent: borrower holds %g of 16 GPUs", held(snap, borrower))
			}
			commitResult(snap)
			// The owner wants its deserved back: its jobs wait reclaimAfter (10m in the
			// tessera preset) for room, then reclaim.
			snap.Jobs = append(snap.Jobs, jobsOf("own", 2, 4, owner)...)
			snap.Now = snap.Now.Add(time.Hour)
			r := s.RunSession(snap)
			checkInvariants(t, "wait before reclaim", true, snap, r)
			if len(r.Evictions) != 0 {
				t.Fatalf("reclaimed %d tasks for jobs that had not waited", len(r.Evictions))
			}
			for _, j := range snap.Jobs {
				if j.Queue == owner && reclaimable {
					wantReason(t, j, framework.ReasonUnschedulable, "may reclaim from queues beyond their share at 2026-01-01 01:10:00 (reclaimAfter 10m0s)")
				}
			}
			snap.Now = snap.Now.Add(9 * time.Minute)
			if r := s.RunSession(snap); len(r.Evictions) != 0 {
				t.Fatalf("reclaimed %d tasks for jobs that had waited 9m", len(r.Evictions))
			}
			snap.Now = snap.Now.Add(time.Minute)
			r = s.RunSession(snap)
			checkInvariants(t, "reclaim", true, snap, r)
			if !reclaimable {
				if len(r.Evictions) != 0 {
					t.Fatalf("non-reclaimable queue lost %d tasks", len(r.Evictions))
				}
				return
			}
			if len(r.Evictions) != 2 || held(snap, owner) != 8 || held(snap, borrower) != 8 {
				t.Fatalf("reclaim: %d evictions, owner %g GPUs, borrower %g; want 2, 8, 8", len(r.Evictions), held(snap, owner), held(snap, borrower))
			}
			for _, e := range r.Evictions {
				if e.By.Queue != owner || !strings.Contains(e.Reason, "reclaimed") {
					t.Fatalf("eviction %s for %s: %s", e.Task.Key(), e.By.Key(), e.Reason)
				}
			}
		})
	}
	t.Run("children share the parent's deserved", func(t *testing.T) {
		parent := testutil.MakeQueue("research").DeservedGPUs(8).Obj()
		c1 := testutil.MakeQueue("research-a").Parent(parent).Obj()
		c2 := testutil.MakeQueue("research-b").Parent(parent).Obj()
		other := testutil.MakeQueue("prod").DeservedGPUs(8).Obj()
		jobs := append(jobsOf("c1", 8, 1, c1), jobsOf("c2", 8, 1, c2)...)
		jobs = append(jobs, jobsOf("prod", 16, 1, other)...)
		snap := testutil.Snapshot(0, nodes(2, 8), jobs, parent, c1, c2, other)
		newTessera(t).RunSession(snap)
		if held(snap, parent) != 8 || held(snap, c1) != 4 || held(snap, c2) != 4 || held(snap, other) != 8 {
			t.Fatalf("research %g (a %g, b %g), prod %g; want 8 (4, 4), 8", held(snap, parent), held(snap, c1), held(snap, c2), held(snap, other))
		}
	})
}

// TestPreemption covers victim choice within a queue on 8-GPU nodes. The queue deserves
// nothing: eviction protection and min runtime hold against its own work anyway, the
// min runtime up to the queue's cap.
func TestPreemption(t *testing.T) {
	type victim struct {
		name     string
		node     int
		tasks    int
		gpus     int
		priority int32
		started  time.Duration // after Epoch
		protect  bool          // not preemptible
		minRun   time.Duration
	}
	tests := []struct {
		name        string
		nodes       int
		victims     []victim
		preemptor   *framework.Job
		wantEvicted []string
		capMinRun   time.Duration // the queue's MaxMinRuntime
	}{
		{"lowest priority first", 2,
			[]victim{{name: "p1", node: 0, tasks: 1, gpus: 8, priority: 1}, {name: "p0", node: 1, tasks: 1, gpus: 8, priority: 0}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), []string{"p0"}, 0},
		{"youngest first", 2,
			[]victim{{name: "old", node: 0, tasks: 1, gpus: 8}, {name: "young", node: 1, tasks: 1, gpus: 8, started: 30 * time.Minute}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), []string{"young"}, 0},
		{"fewest gangs broken", 2,
			[]victim{{name: "y1", node: 0, tasks: 1, gpus: 4, started: 30 * time.Minute}, {name: "y2", node: 0, tasks: 1, gpus: 4, started: 20 * time.Minute},
				{name: "whole", node: 1, tasks: 1, gpus: 8}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), []string{"whole"}, 0},
		{"victim gang evicted whole", 1,
			[]victim{{name: "gang", node: 0, tasks: 4, gpus: 2}},
			testutil.MakeJob("hi").GPU(2).Priority(5).Obj(), []string{"gang"}, 0},
		{"min runtime protects young jobs", 2,
			[]victim{{name: "young", node: 0, tasks: 1, gpus: 8, started: 50 * time.Minute, minRun: 30 * time.Minute}, {name: "old", node: 1, tasks: 1, gpus: 8, minRun: 30 * time.Minute}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), []string{"old"}, 0},
		{"non-preemptible untouched", 2,
			[]victim{{name: "young", node: 0, tasks: 1, gpus: 8, started: 50 * time.Minute, protect: true}, {name: "old", node: 1, tasks: 1, gpus: 8}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), []string{"old"}, 0},
		{"nothing evictable", 1,
			[]victim{{name: "young", node: 0, tasks: 1, gpus: 8, started: 50 * time.Minute, minRun: time.Hour}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), nil, 0},
		{"equal priority never preempts", 1,
			[]victim{{name: "peer", node: 0, tasks: 1, gpus: 8, priority: 5}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), nil, 0},
		{"unneeded victims restored", 3,
			[]victim{{name: "pinned", node: 0, tasks: 1, gpus: 6, protect: true}, {name: "small", node: 0, tasks: 1, gpus: 2, started: 40 * time.Minute},
				{name: "b", node: 1, tasks: 1, gpus: 8, started: 10 * time.Minute}, {name: "c", node: 2, tasks: 1, gpus: 8, started: 5 * time.Minute}},
			testutil.MakeJob("hi").Tasks(2).GPU(8).Priority(5).Obj(), []string{"b", "c"}, 0},
		{"queue caps the min runtime", 1,
			[]victim{{name: "greedy", node: 0, tasks: 1, gpus: 8, minRun: 24 * time.Hour}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), []string{"greedy"}, 30 * time.Minute},
		{"protection holds against the queue's own work", 1,
			[]victim{{name: "pinned", node: 0, tasks: 1, gpus: 8, started: 50 * time.Minute, protect: true}},
			testutil.MakeJob("hi").GPU(8).Priority(5).Obj(), nil, 30 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := testutil.MakeQueue("q").Obj()
			q.MaxMinRuntime = tc.capMinRun
			ns := nodes(tc.nodes, 8)
			var jobs []*framework.Job
			for _, v := range tc.victims {
				w := testutil.MakeJob(v.name).Tasks(v.tasks).GPU(v.gpus).Priority(v.priority).Queue(q).MinRuntime(v.minRun)
				if v.protect {
					w.NotPreemptible()
				}
				j := w.Obj()
				on := make([]*framework.Node, v.tasks)
				for i := range on {
					on[i] = ns[v.node]
				}
				testutil.Run(j, testutil.Epoch.Add(v.started), on...)
				jobs = append(jobs, j)
			}
			tc.preemptor.Queue = q
			jobs = append(jobs, tc.preemptor)
			snap := testutil.Snapshot(time.Hour, ns, jobs, q)
			r := newTessera(t).RunSession(snap)
			checkInvariants(t, tc.name, true, snap, r)
			if got := evictedJobs(r); !slices.Equal(got, tc.wantEvicted) {
				t.Fatalf("evicted %v, want %v", got, tc.wantEvicted)
			}
			if tc.wantEvicted == nil {
				if tc.preemptor.Pending == nil {
					t.Fatal("preemptor placed without room")
				}
				return
			}
			if got := boundTasks(r, tc.preemptor); got != len(tc.preemptor.Tasks) {
				t.Fatalf("preemptor bound %d of %d tasks", got, len(tc.preemptor.Tasks))
			}
			for _, j := range jobs {
				if slices.Contains(tc.wantEvicted, j.Name) {
					if j.Count(framework.TaskRunning) != 0 {
						t.Fatalf("victim %s left with %d running tasks", j.Name, j.Count(framework.TaskRunning))
					}
					wantReason(t, j, framework.ReasonEvicted, "preempted by higher-priority job default/hi")
				}
			}
		})
	}
}

func TestGPUSlicesAndWholeGPUs(t *testing.T) {
	t.Run("memory slices share a GPU up to its memory", func(t *testing.T) {
		n := testutil.MakeNode("n").GPUs(1, "A100-80GB").Obj()
		a := testutil.MakeJob("a").GPUMemory(40000).Obj()
		b := testutil.MakeJob("b").GPUMemory(40000).Created(time.Second).Obj()
		c := testutil.MakeJob("c").GPUMemory(2000).Created(2 * time.Second).Obj()
		snap := testutil.Snapshot(0, []*framework.Node{n}, []*framework.Job{a, b, c})
		r := newTessera(t).RunSession(snap)
		checkInvariants(t, "slices", true, snap, r)
		if boundTasks(r, a) != 1 || boundTasks(r, b) != 1 || boundTasks(r, c) != 0 {
			t.Fatalf("a=%d b=%d c=%d; want the two 40000 MiB slices only (82000 MiB > 81920)", boundTasks(r, a), boundTasks(r, b), boundTasks(r, c))
		}
		if n.GPUs[0].Tasks != 2 {
			t.Fatalf("slices not on one GPU: %d tasks", n.GPUs[0].Tasks)
		}
		wantReason(t, c, framework.ReasonUnschedulable, "2000MiB GPU slice does not fit: 0/1 nodes fit: 1 no single GPU with enough free memory")
	})
	t.Run("whole-GPU tasks never share", func(t *testing.T) {
		n := testutil.MakeNode("n").GPUs(2, "A100-80GB").Obj()
		slice := testutil.MakeJob("slice").GPUMemory(1000).Obj()
		testutil.Run(slice, testutil.Epoch, n)
		whole := testutil.MakeJob("whole").GPU(2).Obj()
		one := testutil.MakeJob("one").GPU(1).Created(time.Second).Obj()
		snap := testutil.Snapshot(0, []*framework.Node{n}, []*framework.Job{slice, whole, one})
		r := newTessera(t).RunSession(snap)
		checkInvariants(t, "whole", true, snap, r)
		if boundTasks(r, whole) != 0 || boundTasks(r, one) != 1 {
			t.Fatalf("whole=%d one=%d", boundTasks(r, whole), boundTasks(r, one))
		}
		if one.Tasks[0].GPUs == slice.Tasks[0].GPUs {
			t.Fatal("whole GPU shared with a slice")
		}
	})
	t.Run("unhealthy GPUs unused", func(t *testing.T) {
		n := testutil.MakeNode("n").GPUs(2, "A100-80GB").Unhealthy(0).Obj()
		two := testutil.MakeJob("two").GPU(2).Obj()
		one := testutil.MakeJob("one").GPUMemory(1000).Created(time.Second).Obj()
		snap := testutil.Snapshot(0, []*framework.Node{n}, []*framework.Job{two, one})
		r := newTessera(t).RunSession(snap)
		if boundTasks(r, two) != 0 || boundTasks(r, one) != 1 || one.Tasks[0].GPUs.Indices()[0] != 1 {
			t.Fatalf("two=%d one=%d on %v", boundTasks(r, two), boundTasks(r, one), one.Tasks[0].GPUs.Indices())
		}
	})
	tests := []struct {
		name    string
		islands int
		used    []int
		count   int
		want    []int
	}{
		{"one NVLink island", 4, []int{0}, 4, []int{4, 5, 6, 7}},
		{"smallest island that holds it", 4, []int{0}, 2, []int{1, 2}},
		{"one NUMA node when no island holds it", 1, []int{0, 1, 2}, 2, []int{4, 5}},
		{"across islands when it must", 4, []int{0, 4}, 4, []int{1, 2, 3, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Islands(tc.islands).Obj()
			jobs := []*framework.Job{}
			for _, i := range tc.used {
				n.GPUs[i].UsedMilli = 500
			}
			n.Refresh()
			j := testutil.MakeJob("j").GPU(tc.count).Obj()
			jobs = append(jobs, j)
			r := newTessera(t).RunSession(testutil.Snapshot(0, []*framework.Node{n}, jobs))
			if boundTasks(r, j) != 1 || !slices.Equal(r.Bindings[0].GPUs.Indices(), tc.want) {
				t.Fatalf("GPUs %v, want %v", j.Tasks[0].GPUs.Indices(), tc.want)
			}
		})
	}
}

// rackNodes makes 8-GPU nodes labelled with racks and a zone.
func rackNodes(racks ...string) []*framework.Node {
	out := make([]*framework.Node, len(racks))
	for i, r := range racks {
		out[i] = testutil.MakeNode(fmt.Sprintf("n%d", i)).GPUs(8, "A100-80GB").
			Label("tessera.dev/rack", r).Label("topology.kubernetes.io/zone", "z").Obj()
	}
	return out
}

func TestTopology(t *testing.T) {
	t.Run("gang prefers one rack", func(t *testing.T) {
		for seed := range 20 {
			// Racks interleave so that a spread placement is as easy as a packed one.
			ns := rackNodes("r1", "r2", "r1", "r2", "r3")
			j := testutil.MakeJob("j").Tasks(2).GPU(8).PreferredTopology("tessera.dev/rack").Obj()
			cfg, _ := scheduler.Profile("tessera")
			cfg.Seed = int64(seed)
			s, err := scheduler.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r := s.RunSession(testutil.Snapshot(0, ns, []*framework.Job{j})); boundTasks(r, j) != 2 {
				t.Fatalf("seed %d: bound %d", seed, boundTasks(r, j))
			}
			if a, b := j.Tasks[0].Node.Labels["tessera.dev/rack"], j.Tasks[1].Node.Labels["tessera.dev/rack"]; a != b {
				t.Fatalf("seed %d: gang split over racks %s and %s", seed, a, b)
			}
		}
	})
	t.Run("required rack honoured or the job waits", func(t *testing.T) {
		ns := rackNodes("r1", "r1", "r2", "r2")
		for _, i := range []int{0, 2} {
			busy := testutil.MakeJob(fmt.Sprintf("busy%d", i)).GPU(1).Obj()
			testutil.Run(busy, testutil.Epoch, ns[i])
		}
		req := testutil.MakeJob("req").Tasks(2).GPU(8).RequiredTopology("tessera.dev/rack").Obj()
		snap := testutil.Snapshot(0, ns, []*framework.Job{req})
		r := newTessera(t).RunSession(snap)
		if boundTasks(r, req) != 0 {
			t.Fatalf("required rack ignored: %d bound", boundTasks(r, req))
		}
		wantReason(t, req, framework.ReasonTopology, "within one tessera.dev/rack")
		pref := testutil.MakeJob("pref").Tasks(2).GPU(8).PreferredTopology("tessera.dev/rack").Obj()
		if r := newTessera(t).RunSession(testutil.Snapshot(0, ns, []*framework.Job{pref})); boundTasks(r, pref) != 2 {
			t.Fatalf("preferred topology kept the gang waiting: %v", pref.Pending)
		}
	})
}

// newReserving is Tessera's profile that reserves nodes for a gang waiting longer than
// after, preempts what overtook it once the gang waited deadline, and drains the nodes
// from drain before that.
func newReserving(t *testing.T, after, deadline, drain time.Duration) *scheduler.Scheduler {
	t.Helper()
	cfg, _ := scheduler.Profile("tessera")
	cfg.ReservationAfter = scheduler.Duration{Duration: after}
	cfg.ReservationDeadline = scheduler.Duration{Duration: deadline}
	cfg.ReservationDrain = scheduler.Duration{Duration: drain}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// backfillWorld: four 8-GPU nodes each run a 1-GPU job; a 4 x 8-GPU gang waits behind
// them while 1-GPU jobs keep arriving. Every running job lasts two sessions (10 minutes
// each). Reservations have their deadline at 3 x reservationAfter, after a drain of
// reservationAfter.
func runBackfill(t *testing.T, reservationAfter time.Duration, sessions int) (big *framework.Job, smallRan int, bigAt int) {
	t.Helper()
	s := newReserving(t, reservationAfter, 3*reservationAfter, reservationAfter)
	ns := nodes(4, 8)
	q := testutil.MakeQueue("q").Obj()
	big = testutil.MakeJob("big").Tasks(4).GPU(8).Queue(q).Obj()
	snap := testutil.Snapshot(0, ns, []*framework.Job{big}, q)
	for i, n := range ns {
		j := testutil.MakeJob(fmt.Sprintf("pre-%d", i)).GPU(1).Queue(q).Obj()
		testutil.Run(j, testutil.Epoch.Add(-time.Duration(i%2)*10*time.Minute), n)
		snap.Jobs = append(snap.Jobs, j)
	}
	bigAt = -1
	for k := range sessions {
		snap.Now = testutil.Epoch.Add(time.Duration(k) * 10 * time.Minute)
		for i := range 2 {
			snap.Jobs = append(snap.Jobs, testutil.MakeJob(fmt.Sprintf("small-%d-%d", k, i)).GPU(1).Queue(q).Created(time.Duration(k)*10*time.Minute+time.Second).Obj())
		}
		r := s.RunSession(snap)
		checkInvariants(t, fmt.Sprintf("session %d", k), true, snap, r)
		for _, b := range r.Bindings {
			if b.Task.Job == big {
				bigAt = k
			} else {
				smallRan++
			}
		}
		if bigAt >= 0 {
			return big, smallRan, bigAt
		}
		commitResult(snap)
		for _, j := range snap.Jobs {
			if j != big && j.Count(framework.TaskRunning) > 0 && snap.Now.Sub(j.Tasks[0].StartTime) >= 10*time.Minute {
				finishJob(j)
			}
		}
	}
	return big, smallRan, bigAt
}

func TestBackfillAndReservation(t *testing.T) {
	// Without reservations small jobs keep every node busy and the gang starves.
	big, smallRan, bigAt := runBackfill(t, 0, 12)
	if bigAt >= 0 || smallRan == 0 {
		t.Fatalf("without reservation: big ran at session %d, %d small tasks ran", bigAt, smallRan)
	}
	wantReason(t, big, framework.ReasonGangIncomplete, "gang needs 4 x 8 GPUs, only ")
	// With reservations small jobs still backfill at first, then the gang gets its nodes.
	big, smallRan, bigAt = runBackfill(t, 30*time.Minute, 12)
	if smallRan == 0 {
		t.Fatal("small jobs did not backfill while the gang waited")
	}
	if bigAt < 0 {
		t.Fatalf("gang starved despite reservations: %v", big.Pending)
	}
}

// TestReservationDeadline: nodes reserved for a starving gang keep out work that need
// not yield to it (another queue's, or of its queue with its priority and submitted
// with it), take work of its queue that must (lower priority, or its priority and
// submitted later) until the drain before the deadline, and at the deadline that work
// on them is preempted so that the gang starts.
func TestReservationDeadline(t *testing.T) {
	s := newReserving(t, time.Hour, 3*time.Hour, time.Hour)
	ns := nodes(2, 8)
	// Work of the gang's queue that overtook it (its priority, submitted later), which
	// the preempt action leaves alone: only the deadline evicts it.
	qa, qb := testutil.MakeQueue("qa").Obj(), testutil.MakeQueue("qb").NotReclaimable().Obj()
	big := testutil.MakeJob("big").Tasks(2).GPU(8).Priority(10).Queue(qa).Obj()
	big.WaitingSince = testutil.Epoch
	snap := testutil.Snapshot(0, ns, []*framework.Job{big}, qa, qb)
	for i, n := range ns {
		j := testutil.MakeJob(fmt.Sprintf("lo-%d", i)).GPU(1).Priority(10).Created(time.Minute).Queue(qa).Obj()
		testutil.Run(j, testutil.Epoch, n)
		snap.Jobs = append(snap.Jobs, j)
	}
	session := func(at time.Duration, arrive ...*framework.Job) *scheduler.Result {
		t.Helper()
		snap.Now = testutil.Epoch.Add(at)
		snap.Jobs = append(snap.Jobs, arrive...)
		r := s.RunSession(snap)
		checkInvariants(t, fmt.Sprintf("at %s", at), true, snap, r)
		commitResult(snap)
		return r
	}
	session(70 * time.Minute)
	if ns[0].Reserved != big || ns[1].Reserved != big {
		t.Fatalf("nodes reserved for %v, %v; want big", ns[0].Reserved, ns[1].Reserved)
	}
	wantReason(t, big, framework.ReasonGangIncomplete, "work that overtook it preempted there at 2026-01-01 03:00:00")
	lo := testutil.MakeJob("lo-a").GPU(1).Priority(1).Queue(qa).Obj()
	peer := testutil.MakeJob("peer").GPU(1).Priority(10).Queue(qa).Obj() // submitted with big
	later := testutil.MakeJob("later").GPU(1).Priority(10).Queue(qa).Created(time.Minute).Obj()
	other := testutil.MakeJob("other").GPU(1).Priority(1).Queue(qb).Obj()
	if r := session(90*time.Minute, lo, peer, later, other); boundTasks(r, lo) != 1 || boundTasks(r, later) != 1 || boundTasks(r, peer) != 0 || boundTasks(r, other) != 0 {
		t.Fatalf("before the drain: lower priority bound %d, same priority submitted later %d, with the gang %d, of another queue %d; want 1, 1, 0, 0",
			boundTasks(r, lo), boundTasks(r, later), boundTasks(r, peer), boundTasks(r, other))
	}
	late := testutil.MakeJob("lo-b").GPU(1).Priority(1).Queue(qa).Created(2 * time.Hour).Obj()
	if r := session(150*time.Minute, late); boundTasks(r, late) != 0 {
		t.Fatal("lower-priority job placed on reserved nodes during the drain")
	}
	r := session(3 * time.Hour)
	if got := evictedJobs(r); !slices.Equal(got, []string{"later", "lo-0", "lo-1", "lo-a"}) {
		t.Fatalf("evicted %v at the deadline, want later, lo-0, lo-1, lo-a", got)
	}
	wantReason(t, lo, framework.ReasonEvicted, "preempted from nodes reserved for default/big")
	if boundTasks(r, big) != 2 {
		t.Fatalf("gang bound %d of 2 tasks at its deadline", boundTasks(r, big))
	}
}

// TestReservationNeverPreemptsAcrossQueues: at its deadline a starving gang evicts no
// work of another queue from its reserved nodes unless its queue may reclaim it; here
// that queue is not reclaimable, so the gang waits for the work to end.
func TestReservationNeverPreemptsAcrossQueues(t *testing.T) {
	s := newReserving(t, time.Hour, 2*time.Hour, 30*time.Minute)
	ns := nodes(2, 8)
	qa, qb := testutil.MakeQueue("qa").Obj(), testutil.MakeQueue("qb").NotReclaimable().Obj()
	big := testutil.MakeJob("big").Tasks(2).GPU(8).Priority(10).Queue(qa).Obj()
	big.WaitingSince = testutil.Epoch
	theirs := testutil.MakeJob("theirs").GPU(1).Priority(1).Queue(qb).Obj()
	testutil.Run(theirs, testutil.Epoch, ns[0])
	snap := testutil.Snapshot(3*time.Hour, ns, []*framework.Job{big, theirs}, qa, qb)
	r := s.RunSession(snap)
	checkInvariants(t, "at the deadline", true, snap, r)
	if len(r.Evictions) != 0 || boundTasks(r, big) != 0 {
		t.Fatalf("evicted %v, gang bound %d; want nothing evicted and the gang waiting", evictedJobs(r), boundTasks(r, big))
	}
}

// TestBackfillSameShape: a small job of the same pod shape as a gang that does not fit
// still runs in the room the gang cannot use.
func TestBackfillSameShape(t *testing.T) {
	ns := nodes(4, 8)
	q := testutil.MakeQueue("q").Obj()
	busy := testutil.MakeJob("busy").GPU(1).Queue(q).Obj()
	testutil.Run(busy, testutil.Epoch, ns[3])
	big := testutil.MakeJob("big").Tasks(4).GPU(8).Queue(q).Obj()
	small := testutil.MakeJob("small").GPU(8).Queue(q).Created(time.Second).Obj()
	snap := testutil.Snapshot(0, ns, []*framework.Job{busy, big, small}, q)
	r := newTessera(t).RunSession(snap)
	if boundTasks(r, big) != 0 || boundTasks(r, small) != 1 {
		t.Fatalf("big=%d small=%d (%v)", boundTasks(r, big), boundTasks(r, small), small.Pending)
	}
}

func TestPendingReasons(t *testing.T) {
	q := testutil.MakeQueue("train-dev").CapabilityGPUs(10).Obj()
	running := testutil.MakeJob("running").GPU(8).Queue(q).Obj()
	ns := nodes(2, 8)
	ns = append(ns, testutil.MakeNode("tainted").GPUs(8, "A100-80GB").Taint("dedicated", "x").Obj())
	testutil.Run(running, testutil.Epoch, ns[0])
	capped := testutil.MakeJob("capped").GPU(4).Queue(q).Obj()
	tooBig := testutil.MakeJob("toobig").Tasks(4).GPU(8).Obj()
	model := testutil.MakeJob("model").GPU(1).Models("H100-80GB").Obj()
	behind := testutil.MakeJob("behind").GPU(1).Queue(q).Created(time.Second).Obj()
	snap := testutil.Snapshot(0, ns, []*framework.Job{running, capped, tooBig, model, behind}, q)
	newTessera(t).RunSession(snap)
	wantReason(t, capped, framework.ReasonQueueCapability, "queue train-dev at capability 8/10 GPU, job needs 4 more")
	wantReason(t, tooBig, framework.ReasonClusterTooSmall, "gang needs 32 GPU, the cluster has 24")
	wantReason(t, model, framework.ReasonUnschedulable, "1 GPU does not fit: 0/3 nodes fit: 2 node(s) had no GPU of the requested model, 1 node(s) had untolerated taints")
	if behind.Pending != nil {
		// A job behind a capped one in the same queue still runs: capability is not a block.
		t.Fatalf("behind: %v", behind.Pending)
	}
}

// TestFaultSeed1NoReservationBeyondTheCluster (found by make faults, seed 1): a gang
// enqueued while the cluster was larger, which all its nodes freed could no longer
// hold, gets no nodes reserved: work that overtook it keeps running there, and new work
// still starts.
func TestFaultSeed1NoReservationBeyondTheCluster(t *testing.T) {
	s := newReserving(t, time.Hour, 3*time.Hour, time.Hour)
	ns := nodes(2, 8)
	qa := testutil.MakeQueue("qa").Obj()
	big := testutil.MakeJob("big").Tasks(3).GPU(8).Priority(10).Queue(qa).Obj()
	big.WaitingSince = testutil.Epoch
	big.Inqueue = true // enqueued while the cluster was larger
	snap := testutil.Snapshot(0, ns, []*framework.Job{big}, qa)
	snap.Now = testutil.Epoch.Add(4 * time.Hour) // past its deadline too
	later := testutil.MakeJob("later").GPU(1).Priority(10).Queue(qa).Created(time.Minute).Obj()
	snap.Jobs = append(snap.Jobs, later)
	r := s.RunSession(snap)
	if ns[0].Reserved != nil || ns[1].Reserved != nil {
		t.Fatalf("nodes reserved for a gang of 24 GPUs on 16: %v, %v", ns[0].Reserved, ns[1].Reserved)
	}
	if boundTasks(r, later) != 1 || len(r.Evictions) != 0 {
		t.Fatalf("later bound %d, %d evictions; want it bound and none", boundTasks(r, later), len(r.Evictions))
	}
}
