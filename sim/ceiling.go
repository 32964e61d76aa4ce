package sim

import (
	"cmp"
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// The savings ceiling: how few nodes the running tasks need at an instant, packed by a
// re-packer free to move every task (repackNodes), or by one that places each task
// once, when it starts, and never moves it (noMigration). Both see GPUs one by one, as
// the scheduler does: a whole-GPU task needs GPUs with nothing on them, and a slice
// goes on one GPU with that share free and not held whole. A slice's share is its
// Milli, or its MemoryMiB over the GPU's memory rounded up to whole milli
// (GPURequest.MilliOn), so slices never add up to more than a GPU's memory.

// repackNodes is the fewest of the nodes that hold every task, placed first fit
// decreasing: tasks by GPU share, then CPU, then memory, largest first, each on the
// first node already in use where it fits, else on the next unused node it fits, in
// order of size (GPUs, GPU memory, CPU, memory, largest first; the input's order among
// equals). Nodes are judged by their allocatable, empty; with nodes of one shape the
// order does not matter, and with mixed shapes the big nodes are used first, as a
// re-packer keeping the fewest nodes would. A task that fits no node counts one
// extra node. It is an estimate of the nodes a perfect re-packer would need at that
// instant (first fit decreasing is within 11/9 of the optimum, plus one, in one
// dimension), not a bound.
func repackNodes(nodes []*framework.Node, tasks []*framework.Task) int {
	byShape := slices.Clone(nodes)
	slices.SortStableFunc(byShape, func(a, b *framework.Node) int {
		return cmp.Or(cmp.Compare(len(b.GPUs), len(a.GPUs)), cmp.Compare(gpuMemoryOf(b), gpuMemoryOf(a)),
			cmp.Compare(b.Allocatable.MilliCPU, a.Allocatable.MilliCPU), cmp.Compare(b.Allocatable.Memory, a.Allocatable.Memory))
	})
	var ref int64 // the largest GPU memory, to weigh memory slices when sorting
	for _, n := range nodes {
		ref = max(ref, gpuMemoryOf(n))
	}
	sorted := slices.Clone(tasks)
	slices.SortStableFunc(sorted, func(a, b *framework.Task) int {
		return cmp.Or(cmp.Compare(b.GPU.NominalMilli(ref), a.GPU.NominalMilli(ref)),
			cmp.Compare(b.Request.MilliCPU, a.Request.MilliCPU), cmp.Compare(b.Request.Memory, a.Request.Memory))
	})
	var open []*packNode
	unused := make([]*packNode, len(byShape))
	for i, n := range byShape {
		unused[i] = newPackNode(n)
	}
	extra := 0
	for _, t := range sorted {
		if placeFirst(open, t) >= 0 {
			continue
		}
		if i := placeFirst(unused, t); i >= 0 {
			open = append(open, unused[i])
			unused = slices.Delete(unused, i, i+1)
			continue
		}
		extra++
	}
	return len(open) + extra
}

// placeFirst places t on the first of the nodes where it fits and returns its index;
// -1 when it fits none.
func placeFirst(nodes []*packNode, t *framework.Task) int {
	for i, n := range nodes {
		if gpus, milli, ok := n.fit(t); ok {
			n.take(t, gpus, milli)
			return i
		}
	}
	return -1
}

// noMigration packs tasks as they start, each on the lowest-indexed node where it fits
// then, and never moves one: used is the nodes such a packer keeps on. A task that
// fits no node when it starts counts one extra node until it ends (it is not placed
// later, when room frees). Tasks are known by pointer; starting a task already held
// changes nothing, and ending one not held changes nothing.
type noMigration struct {
	nodes []*packNode
	at    map[*framework.Task]packSlot
	// inUse is the nodes holding a task; overflow the tasks that fit none.
	inUse, overflow int
}

// packSlot is where noMigration put a task: node -1 when it fits none.
type packSlot struct {
	node  int
	gpus  framework.GPUSet
	milli int64
}

func newNoMigration(nodes []*framework.Node) *noMigration {
	p := &noMigration{nodes: make([]*packNode, len(nodes)), at: map[*framework.Task]packSlot{}}
	for i, n := range nodes {
		p.nodes[i] = newPackNode(n)
	}
	return p
}

// start places t on the lowest-indexed node where it fits.
func (p *noMigration) start(t *framework.Task) {
	if _, ok := p.at[t]; ok {
		return
	}
	for i, n := range p.nodes {
		if gpus, milli, ok := n.fit(t); ok {
			if n.tasks == 0 {
				p.inUse++
			}
			n.take(t, gpus, milli)
			p.at[t] = packSlot{node: i, gpus: gpus, milli: milli}
			return
		}
	}
	p.at[t] = packSlot{node: -1}
	p.overflow++
}

// end frees what t held.
func (p *noMigration) end(t *framework.Task) {
	s, ok := p.at[t]
	if !ok {
		return
	}
	delete(p.at, t)
	if s.node < 0 {
		p.overflow--
		return
	}
	n := p.nodes[s.node]
	n.give(t, s.gpus, s.milli)
	if n.tasks == 0 {
		p.inUse--
	}
}

// used is the nodes holding a task, plus one per task that fit none.
func (p *noMigration) used() int { return p.inUse + p.overflow }

// packNode is a node's free capacity, GPU by GPU.
type packNode struct {
	cpu, mem, pods int64
	// limitPods is false when the node sets no pod limit.
	limitPods bool
	// free is each GPU's free share in milli (0 for an unhealthy GPU); memMiB its memory.
	free   []int64
	memMiB []int64
	model  string
	tasks  int
}

// newPackNode is n's allocatable, with nothing on it.
func newPackNode(n *framework.Node) *packNode {
	p := &packNode{cpu: n.Allocatable.MilliCPU, mem: n.Allocatable.Memory, pods: n.Allocatable.Pods, limitPods: n.Allocatable.Pods > 0,
		free: make([]int64, len(n.GPUs)), memMiB: make([]int64, len(n.GPUs)), model: n.GPUModel}
	for g := range n.GPUs {
		if n.GPUs[g].Healthy {
			p.free[g] = framework.MilliPerGPU
		}
		p.memMiB[g] = n.GPUs[g].MemoryMiB
	}
	return p
}

// fit finds room for t: the lowest-indexed GPUs with nothing on them for whole GPUs, or
// for a slice the GPU it fits most tightly (best fit, so that empty GPUs stay whole),
// the lowest-indexed among equals. ok is false when t does not fit.
func (n *packNode) fit(t *framework.Task) (gpus framework.GPUSet, milli int64, ok bool) {
	if t.Request.MilliCPU > n.cpu || t.Request.Memory > n.mem || n.limitPods && n.pods < 1 ||
		t.GPU.Any() && !t.GPU.AllowsModel(n.model) {
		return 0, 0, false
	}
	switch {
	case t.GPU.Count > 0:
		for g := range n.free {
			if gpus.Len() < t.GPU.Count && n.free[g] == framework.MilliPerGPU {
				gpus = gpus.Add(g)
			}
		}
		return gpus, framework.MilliPerGPU, gpus.Len() == t.GPU.Count
	case t.GPU.Shared():
		best := -1
		for g := range n.free {
			need := t.GPU.MilliOn(&framework.GPU{MemoryMiB: n.memMiB[g]})
			if need <= n.free[g] && (best < 0 || n.free[g]-need < n.free[best]-milli) {
				best, milli = g, need
			}
		}
		if best < 0 {
			return 0, 0, false
		}
		return gpus.Add(best), milli, true
	}
	return 0, 0, true
}

func (n *packNode) take(t *framework.Task, gpus framework.GPUSet, milli int64) {
	n.cpu, n.mem, n.pods, n.tasks = n.cpu-t.Request.MilliCPU, n.mem-t.Request.Memory, n.pods-1, n.tasks+1
	for _, g := range gpus.Indices() {
		n.free[g] -= milli
	}
}

func (n *packNode) give(t *framework.Task, gpus framework.GPUSet, milli int64) {
	n.cpu, n.mem, n.pods, n.tasks = n.cpu+t.Request.MilliCPU, n.mem+t.Request.Memory, n.pods+1, n.tasks-1
	for _, g := range gpus.Indices() {
		n.free[g] += milli
	}
}

// gpuMemoryOf is the memory of n's first GPU; 0 without GPUs.
func gpuMemoryOf(n *framework.Node) int64 {
	if len(n.GPUs) == 0 {
		return 0
	}
	return n.GPUs[0].MemoryMiB
}
