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
	before := state(snap)
	s := newTessera(t)

	if placed, moved := displacedFit(s, snap, "na"); placed != 0 || moved != 1 {
		t.Fatalf("small's node removed: %d of %d placed; the other nodes are full", placed, moved)
	}
	if got := state(snap); got != before {
		t.Fatalf("snapshot changed by a what-if:\n%s", diffLines(got, before))
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
				before := state(b.snap)
				b.sched.WhatIf(b.snap, func(s *framework.Snapshot) { s.RemoveNodes(names...) }, func(_ *framework.Snapshot, r *scheduler.Result) {
					bound += len(r.Bindings)
				})
				whatIfs++
				if got := state(b.snap); got != before {
					t.Fatalf("%s: what-if removing %v changed the snapshot:\n%s", label, names, diffLines(got, before))
				}
			}
			b.snap.Now = testutil.Epoch.Add(b.now)
			a.snap.Now = testutil.Epoch.Add(a.now)
			ra, rb := a.sched.RunSession(a.snap), b.sched.RunSession(b.snap)
			if da, db := decisions(ra), decisions(rb); da != db {
				t.Fatalf("%s: decisions drifted after what-ifs:\n%s\nwant\n%s", label, db, da)
			}
			if sa, sb := state(a.snap), state(b.snap); sa != sb {
				t.Fatalf("%s: snapshot drifted after what-ifs:\n%s", label, diffLines(sb, sa))
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

// state prints every field of the snapshot and its objects (testutil.State), but those
// a what-if may leave changed: node versions, which restore moves on so that caches
// keyed by them miss, and caches filled on first use. Comparing states thus also checks
// that the fields Checkpoint does not save, declared immutable, stay so in sessions.
func state(s *framework.Snapshot) string {
	return testutil.State(s, "Node.Version", "Node.object", "Task.affinity")
}

// diffLines shows the lines of got and want that differ, in order (at most 20).
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	shown := 0
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl && shown < 20 {
			fmt.Fprintf(&b, "line %d:\n  got  %s\n  want %s\n", i+1, gl, wl)
			shown++
		}
	}
	return b.String()
}
