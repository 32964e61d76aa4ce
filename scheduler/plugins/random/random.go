package random

import (
	"hash/fnv"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "random"

// Random is the placer.
type Random struct{}

var _ framework.GPUPlacer = Random{}

// Name implements framework.Plugin.
func (Random) Name() string { return Name }

// PlaceGPUs implements framework.GPUPlacer: every node scores alike; a share goes to a
// GPU chosen at random among those it fits, as the paper's simulator ran this baseline
// (gpuSelMethod random); whole GPUs are the default choice.
func (Random) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	if !t.GPU.Shared() {
		g := framework.PickGPUs(&t.GPU, n)
		return g, 0, g != 0 || !t.GPU.Any()
	}
	var fit []int
	for i := range n.GPUs {
		if framework.FitsGPU(&t.GPU, &n.GPUs[i]) {
			fit = append(fit, i)
		}
	}
	if len(fit) == 0 {
		return 0, 0, false
	}
	// The task and node names pick the GPU: random across tasks, reproducible per seed.
	h := fnv.New64a()
	h.Write([]byte(t.UID + "/" + n.Name))
	return framework.GPUSet(0).Add(fit[h.Sum64()%uint64(len(fit))]), 0, true
}
