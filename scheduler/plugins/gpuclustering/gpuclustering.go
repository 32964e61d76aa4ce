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

// tag is a task's GPU request class, as the paper's simulator groups them: every share
// of one GPU is one class, whole-GPU requests are a class per GPU count.
type tag struct {
	count  int
	shared bool
}

func tagOf(r *framework.GPURequest) tag { return tag{r.Count, r.Shared()} }

// PlaceGPUs implements framework.GPUPlacer.
func (GPUClustering) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	if !t.GPU.Any() {
		return 0, 0, true
	}
	gpus := framework.PickGPUs(&t.GPU, n)
	if gpus == 0 {
		return 0, 0, false
	}
	mine := tagOf(&t.GPU)
	same, others := false, false
	for _, o := range n.Tasks {
		if !o.GPU.Any() {
			continue
		}
		if tagOf(&o.GPU) == mine {
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
