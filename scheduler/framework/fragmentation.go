package framework

// PodShape is one typical pod of a workload and how often it occurs, the unit in which
// the FGD paper (Weng et al., USENIX ATC '23) measures GPU fragmentation.
type PodShape struct {
	MilliCPU int64
	// Memory is the shape's mean memory request in bytes (0 when unknown); FGD's
	// measure ignores it.
	Memory int64
	GPU    GPURequest
	// P is the shape's probability; a workload's probabilities sum to 1.
	P float64
}

// Workload is the typical pods that fragmentation is measured against.
type Workload []PodShape

// Same reports whether w and o are the same slice (not merely equal), so that plugins
// can keep what they derived from a workload until the snapshot carries another.
func (w Workload) Same(o Workload) bool {
	return len(w) == len(o) && (len(w) == 0 || &w[0] == &o[0])
}

// FragmentedMilli is how much of a node's free GPU share shape m cannot use: all of it
// when m cannot run on the node at all (CPU-only shapes included), else the free share
// of the GPUs that have less free than m needs per GPU.
func FragmentedMilli(n *Node, m *PodShape) int64 {
	var free, frag, usable int64
	var whole int
	need := int64(0)
	if m.GPU.Any() && len(n.GPUs) > 0 {
		need = m.GPU.MilliOn(&n.GPUs[0])
	}
	for i := range n.GPUs {
		f := n.GPUs[i].FreeMilli()
		free += f
		if f < need || need == 0 {
			frag += f
		} else {
			usable++
			if f == MilliPerGPU {
				whole++
			}
		}
	}
	if !m.GPU.Any() || !m.GPU.AllowsModel(n.GPUModel) || n.Allocatable.MilliCPU-n.Used.MilliCPU < m.MilliCPU {
		return free
	}
	switch {
	case m.GPU.Count > 0 && whole < m.GPU.Count:
		return free
	case m.GPU.Count == 0 && usable == 0:
		return free
	}
	return frag
}

// NodeFragmentation is F_n(M): the expected fragmented GPU share of node n over the
// workload's shapes, in milli-GPUs.
func NodeFragmentation(n *Node, w Workload) float64 {
	f := 0.0
	for i := range w {
		f += w[i].P * float64(FragmentedMilli(n, &w[i]))
	}
	return f
}
