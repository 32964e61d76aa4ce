// Package gpuclustering is the GPU-clustering baseline of the FGD paper's simulator:
// nodes already running only tasks of the same GPU request shape score highest, then
// nodes whose mix includes that shape, then idle nodes, then the rest; within a band,
// less GPU left scores higher.
package gpuclustering

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "gpuclustering"

// maxSpecGPUMilli is the largest node's GPU share, as in the paper's simulator.
const maxSpecGPUMilli = 8000

// GPUClustering is the placer.
type GPUClustering struct{}

var _ framework.GPUPlacer = GPUClustering{}

// Name implements framework.Plugin.
func (GPUClustering) Name() string { return Name }

type tag struct {
	count int
	milli int64
}

// PlaceGPUs implements framework.GPUPlacer.
func (GPUClustering) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	if !t.GPU.Any() {
		return 0, 0, true
	}
	gpus := framework.PickGPUs(&t.GPU, n)
	if gpus == 0 {
		return 0, 0, false
	}
	mine := tag{t.GPU.Count, t.GPU.Milli + t.GPU.MemoryMiB}
	same, others := false, false
	for _, o := range n.Tasks {
		if !o.GPU.Any() {
			continue
		}
		if (tag{o.GPU.Count, o.GPU.Milli + o.GPU.MemoryMiB}) == mine {
			same = true
		} else {
			others = true
		}
	}
	left := n.FreeGPUMilli()
	base := int64(100/4) * (maxSpecGPUMilli - left) / maxSpecGPUMilli
	switch {
	case same && !others:
		base += 100 * 3 / 4
	case same:
		base += 100 * 2 / 4
	case !others:
		base += 100 / 4
	}
	return gpus, float64(base), true
}
