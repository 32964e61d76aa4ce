package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// displacedFit runs a what-if that removes the named nodes and reports how many of
// the tasks they held the session would place elsewhere.
func displacedFit(s *scheduler.Scheduler, snap *framework.Snapshot, names ...string) (placed, displaced int) {
	var moved []*framework.Task
	s.WhatIf(snap, func(snap *framework.Snapshot) { moved = snap.RemoveNodes(names...) }, func(_ *framework.Snapshot, r *scheduler.Result) {
		for _, b := range r.Bindings {
			if slices.Contains(moved, b.Task) {
				placed++
			}
		}
	})
	return placed, len(moved)
}

func TestWhatIfRemovedNodesTasksFitElsewhere(t *testing.T) {
	ns := nodes(3, 8)
	small := testutil.MakeJob("small").GPU(2).Obj()
	testutil.Run(small, testutil.Epoch, ns[0])
	gang := testutil.MakeJob("gang").Tasks(2).GPU(8).Obj()
	testutil.Run(gang, testutil.Epoch, ns[1], ns[2])
	snap := testutil.Snapshot(0, ns, []*framework.Job{small, gang})
	before := dump(snap)
	s := newTessera(t)

	if placed, moved := displacedFit(s, snap, "na"); placed != 0 || moved != 1 {
		t.Fatalf("small's node removed: %d of %d placed; the other nodes are full", placed, moved)
	}
	if got := dump(snap); got != before {
		t.Fatalf("snapshot changed by a what-if:\n%s\nwant\n%s", got, before)
	}
	finishJob(gang)
	if placed, moved := displacedFit(s, snap, "na"); placed != 1 || moved != 1 {
		t.Fatalf("small's node removed with two free nodes: %d of %d placed", placed, moved)
	}
	if len(snap.Nodes) != 3 || small.Tasks[0].Node != ns[0] || small.Tasks[0].Status != framework.TaskRunning || ns[0].FreeWholeGPUs() != 6 {
		t.Fatalf("not restored: %d nodes, task on %v (%s), %d free GPUs on na", len(snap.Nodes), small.Tasks[0].Node, small.Tasks[0].Status, ns[0].FreeWholeGPUs())
	}

	// A gang of two 8-GPU tasks on nb and nc: removing one node leaves room for the
	// displaced task only if another 8-GPU node is free.
	ns4 := nodes(4, 8)
	gang = testutil.MakeJob("gang").Tasks(2).GPU(8).Obj()
	testutil.Run(gang, testutil.Epoch, ns4[0], ns4[1])
	filler := testutil.MakeJob("filler").GPU(1).Obj()
	testutil.Run(filler, testutil.Epoch, ns4[2])
	snap = testutil.Snapshot(0, ns4, []*framework.Job{gang, filler})
	if placed, moved := displacedFit(s, snap, "na"); placed != 1 || moved != 1 {
		t.Fatalf("gang member displaced with nd free: %d of %d placed", placed, moved)
	}
	if placed, moved := displacedFit(s, snap, "na", "nd"); placed != 0 || moved != 1 {
		t.Fatalf("gang member displaced with no free 8-GPU node: %d of %d placed", placed, moved)
	}
}

// TestWhatIfNoStateDrift runs two identical random worlds; one also runs what-ifs
// (random nodes removed) before every session. Both must decide exactly the same
// bindings and evictions and end every session with the same snapshot: what-ifs leave
// no trace in reservations, eviction history, job memory, the random source or the
// snapshot.
func TestWhatIfNoStateDrift(t *testing.T) {
	seeds := envInt(t, "TESSERA_PROP_SEEDS", 150)
	var whatIfs, bound int
	for seed := range uint64(seeds) {
		a, b := newPropWorld(t, seed, &propStats{}), newPropWorld(t, seed, &propStats{})
		pick := rand.New(rand.NewPCG(seed, 0x3a7))
		for i := range 8 {
			label := fmt.Sprintf("seed %d session %d", seed, i)
			for range 1 + pick.IntN(3) {
				var names []string
				for _, n := range b.snap.Nodes {
					if pick.IntN(3) == 0 {
						names = append(names, n.Name)
					}
				}
				before := dump(b.snap)
				b.sched.WhatIf(b.snap, func(s *framework.Snapshot) { s.RemoveNodes(names...) }, func(_ *framework.Snapshot, r *scheduler.Result) {
					bound += len(r.Bindings)
				})
				whatIfs++
				if got := dump(b.snap); got != before {
					t.Fatalf("%s: what-if removing %v changed the snapshot:\n%s\nwant\n%s", label, names, got, before)
				}
			}
			b.snap.Now = testutil.Epoch.Add(b.now)
			a.snap.Now = testutil.Epoch.Add(a.now)
			ra, rb := a.sched.RunSession(a.snap), b.sched.RunSession(b.snap)
			if da, db := decisions(ra), decisions(rb); da != db {
				t.Fatalf("%s: decisions drifted after what-ifs:\n%s\nwant\n%s", label, db, da)
			}
			if da, db := dump(a.snap), dump(b.snap); da != db {
				t.Fatalf("%s: snapshot drifted after what-ifs:\n%s\nwant\n%s", label, db, da)
			}
			a.advance()
			b.advance()
		}
	}
	if bound == 0 {
		t.Fatalf("%d what-ifs placed nothing: the test exercises nothing", whatIfs)
	}
}

// advance commits a session's bindings, lets time pass, finishes and adds jobs, the
// way session does, without checking invariants.
func (w *propWorld) advance() {
	commitResult(w.snap)
	w.now += 7 * 60e9
	for _, j := range w.snap.Jobs {
		if j.Count(framework.TaskRunning) > 0 && w.rng.IntN(4) == 0 {
			finishJob(j)
		}
	}
	for range w.rng.IntN(5) {
		w.addJob()
	}
}

func decisions(r *scheduler.Result) string {
	var b strings.Builder
	for _, x := range r.Bindings {
		fmt.Fprintf(&b, "bind %s %s %v %d %v\n", x.Task.Key(), x.Node.Name, x.GPUs.Indices(), x.GPUMilli, x.Pipelined)
	}
	for _, e := range r.Evictions {
		fmt.Fprintf(&b, "evict %s for %s: %s\n", e.Task.Key(), e.By.Key(), e.Reason)
	}
	return b.String()
}

// dump prints everything a session reads or writes, except node versions.
func dump(s *framework.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now %v total %+v maxmem %d\n", s.Now, s.Total, s.MaxGPUMemoryMiB)
	for _, n := range s.Nodes {
		var tasks []string
		for _, t := range n.Tasks {
			tasks = append(tasks, t.Key())
		}
		slices.Sort(tasks)
		fmt.Fprintf(&b, "node %s #%d unsched %v taints %v used %+v free %d/%d reserved %v tasks %v\n", n.Name, n.Index, n.Unschedulable, n.Taints, n.Used, n.FreeWholeGPUs(), n.MaxFreeMilli(), n.Reserved != nil, tasks)
		for _, g := range n.GPUs {
			fmt.Fprintf(&b, "  gpu %d %d %d\n", g.Index, g.UsedMilli, g.Tasks)
		}
	}
	for _, j := range s.Jobs {
		fmt.Fprintf(&b, "job %s inqueue %v waiting %v pending %+v\n", j.Key(), j.Inqueue, j.WaitingSince, j.Pending)
		for _, t := range j.Tasks {
			node := ""
			if t.Node != nil {
				node = t.Node.Name
			}
			fmt.Fprintf(&b, "  task %s %s %s %v %d %+v %v\n", t.Key(), t.Status, node, t.GPUs.Indices(), t.GPUMilli, t.Placed, t.StartTime)
		}
	}
	for _, q := range s.Queues {
		fmt.Fprintf(&b, "queue %s alloc %+v req %+v deserved %+v\n", q.Name, q.Allocated, q.Request, q.Deserved)
	}
	return b.String()
}
