package sim

import (
	"slices"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// nodesToBoot picks the removed nodes to add back: one at a time, the removed node on
// which the scheduler would place the most GPU of the waiting jobs that no present or
// booting node takes, until every such job is placed or no removed node helps. It
// asks the scheduler through side-effect-free what-if sessions, so the same scale-up
// serves every scale-down rule.
func (r *replayer) nodesToBoot() []*framework.Node {
	f := r.fleet
	if len(f.removed) == 0 || !r.anyWaiting() {
		return nil
	}
	var chosen []*framework.Node
	rest := slices.Clone(f.removed)
	for len(rest) > 0 {
		extra := append(f.bootingNodes(), chosen...)
		var stuck map[*framework.Job]bool
		if len(extra) == 0 {
			stuck = r.waitingJobs() // the session that just ran placed what fits
		} else {
			stuck = r.stillWaiting(extra)
		}
		if len(stuck) == 0 {
			break
		}
		best := r.mostUsed(append(extra, rest...), rest, stuck)
		if best == nil {
			break
		}
		chosen = append(chosen, best)
		rest = slices.DeleteFunc(rest, func(n *framework.Node) bool { return n == best })
	}
	return chosen
}

// waitingJobs are the jobs waiting to start or to resume.
func (r *replayer) waitingJobs() map[*framework.Job]bool {
	out := map[*framework.Job]bool{}
	for _, a := range r.order {
		if a.waiting() {
			out[a.job] = true
		}
	}
	return out
}

// stillWaiting is the waiting jobs that a session with the extra nodes would still
// not run.
func (r *replayer) stillWaiting(extra []*framework.Node) map[*framework.Job]bool {
	out := r.waitingJobs()
	r.whatIfWith(extra, func(res *scheduler.Result) {
		bound := map[*framework.Job]int{}
		for _, b := range res.Bindings {
			bound[b.Task.Job]++
		}
		for j := range out {
			if holdingRunning(j)+bound[j] >= j.MinMember {
				delete(out, j)
			}
		}
	})
	return out
}

// mostUsed is the node of candidates on which a session with the extra nodes would
// place the most GPU milli of the stuck jobs; nil when it places none there.
func (r *replayer) mostUsed(extra, candidates []*framework.Node, stuck map[*framework.Job]bool) *framework.Node {
	use := map[*framework.Node]int64{}
	r.whatIfWith(extra, func(res *scheduler.Result) {
		for _, b := range res.Bindings {
			if stuck[b.Task.Job] && slices.Contains(candidates, b.Node) {
				use[b.Node] += int64(b.GPUs.Len())*b.GPUMilli + 1 // a CPU-only task counts too
			}
		}
	})
	var best *framework.Node
	for _, n := range candidates {
		if use[n] > 0 && (best == nil || use[n] > use[best]) {
			best = n
		}
	}
	return best
}

// whatIfWith runs a what-if session with the extra nodes added to the snapshot and
// passes its decisions to inspect; afterwards the extra nodes are empty again (the
// snapshot's checkpoint restores only the nodes it held).
func (r *replayer) whatIfWith(extra []*framework.Node, inspect func(*scheduler.Result)) {
	r.sched.WhatIf(r.snap, func(s *framework.Snapshot) {
		s.Nodes = append(s.Nodes, extra...)
	}, func(_ *framework.Snapshot, res *scheduler.Result) { inspect(res) })
	for _, n := range extra {
		emptyNode(n)
	}
}

// emptyNode clears what a what-if session placed on a node outside the snapshot.
func emptyNode(n *framework.Node) {
	n.Used, n.Tasks, n.Reserved = framework.Resources{}, nil, nil
	for g := range n.GPUs {
		n.GPUs[g].UsedMilli, n.GPUs[g].Tasks = 0, 0
	}
	n.Refresh()
	n.Version++
}
