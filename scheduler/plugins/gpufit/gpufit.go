// Package gpufit is Tessera's fragmentation-aware GPU placer. It follows the FGD paper's
// fragmentation gradient (how much of the node's free GPU share the workload's typical
// pods could no longer use after the placement) but keeps the gradient continuous
// instead of FGD's integer sigmoid, and breaks what remains of ties towards packing:
// fuller GPUs first, then fuller nodes, so whole GPUs and whole nodes stay free.
package gpufit

import (
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/fgd"
	"github.com/tessera-gpu/tessera/scheduler/plugins/internal/nodecache"
)

// Name is the plugin's name in configuration.
const Name = "gpufit"

// GPUFit is the placer.
type GPUFit struct {
	workload framework.Workload
	cache    nodecache.Cache
}

var (
	_ framework.GPUPlacer        = (*GPUFit)(nil)
	_ framework.SnapshotObserver = (*GPUFit)(nil)
)

// New returns the plugin.
func New() *GPUFit { return &GPUFit{} }

// Name implements framework.Plugin.
func (*GPUFit) Name() string { return Name }

// OnSessionOpen implements framework.SnapshotObserver.
func (g *GPUFit) OnSessionOpen(s *framework.Snapshot) {
	if len(g.workload) != len(s.Workload) || (len(s.Workload) > 0 && &g.workload[0] != &s.Workload[0]) {
		g.workload = s.Workload
		g.cache.Reset()
	}
}

// PlaceGPUs implements framework.GPUPlacer. The score is 50 plus the fragmentation
// decrease in hundredths of a GPU (clamped to 0..100), plus a packing term below one point.
func (g *GPUFit) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	v := g.cache.Get(t, n, func() nodecache.Verdict {
		if len(g.workload) == 0 {
			gpus := framework.PickGPUs(&t.GPU, n)
			return nodecache.Verdict{GPUs: gpus, Score: 50 + packing(t, n, gpus), OK: gpus != 0 || !t.GPU.Any()}
		}
		v := fgd.Gradient(t, n, g.workload, func(delta float64) float64 { return delta })
		if v.OK {
			v.Score = min(max(50+v.Score/10, 0), 99) + packing(t, n, v.GPUs)
		}
		return v
	})
	return v.GPUs, v.Score, v.OK
}

// packing is in [0, 1): higher when the chosen GPUs and the node have less left free.
func packing(t *framework.Task, n *framework.Node, gpus framework.GPUSet) float64 {
	gpuFree := 0.0
	if gpus != 0 {
		for _, i := range gpus.Indices() {
			gpuFree += float64(n.GPUs[i].FreeMilli())
		}
		gpuFree /= float64(gpus.Len() * framework.MilliPerGPU)
	}
	nodeFree := 0.0
	if len(n.GPUs) > 0 {
		nodeFree = float64(n.FreeGPUMilli()) / float64(len(n.GPUs)*framework.MilliPerGPU)
	} else if n.Allocatable.MilliCPU > 0 {
		nodeFree = float64(n.Allocatable.MilliCPU-n.Used.MilliCPU) / float64(n.Allocatable.MilliCPU)
	}
	return 0.5*(1-gpuFree) + 0.49*(1-nodeFree)
}
