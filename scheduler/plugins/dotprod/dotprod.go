package dotprod

import (
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/bestfit"
)

// Name is the plugin's name in configuration.
const Name = "dotprod"

// DotProduct is the placer.
type DotProduct struct{}

var _ framework.GPUPlacer = DotProduct{}

// Name implements framework.Plugin.
func (DotProduct) Name() string { return Name }

// PlaceGPUs implements framework.GPUPlacer.
func (DotProduct) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	gpus, gpuReq, ok := framework.PickGPUsTotal(t, n)
	if !ok {
		return 0, 0, false
	}
	const c, g = bestfit.MaxSpecMilliCPU, bestfit.MaxSpecGPUMilli
	freeCPU := float64(n.Allocatable.MilliCPU - n.Used.MilliCPU)
	dot := (freeCPU/c*float64(t.Request.MilliCPU)/c + float64(n.FreeGPUMilli())/g*float64(gpuReq)/g) / 2
	return gpus, float64(int64(100 * (1 - dot))), true
}
