package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// propModels are the GPU models random clusters draw from: different memory sizes make
// memory slices take different shares on different nodes.
var propModels = []string{"A100-80GB", "T4", "V100M32"}

// propWorld is one random cluster and the workload that arrives over several sessions.
type propWorld struct {
	rng     *rand.Rand
	sched   *scheduler.Scheduler
	profile string
	snap    *framework.Snapshot
	leaves  []*framework.Queue
	jobs    int
	now     time.Duration
	// evicted records (preemptor, victim) pairs seen so far.
	evicted map[[2]*framework.Job]bool
	// stats counts what the sessions did, so the test proves it exercised them.
	stats *propStats
}

type propStats struct{ bindings, evictions, reclaims, pending int }

func newPropWorld(t *testing.T, seed uint64, stats *propStats) *propWorld {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
	profiles := scheduler.ProfileNames()
	w := &propWorld{rng: rng, evicted: map[[2]*framework.Job]bool{}, stats: stats}
	// Tessera's own profile most of the time; the baselines share the invariants.
	w.profile = "tessera"
	if rng.IntN(3) == 0 {
		w.profile = profiles[rng.IntN(len(profiles))]
	}
	cfg, err := scheduler.Profile(w.profile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = int64(seed)
	if w.profile == "tessera" {
		cfg.ReservationAfter = scheduler.Duration{Duration: time.Duration(rng.IntN(3)) * 10 * time.Minute}
	}
	if w.sched, err = scheduler.New(cfg); err != nil {
		t.Fatal(err)
	}

	var ns []*framework.Node
	for i := range 2 + rng.IntN(9) {
		nw := testutil.MakeNode(fmt.Sprintf("n%d", i)).CPU(int64(16+rng.IntN(64))*1000).
			Label("tessera.dev/rack", fmt.Sprintf("r%d", rng.IntN(3))).
			Label("topology.kubernetes.io/zone", fmt.Sprintf("z%d", rng.IntN(2)))
		if g := []int{0, 1, 2, 4, 8, 8}[rng.IntN(6)]; g > 0 {
			nw.GPUs(g, propModels[rng.IntN(len(propModels))]).Islands(1 + rng.IntN(4))
			if rng.IntN(6) == 0 {
				nw.Unhealthy(rng.IntN(g))
			}
		}
		if rng.IntN(10) == 0 {
			nw.Taint("dedicated", "infer")
		}
		ns = append(ns, nw.Obj())
	}

	var queues []*framework.Queue
	for i := range 1 + rng.IntN(3) {
		qw := testutil.MakeQueue(fmt.Sprintf("q%d", i)).Weight(int32(1 + rng.IntN(3)))
		w.randomLimits(qw)
		q := qw.Obj()
		queues = append(queues, q)
		if rng.IntN(3) == 0 {
			for c := range 2 {
				cw := testutil.MakeQueue(fmt.Sprintf("q%d-%d", i, c)).Weight(int32(1 + rng.IntN(3))).Parent(q)
				w.randomLimits(cw)
				child := cw.Obj()
				queues = append(queues, child)
				w.leaves = append(w.leaves, child)
			}
		} else {
			w.leaves = append(w.leaves, q)
		}
	}
	w.snap = testutil.Snapshot(0, ns, nil, queues...)
	if rng.IntN(2) == 0 {
		w.snap.Workload = framework.Workload{
			{MilliCPU: 4000, GPU: framework.GPURequest{Count: 1}, P: 0.5},
			{MilliCPU: 2000, GPU: framework.GPURequest{Milli: 500}, P: 0.3},
			{MilliCPU: 8000, GPU: framework.GPURequest{Count: 4}, P: 0.2},
		}
	}
	for range 2 + rng.IntN(10) {
		w.addJob()
	}
	return w
}

func (w *propWorld) randomLimits(qw *testutil.QueueWrapper) {
	switch w.rng.IntN(5) {
	case 0:
		qw.CapabilityGPUs(int64(1 + w.rng.IntN(16)))
	case 1:
		qw.DeservedGPUs(int64(w.rng.IntN(12)))
	case 2:
		qw.GuaranteeGPUs(int64(w.rng.IntN(4)))
	}
	if w.rng.IntN(4) == 0 {
		qw.NotReclaimable()
	}
}

func (w *propWorld) addJob() {
	rng := w.rng
	w.jobs++
	tasks := 1 + rng.IntN(4)
	minMember := 1 + rng.IntN(tasks)
	if rng.IntN(10) == 0 {
		minMember = tasks + 1 // the rest of the gang's pods are not created yet
	}
	jw := testutil.MakeJob(fmt.Sprintf("j%d", w.jobs)).Tasks(tasks).MinMember(minMember).
		CPU(int64(500 + rng.IntN(8000))).Priority(int32(rng.IntN(3))).
		Queue(w.leaves[rng.IntN(len(w.leaves))]).Created(w.now + time.Duration(w.jobs)*time.Millisecond)
	switch rng.IntN(6) {
	case 0:
		// CPU only.
	case 1:
		jw.GPU(1 + rng.IntN(4))
	case 2:
		jw.GPU(8)
	case 3:
		jw.GPUMemory(int64(1000 + rng.IntN(40000)))
	case 4:
		jw.Share(int64(100 + rng.IntN(900)))
	case 5:
		jw.GPU(1).Models(propModels[rng.IntN(len(propModels))])
	}
	switch rng.IntN(8) {
	case 0:
		jw.RequiredTopology("tessera.dev/rack")
	case 1:
		jw.PreferredTopology("tessera.dev/rack")
	case 2:
		jw.MinRuntime(time.Duration(rng.IntN(60)) * time.Minute)
	case 3:
		jw.Tolerate("dedicated")
	}
	if rng.IntN(12) == 0 {
		jw.NotPreemptible()
	}
	w.snap.Jobs = append(w.snap.Jobs, jw.Obj())
}

// session runs one session and checks every invariant, then commits the bindings.
func (w *propWorld) session(t *testing.T, label string) {
	t.Helper()
	w.snap.Now = testutil.Epoch.Add(w.now)
	r := w.sched.RunSession(w.snap)
	checkInvariants(t, label, w.profile == "tessera", w.snap, r)
	w.stats.bindings += len(r.Bindings)
	w.stats.evictions += len(r.Evictions)
	for _, j := range w.snap.Jobs {
		if j.Pending != nil {
			w.stats.pending++
		}
	}
	for _, e := range r.Evictions {
		p, v := e.By, e.Task.Job
		if p == nil {
			t.Fatalf("%s: eviction of %s names no preemptor", label, e.Task.Key())
		}
		if w.evicted[[2]*framework.Job{v, p}] {
			t.Fatalf("%s: preemption loop: %s evicts %s, which evicted it before", label, p.Key(), v.Key())
		}
		w.evicted[[2]*framework.Job{p, v}] = true
		if p.Queue != v.Queue {
			w.stats.reclaims++
		}
	}
	commitResult(w.snap)
	// Time passes: some running jobs finish, new jobs arrive.
	w.now += time.Duration(1+w.rng.IntN(20)) * time.Minute
	for _, j := range w.snap.Jobs {
		if j.Count(framework.TaskRunning) > 0 && w.rng.IntN(4) == 0 {
			finishJob(j)
		}
	}
	for range w.rng.IntN(5) {
		w.addJob()
	}
}

// commitResult turns the session's allocations into running tasks, as the cluster would.
func commitResult(snap *framework.Snapshot) {
	for _, j := range snap.Jobs {
		for _, task := range j.Tasks {
			if task.Status == framework.TaskAllocated {
				task.Status = framework.TaskRunning
				task.StartTime = snap.Now
			}
		}
	}
}

// finishJob ends every running task of the job.
func finishJob(j *framework.Job) {
	for _, task := range j.Tasks {
		if task.Status == framework.TaskRunning {
			task.Node.Remove(task)
			task.Status = framework.TaskSucceeded
		}
	}
}

func sameUsage(a, b *framework.Resources) bool {
	return a.MilliCPU == b.MilliCPU && a.Memory == b.Memory && a.GPU == b.GPU && a.Pods == b.Pods
}

// checkInvariants asserts what must hold after any session.
func checkInvariants(t *testing.T, label string, gang bool, snap *framework.Snapshot, r *scheduler.Result) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s", label, fmt.Sprintf(format, args...))
	}
	// Nodes: used equals the sum of their tasks, GPUs never oversubscribed.
	for _, n := range snap.Nodes {
		var sum framework.Resources
		gpuMilli := make([]int64, len(n.GPUs))
		gpuMiB := make([]int64, len(n.GPUs))
		gpuTasks := make([]int, len(n.GPUs))
		gpuWhole := make([]bool, len(n.GPUs))
		for _, task := range n.Tasks {
			if task.Node != n || !task.Status.Holds() {
				fail("node %s lists %s (node %v, status %s)", n.Name, task.Key(), task.Node != nil, task.Status)
			}
			sum.Add(&task.Placed)
			if task.GPU.Any() && task.GPUs.Len() != task.GPU.GPUs() {
				fail("%s asks %d GPUs, holds %d", task.Key(), task.GPU.GPUs(), task.GPUs.Len())
			}
			for _, i := range task.GPUs.Indices() {
				if i >= len(n.GPUs) {
					fail("%s holds GPU %d of %s, which has %d", task.Key(), i, n.Name, len(n.GPUs))
				}
				g := &n.GPUs[i]
				if !g.Healthy {
					fail("%s placed on unhealthy GPU %d of %s", task.Key(), i, n.Name)
				}
				if !task.GPU.AllowsModel(g.Model) {
					fail("%s placed on a %s", task.Key(), g.Model)
				}
				gpuMilli[i] += task.GPUMilli
				gpuMiB[i] += task.GPU.MemoryMiB
				gpuTasks[i]++
				gpuWhole[i] = gpuWhole[i] || task.GPU.Count > 0
				if task.GPU.MemoryMiB > 0 && task.GPUMilli*g.MemoryMiB < task.GPU.MemoryMiB*framework.MilliPerGPU {
					fail("%s asks %d MiB but holds %d milli of a %d MiB GPU", task.Key(), task.GPU.MemoryMiB, task.GPUMilli, g.MemoryMiB)
				}
			}
		}
		if !sameUsage(&sum, &n.Used) {
			fail("node %s used %s, its tasks hold %s", n.Name, n.Used.String(), sum.String())
		}
		if ok, res := n.Used.FitsIn(&framework.Resources{}, &n.Allocatable); !ok {
			fail("node %s over allocatable %s: used %s of %s", n.Name, res, n.Used.String(), n.Allocatable.String())
		}
		for i := range n.GPUs {
			g := &n.GPUs[i]
			switch {
			case g.UsedMilli != gpuMilli[i] || g.Tasks != gpuTasks[i]:
				fail("GPU %d of %s: used %d milli by %d tasks, its tasks hold %d milli, %d tasks", i, n.Name, g.UsedMilli, g.Tasks, gpuMilli[i], gpuTasks[i])
			case g.UsedMilli > framework.MilliPerGPU:
				fail("GPU %d of %s oversubscribed: %d milli", i, n.Name, g.UsedMilli)
			case gpuMiB[i] > g.MemoryMiB:
				fail("GPU %d of %s: slices of %d MiB exceed its %d MiB", i, n.Name, gpuMiB[i], g.MemoryMiB)
			case gpuWhole[i] && gpuTasks[i] > 1:
				fail("GPU %d of %s: a whole-GPU task shares it with %d others", i, n.Name, gpuTasks[i]-1)
			}
		}
	}
	// Tasks: holding tasks are on their node; bindings agree with the snapshot.
	bound := map[*framework.Job]int{}
	seen := map[*framework.Task]bool{}
	for _, b := range r.Bindings {
		if seen[b.Task] {
			fail("%s bound twice", b.Task.Key())
		}
		seen[b.Task] = true
		if b.Task.Status != framework.TaskAllocated || b.Task.Node != b.Node || b.Task.GPUs != b.GPUs {
			fail("binding of %s disagrees with the snapshot", b.Task.Key())
		}
		bound[b.Task.Job]++
	}
	evictedJobs := map[*framework.Job]bool{}
	for _, e := range r.Evictions {
		if e.Task.Status.Holds() {
			fail("evicted %s still holds resources (%s)", e.Task.Key(), e.Task.Status)
		}
		evictedJobs[e.Task.Job] = true
	}
	for _, j := range snap.Jobs {
		min := max(j.MinMember, 1)
		if !gang {
			min = 1
		}
		holding := j.Count(framework.TaskAllocated, framework.TaskRunning)
		for _, task := range j.Tasks {
			if task.Status.Holds() != (task.Node != nil) {
				fail("%s status %s but node set %v", task.Key(), task.Status, task.Node != nil)
			}
			if task.Status == framework.TaskAllocated && !seen[task] {
				fail("%s allocated without a binding", task.Key())
			}
		}
		if bound[j] > 0 && j.Count(framework.TaskAllocated, framework.TaskRunning, framework.TaskSucceeded) < min {
			fail("partial gang: %s bound %d tasks, holds %d of minMember %d", j.Key(), bound[j], holding, min)
		}
		if evictedJobs[j] && holding > 0 && holding < min {
			fail("victim gang %s left with %d tasks, below minMember %d", j.Key(), holding, min)
		}
		if j.Count(framework.TaskPending) > 0 && (j.Pending == nil || j.Pending.Code == "" || j.Pending.Message == "") {
			fail("pending job %s has no reason", j.Key())
		}
	}
	// Queues: allocation matches the tasks and never exceeds any capability.
	alloc := map[*framework.Queue]*framework.Resources{}
	for _, q := range snap.Queues {
		alloc[q] = &framework.Resources{}
	}
	for _, j := range snap.Jobs {
		for _, task := range j.Tasks {
			if task.Status.Holds() && j.Queue != nil {
				for q := j.Queue; q != nil; q = q.Parent {
					alloc[q].Add(&task.Placed)
				}
			}
		}
	}
	for _, q := range snap.Queues {
		if !sameUsage(alloc[q], &q.Allocated) {
			fail("queue %s allocated %s, its tasks hold %s", q.Name, q.Allocated.String(), alloc[q].String())
		}
		if ok, res := alloc[q].FitsIn(&framework.Resources{}, &q.Capability); !ok && gang {
			fail("queue %s over capability in %s: holds %s, capability %s", q.Name, res, alloc[q].String(), q.Capability.String())
		}
	}
}

// TestPropertyInvariants runs several sessions over thousands of random clusters and
// workloads (Tessera's profile and the baselines, which share every invariant but gangs
// and queue capabilities) and checks the invariants after each session. Longer
// campaigns: TESSERA_PROPERTY_CLUSTERS clusters from seed TESSERA_PROPERTY_FIRST_SEED,
// TESSERA_PROPERTY_SESSIONS sessions each.
func TestPropertyInvariants(t *testing.T) {
	clusters, sessions := envInt(t, "TESSERA_PROPERTY_CLUSTERS", 6000), envInt(t, "TESSERA_PROPERTY_SESSIONS", 6)
	first := envInt(t, "TESSERA_PROPERTY_FIRST_SEED", 0)
	if testing.Short() {
		clusters = 200
	}
	var stats propStats
	for c := range clusters {
		seed := uint64(first + c)
		w := newPropWorld(t, seed, &stats)
		for s := range sessions {
			w.session(t, fmt.Sprintf("seed %d (%s) session %d", seed, w.profile, s))
		}
	}
	t.Logf("%d clusters x %d sessions: %+v", clusters, sessions, stats)
	if stats.bindings == 0 || stats.evictions == 0 || stats.reclaims == 0 || stats.pending == 0 {
		t.Fatalf("random workloads did not exercise binding, preemption, reclaim and waiting: %+v", stats)
	}
}

// envInt reads a non-negative integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}
