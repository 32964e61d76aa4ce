package sim

import (
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Cluster Autoscaler's scale-down defaults, which caLike follows (cluster-autoscaler
// FAQ, "How does scale-down work?", and its flags).
const (
	// caUtilizationThreshold is --scale-down-utilization-threshold: the largest of a
	// node's CPU and memory requests over allocatable, for nodes without GPUs.
	caUtilizationThreshold = 0.5
	// caGPUUtilizationThreshold is --scale-down-gpu-utilization-threshold: a GPU node's
	// GPU requests over allocatable, the only figure CA looks at on a GPU node.
	caGPUUtilizationThreshold = 0.5
	// caUnneededAfter is --scale-down-unneeded-time, in seconds.
	caUnneededAfter = 10 * 60
	// caDelayAfterAdd is --scale-down-delay-after-add, in seconds, counted from the
	// scale-up (the request for nodes, not their joining).
	caDelayAfterAdd = 10 * 60
	// caUnremovableRecheck is --unremovable-node-recheck-timeout, in seconds: a node
	// whose removal simulation failed is not simulated again before it passes.
	caUnremovableRecheck = 5 * 60
	// caMaxEmptyParallel is --max-scale-down-parallelism (formerly
	// --max-empty-bulk-delete): the empty nodes removed at once.
	caMaxEmptyParallel = 10
	// caMaxDrainParallel is --max-drain-parallelism: the nodes with pods drained at once.
	caMaxDrainParallel = 1
)

// caLike is Cluster Autoscaler's scale-down, with its defaults, as its planner does it
// (core/scaledown/planner, simulator/cluster.go):
//
//   - A node is a candidate while its utilization is below 0.5: on a GPU node the GPU
//     requests over allocatable only, on other nodes the larger of CPU and memory
//     requests over allocatable (simulator/utilization).
//   - Candidates are simulated in CA's order (empty nodes first, then those unneeded
//     at the previous look, then the rest in the snapshot's order), one after the
//     other against the same simulated cluster: a node with a pod that may not be
//     evicted (Task.Preemptible false: safe-to-evict "false") is kept; otherwise its
//     pods are placed pod by pod, first fit, on the nodes not found removable before
//     it (firstFit: CA's simulator runs the scheduler's predicates, which here are
//     the resources only; no gangs, queues or scoring). When they all fit, they stay
//     there for the next simulations and the node is unneeded; when one fits nowhere,
//     or a pod blocks, the node is not simulated again for 5 minutes.
//   - A node unneeded for 10 minutes in a row is removed: empty ones up to 10 at once
//     and one node with pods at a time; nothing is removed within 10 minutes of a
//     scale-up.
//
// Left out: pending pods that CA would place on existing nodes before it simulates,
// node-group minimum sizes, the simulator's hints and the round-robin start of its
// node scan (first fit here), and DaemonSet pods (the replay has none).
type caLike struct {
	since       map[string]int64 // node -> unneeded since
	unremovable map[string]int64 // node -> simulated again from then on
}

func newCALike() *caLike { return &caLike{since: map[string]int64{}, unremovable: map[string]int64{}} }

func (c *caLike) pick(snap *framework.Snapshot, now int64, f *fleet) []string {
	present := make(map[string]bool, len(snap.Nodes))
	for _, n := range snap.Nodes {
		present[n.Name] = true
	}
	for name, at := range c.unremovable {
		if !present[name] || at <= now {
			delete(c.unremovable, name)
		}
	}
	// CA's candidate order: empty nodes first, then the nodes unneeded at the previous
	// look, then the others as listed.
	var candidates []*framework.Node
	for _, n := range snap.Nodes {
		if _, recent := c.unremovable[n.Name]; !recent && requestUtilization(n) < utilizationThreshold(n) {
			candidates = append(candidates, n)
		}
	}
	slices.SortStableFunc(candidates, func(a, b *framework.Node) int {
		return caRank(c, a) - caRank(c, b)
	})
	// Simulate the removals one after the other; the pods of a removable node stay
	// where the simulation put them.
	cluster := newFirstFit(snap.Nodes)
	since := make(map[string]int64, len(candidates))
	var unneeded []*framework.Node
	for _, n := range candidates {
		if hasProtectedTask(n) || !cluster.move(n.Name) {
			c.unremovable[n.Name] = now + caUnremovableRecheck
			continue
		}
		if s, ok := c.since[n.Name]; ok {
			since[n.Name] = s
		} else {
			since[n.Name] = now
		}
		unneeded = append(unneeded, n)
	}
	c.since = since
	if up, ok := lastScaleUp(f); ok && now < up+caDelayAfterAdd {
		return nil
	}
	var out []string
	empty, drained := 0, 0
	for _, n := range unneeded {
		if now-since[n.Name] < caUnneededAfter {
			continue
		}
		if len(n.Tasks) == 0 && empty < caMaxEmptyParallel {
			out = append(out, n.Name)
			empty++
		}
	}
	for _, n := range unneeded {
		if now-since[n.Name] >= caUnneededAfter && len(n.Tasks) > 0 && drained < caMaxDrainParallel {
			out = append(out, n.Name)
			drained++
		}
	}
	return out
}

// caRank is a candidate's place in CA's order: empty, unneeded before, the rest.
func caRank(c *caLike, n *framework.Node) int {
	if len(n.Tasks) == 0 {
		return 0
	}
	if _, ok := c.since[n.Name]; ok {
		return 1
	}
	return 2
}

// lastScaleUp is when the fleet last asked for nodes: a booting node was asked for
// bootDelay before it is ready, and so was the node that joined last.
func lastScaleUp(f *fleet) (int64, bool) {
	at, ok := int64(-1), false
	if f.lastGrow >= 0 {
		at, ok = f.lastGrow-f.bootDelay, true
	}
	for _, b := range f.booting {
		at, ok = max(at, b.ready-f.bootDelay), true
	}
	return at, ok
}

// hasProtectedTask reports whether a pod on n may not be evicted (safe-to-evict
// "false", do-not-disrupt).
func hasProtectedTask(n *framework.Node) bool {
	return slices.ContainsFunc(n.Tasks, func(t *framework.Task) bool { return !t.Preemptible })
}

// isGPUNode reports whether CA judges n by its GPUs.
func isGPUNode(n *framework.Node) bool { return len(n.GPUs) > 0 || n.Allocatable.GPU > 0 }

func utilizationThreshold(n *framework.Node) float64 {
	if isGPUNode(n) {
		return caGPUUtilizationThreshold
	}
	return caUtilizationThreshold
}

// requestUtilization is the node's utilization as CA computes it: on a GPU node its
// GPU requests over allocatable (CPU and memory are not looked at; a GPU node whose
// GPUs are not allocatable counts as 0), on other nodes the larger of its CPU and
// memory requests over allocatable.
func requestUtilization(n *framework.Node) float64 {
	share := func(used, alloc int64) float64 {
		if alloc <= 0 {
			return 0
		}
		return float64(used) / float64(alloc)
	}
	if isGPUNode(n) {
		return share(n.Used.GPU, n.Allocatable.GPU)
	}
	return max(share(n.Used.MilliCPU, n.Allocatable.MilliCPU), share(n.Used.Memory, n.Allocatable.Memory))
}

// firstFit is scratch free capacity of some nodes, on which the pods of nodes taken
// out are placed one by one, each on the first node where it fits, as a cluster
// autoscaler's simulation sees nodes: every resource a node total. GPUs are the node's
// whole GPUs not held whole, and its GPU share (whole GPUs and slices together, in
// milli) not requested; which GPU a slice sits on, and so that a GPU holding a slice
// cannot be given whole, it cannot see. Cluster Autoscaler and Karpenter share it.
type firstFit struct {
	nodes []fitNode
	at    map[string]int
	// podOrder, when set, orders the pods of the nodes taken out before they are
	// placed; nil keeps them node by node, in each node's order.
	podOrder func(a, b *framework.Task) int
}

type fitNode struct {
	name     string
	cpu, mem int64
	// whole is the GPUs no whole-GPU pod holds; shares the GPU milli no pod requests.
	whole     int
	shares    int64
	gpuModel  string
	gpuMemory int64
	// schedules is false for a node pods may not be placed on (cordoned); gone once
	// the node is taken out.
	schedules, gone bool
	// tasks are the pods on the node: its own and those moved onto it.
	tasks []*framework.Task
}

// placement is one pod placed by move, to undo.
type placement struct {
	node int
	t    *framework.Task
}

func newFirstFit(nodes []*framework.Node) *firstFit {
	ff := &firstFit{nodes: make([]fitNode, 0, len(nodes)), at: make(map[string]int, len(nodes))}
	for _, n := range nodes {
		f := fitNode{name: n.Name, cpu: n.Allocatable.MilliCPU - n.Used.MilliCPU, mem: n.Allocatable.Memory - n.Used.Memory,
			whole: len(n.GPUs), shares: int64(len(n.GPUs)) * framework.MilliPerGPU, gpuModel: n.GPUModel,
			schedules: !n.Unschedulable, tasks: slices.Clip(n.Tasks)}
		if len(n.GPUs) > 0 {
			f.gpuMemory = n.GPUs[0].MemoryMiB
		}
		for _, t := range n.Tasks {
			f.whole -= t.GPU.Count
			f.shares -= f.shareOf(t)
		}
		ff.at[n.Name] = len(ff.nodes)
		ff.nodes = append(ff.nodes, f)
	}
	return ff
}

// move takes the named nodes out and places their pods (their own and those moved
// onto them) on the other nodes; it reports false, and changes nothing, when a pod
// fits nowhere. Unknown names are ignored.
func (ff *firstFit) move(names ...string) bool {
	_, _, ok := ff.tryMove(names)
	return ok
}

// fits reports whether move would succeed, and changes nothing.
func (ff *firstFit) fits(names ...string) bool {
	done, out, ok := ff.tryMove(names)
	if ok {
		ff.undo(done, out)
	}
	return ok
}

// tryMove is move, returning what it did so that it can be undone.
func (ff *firstFit) tryMove(names []string) (done []placement, out []int, ok bool) {
	var pods []*framework.Task
	for _, name := range names {
		i, known := ff.at[name]
		if !known || ff.nodes[i].gone {
			continue
		}
		ff.nodes[i].gone = true
		out = append(out, i)
		pods = append(pods, ff.nodes[i].tasks...)
	}
	if ff.podOrder != nil {
		slices.SortStableFunc(pods, ff.podOrder)
	}
	for _, t := range pods {
		i := ff.place(t)
		if i < 0 {
			ff.undo(done, out)
			return nil, nil, false
		}
		done = append(done, placement{node: i, t: t})
	}
	return done, out, true
}

// drop takes the named nodes out without placing their pods (they are not moved: an
// empty node, or pods that are let go).
func (ff *firstFit) drop(names ...string) {
	for _, name := range names {
		if i, ok := ff.at[name]; ok {
			ff.nodes[i].gone = true
		}
	}
}

// undo gives back the placements, last first, and brings the nodes taken out back.
func (ff *firstFit) undo(done []placement, out []int) {
	for k := len(done) - 1; k >= 0; k-- {
		n := &ff.nodes[done[k].node]
		n.give(done[k].t)
		n.tasks = n.tasks[:len(n.tasks)-1]
	}
	for _, i := range out {
		ff.nodes[i].gone = false
	}
}

// place puts t on the first node it fits and returns that node's index; -1 when it
// fits nowhere.
func (ff *firstFit) place(t *framework.Task) int {
	for i := range ff.nodes {
		n := &ff.nodes[i]
		if !n.gone && n.take(t) {
			n.tasks = append(n.tasks, t)
			return i
		}
	}
	return -1
}

// shareOf is the GPU milli t requests on n: its whole GPUs, or its slice of one.
func (n *fitNode) shareOf(t *framework.Task) int64 {
	if !t.GPU.Any() {
		return 0
	}
	return int64(max(t.GPU.Count, 1)) * t.GPU.MilliOn(&framework.GPU{MemoryMiB: n.gpuMemory})
}

// take places t on n if its CPU, memory, whole GPUs and GPU share fit the node's totals.
func (n *fitNode) take(t *framework.Task) bool {
	share := n.shareOf(t)
	if !n.schedules || t.Request.MilliCPU > n.cpu || t.Request.Memory > n.mem || t.GPU.Count > n.whole || share > n.shares ||
		t.GPU.Any() && !t.GPU.AllowsModel(n.gpuModel) {
		return false
	}
	n.cpu, n.mem, n.whole, n.shares = n.cpu-t.Request.MilliCPU, n.mem-t.Request.Memory, n.whole-t.GPU.Count, n.shares-share
	return true
}

// give undoes take.
func (n *fitNode) give(t *framework.Task) {
	n.cpu, n.mem, n.whole, n.shares = n.cpu+t.Request.MilliCPU, n.mem+t.Request.Memory, n.whole+t.GPU.Count, n.shares+n.shareOf(t)
}
