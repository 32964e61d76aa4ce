package bestfit

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "bestfit"

// Max specs that normalise the score, as in the paper's simulator.
const (
	MaxSpecMilliCPU = 128000
	MaxSpecGPUMilli = 8000
)

// BestFit is the placer.
type BestFit struct{}

var _ framework.GPUPlacer = BestFit{}

// Name implements framework.Plugin.
func (BestFit) Name() string { return Name }

// PlaceGPUs implements framework.GPUPlacer.
func (BestFit) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	gpus, gpuReq, ok := framework.PickGPUsTotal(t, n)
	if !ok {
		return 0, 0, false
	}
	freeCPU := n.Allocatable.MilliCPU - n.Used.MilliCPU
	left := 0.5*float64(freeCPU-t.Request.MilliCPU)/MaxSpecMilliCPU + 0.5*float64(n.FreeGPUMilli()-gpuReq)/MaxSpecGPUMilli
	return gpus, float64(int64((1 - left) * 100)), true
}
