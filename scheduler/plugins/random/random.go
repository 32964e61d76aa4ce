package random

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "random"

// Random is the placer.
type Random struct{}

var _ framework.GPUPlacer = Random{}

// Name implements framework.Plugin.
func (Random) Name() string { return Name }

// PlaceGPUs implements framework.GPUPlacer.
func (Random) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	if !t.GPU.Any() {
		return 0, 0, true
	}
	g := framework.PickGPUs(&t.GPU, n)
	return g, 0, g != 0
}
