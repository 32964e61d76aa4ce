package gpupacking

import (
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "gpupacking"

// GPUPacking is the placer.
type GPUPacking struct{}

var _ framework.GPUPlacer = GPUPacking{}

// Name implements framework.Plugin.
func (GPUPacking) Name() string { return Name }

// PlaceGPUs implements framework.GPUPlacer.
func (GPUPacking) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	if !t.GPU.Any() {
		return 0, 0, true
	}
	freeGPUs := n.FreeWholeGPUs()
	// Take GPUs least-free first.
	order := make([]int, len(n.GPUs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(n.GPUs[a].FreeMilli() - n.GPUs[b].FreeMilli()) })
	need := t.GPU.GPUs()
	var set framework.GPUSet
	usedFree := 0
	var freeRatio int64
	for _, i := range order {
		if need == 0 {
			break
		}
		g := &n.GPUs[i]
		if !framework.FitsGPU(&t.GPU, g) {
			continue
		}
		set = set.Add(i)
		need--
		if g.FreeMilli() == framework.MilliPerGPU {
			usedFree++
		}
		freeRatio += g.FreeMilli() * 100 / framework.MilliPerGPU
	}
	if need > 0 {
		return 0, 0, false
	}
	switch {
	case freeGPUs == len(n.GPUs): // idle node
		return set, float64(max(100/3-int64(freeGPUs), int64(freeGPUs))), true
	case usedFree > 0:
		return set, float64(max(100/2-int64(usedFree), 100/3)), true
	}
	return set, float64(max(100-freeRatio/10, 100/2)), true
}
