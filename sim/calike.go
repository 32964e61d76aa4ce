package sim

import (
	"cmp"
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Cluster Autoscaler's scale-down defaults, which caLike follows.
const (
	// caUtilizationThreshold is --scale-down-utilization-threshold.
	caUtilizationThreshold = 0.5
	// caUnneededAfter is --scale-down-unneeded-time, in seconds.
	caUnneededAfter = 10 * 60
	// caDelayAfterAdd is --scale-down-delay-after-add, in seconds.
	caDelayAfterAdd = 10 * 60
	// caMaxEmptyBulkDelete is --max-empty-bulk-delete: empty nodes removed at once;
	// a node with pods goes one at a time.
	caMaxEmptyBulkDelete = 10
)

// caLike is a Cluster-Autoscaler-like scale-down rule. A node is unneeded while its
// requests-based utilization (the largest of GPU, CPU and memory requested over
// allocatable) is below 0.5 and each of its pods fits on another node by simple
// first fit, pod by pod, with no notion of gangs, queues or the scheduler's scoring;
// after 10 minutes unneeded it is removed (empty nodes first, up to 10 at once, then
// one node with pods, its pods re-checked against the nodes left), and nothing is
// removed within 10 minutes of a node joining.
type caLike struct {
	since map[string]int64 // node -> unneeded since
}

func newCALike() *caLike { return &caLike{since: map[string]int64{}} }

func (c *caLike) pick(snap *framework.Snapshot, now int64, f *fleet) []string {
	var due []*framework.Node
	for _, n := range snap.Nodes {
		if !c.unneeded(snap, n) {
			delete(c.since, n.Name)
			continue
		}
		if _, ok := c.since[n.Name]; !ok {
			c.since[n.Name] = now
		}
		if now-c.since[n.Name] >= caUnneededAfter {
			due = append(due, n)
		}
	}
	for name := range c.since {
		if !slices.ContainsFunc(snap.Nodes, func(n *framework.Node) bool { return n.Name == name }) {
			delete(c.since, name)
		}
	}
	if f.lastGrow >= 0 && now < f.lastGrow+caDelayAfterAdd {
		return nil
	}
	slices.SortFunc(due, func(a, b *framework.Node) int {
		return cmp.Or(cmp.Compare(c.since[a.Name], c.since[b.Name]), cmp.Compare(a.Name, b.Name))
	})
	// Empty nodes first, in bulk; then one node with pods, which must fit on the nodes left.
	left := newFirstFit(snap.Nodes)
	var out []string
	for _, n := range due {
		if len(n.Tasks) == 0 && len(out) < caMaxEmptyBulkDelete {
			out = append(out, n.Name)
			left = left.without(n.Name)
		}
	}
	for _, n := range due {
		if len(n.Tasks) > 0 && left.without(n.Name).placeAll(n.Tasks) {
			return append(out, n.Name)
		}
	}
	return out
}

// unneeded reports whether n's requests-based utilization is below the threshold and
// its pods fit on the other nodes.
func (c *caLike) unneeded(snap *framework.Snapshot, n *framework.Node) bool {
	if requestUtilization(n) >= caUtilizationThreshold {
		return false
	}
	return len(n.Tasks) == 0 || newFirstFit(snap.Nodes).without(n.Name).placeAll(n.Tasks)
}

// requestUtilization is the largest of the node's GPU, CPU and memory requests over
// its allocatable.
func requestUtilization(n *framework.Node) float64 {
	share := func(used, alloc int64) float64 {
		if alloc <= 0 {
			return 0
		}
		return float64(used) / float64(alloc)
	}
	return max(share(n.Used.GPU, n.Allocatable.GPU), share(n.Used.MilliCPU, n.Allocatable.MilliCPU), share(n.Used.Memory, n.Allocatable.Memory))
}

// firstFit is scratch free capacity of some nodes, to place pods one by one on the
// first node where they fit, as Cluster Autoscaler sees nodes: every resource a node
// total. GPUs are the node's whole GPUs not held whole, and its GPU share (whole GPUs
// and slices together, in milli) not requested; which GPU a slice sits on, and so that
// a GPU holding a slice cannot be given whole, it cannot see.
type firstFit []fitNode

type fitNode struct {
	name     string
	cpu, mem int64
	// whole is the GPUs no whole-GPU pod holds; shares the GPU milli no pod requests.
	whole     int
	shares    int64
	gpuModel  string
	gpuMemory int64
	schedules bool
}

func newFirstFit(nodes []*framework.Node) firstFit {
	out := make(firstFit, 0, len(nodes))
	for _, n := range nodes {
		f := fitNode{name: n.Name, cpu: n.Allocatable.MilliCPU - n.Used.MilliCPU, mem: n.Allocatable.Memory - n.Used.Memory,
			whole: len(n.GPUs), shares: int64(len(n.GPUs)) * framework.MilliPerGPU, gpuModel: n.GPUModel, schedules: !n.Unschedulable}
		if len(n.GPUs) > 0 {
			f.gpuMemory = n.GPUs[0].MemoryMiB
		}
		for _, t := range n.Tasks {
			f.whole -= t.GPU.Count
			f.shares -= f.shareOf(t)
		}
		out = append(out, f)
	}
	return out
}

// shareOf is the GPU milli t requests on n: its whole GPUs, or its slice of one.
func (n *fitNode) shareOf(t *framework.Task) int64 {
	if !t.GPU.Any() {
		return 0
	}
	return int64(max(t.GPU.Count, 1)) * t.GPU.MilliOn(&framework.GPU{MemoryMiB: n.gpuMemory})
}

// without is a copy of ff without the named node.
func (ff firstFit) without(name string) firstFit {
	out := make(firstFit, 0, len(ff))
	for _, n := range ff {
		if n.name != name {
			out = append(out, n)
		}
	}
	return out
}

// placeAll places the tasks one by one, each on the first node it fits; false when
// one fits nowhere.
func (ff firstFit) placeAll(tasks []*framework.Task) bool {
	for _, t := range tasks {
		if !ff.place(t) {
			return false
		}
	}
	return true
}

func (ff firstFit) place(t *framework.Task) bool {
	for i := range ff {
		if ff[i].take(t) {
			return true
		}
	}
	return false
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
