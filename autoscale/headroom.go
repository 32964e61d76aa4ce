package autoscale

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// planRow is one selected node of a planning round before the rules decide on it.
type planRow struct {
	n     *framework.Node
	st    NodeState
	ready bool
	best  candidate
	d     *Decision
}

// headroomCut says which empty nodes the headroom keeps for idleAfter and which go
// after surplusAfter.
type headroomCut struct {
	// recent is the GPU share (milli) that workloads created within the last bootTime
	// hold on the policy's nodes, and free what its nodes with GPU pods have free.
	recent, free int64
	kept         map[string]bool
	surplus      map[string]bool
	window       time.Duration
}

// headroom splits the empty nodes of rows (without GPU pods for surplusAfter at
// least) into those kept for idleAfter and the surplus. The headroom is the demand
// that would need a node before a new one could boot: the GPUs that workloads created
// within the last bootTime took on the policy's nodes, less what its nodes with GPU
// pods still have free. Blocked empty nodes count toward it first, since they stay
// anyway; then the most recently emptied, so that the nodes empty longest go first.
// A zero surplusAfter, or one not shorter than idleAfter, keeps every node.
func (pl *Planner) headroom(rows []planRow, now time.Time) headroomCut {
	pol := pl.Policy
	h := headroomCut{kept: map[string]bool{}, surplus: map[string]bool{}, window: pol.BootTime}
	if pol.SurplusAfter <= 0 || pol.SurplusAfter >= pol.IdleAfter {
		return h // every node waits idleAfter
	}
	var empty []planRow
	for _, r := range rows {
		if !r.ready {
			continue
		}
		for _, t := range r.n.Tasks {
			if t.GPU.Any() && t.Job != nil && now.Sub(t.Job.Created) <= pol.BootTime {
				h.recent += t.Placed.GPU
			}
		}
		if _, isEmpty := r.best.method.(Empty); !isEmpty {
			h.free += r.n.FreeGPUMilli()
			continue
		}
		if now.Sub(r.best.since) >= pol.SurplusAfter {
			empty = append(empty, r)
		}
	}
	slices.SortFunc(empty, func(a, b planRow) int {
		return cmp.Or(cmp.Compare(blocked(b), blocked(a)), b.best.since.Compare(a.best.since), cmp.Compare(a.n.Name, b.n.Name))
	})
	var kept int64
	for _, r := range empty {
		if kept < h.recent-h.free {
			kept += int64(len(r.n.GPUs)) * framework.MilliPerGPU
			h.kept[r.n.Name] = true
			continue
		}
		h.surplus[r.n.Name] = true
	}
	return h
}

func blocked(r planRow) int {
	if r.st.Blocker != nil {
		return 1
	}
	return 0
}

// gpus is the headroom in GPUs, 0 when busy nodes have room for the recent demand.
func (h headroomCut) gpus() float64 {
	return float64(max(0, h.recent-h.free)) / framework.MilliPerGPU
}

// why explains, for a waiting node, whether the headroom keeps it.
func (h headroomCut) why(node string) string {
	if !h.kept[node] {
		return ""
	}
	return fmt.Sprintf("; kept as headroom: workloads created in the last %s hold %.1f GPUs on these nodes, %.1f more than the nodes with GPU pods have free",
		h.window, float64(h.recent)/framework.MilliPerGPU, float64(h.recent-h.free)/framework.MilliPerGPU)
}
