package fgd

import (
	"math"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/internal/nodecache"
)

// Name is the plugin's name in configuration.
const Name = "fgd"

// FGD is the placer.
type FGD struct {
	workload framework.Workload
	cache    nodecache.Cache
}

var (
	_ framework.GPUPlacer        = (*FGD)(nil)
	_ framework.SnapshotObserver = (*FGD)(nil)
)

// New returns the plugin.
func New() *FGD { return &FGD{} }

// Name implements framework.Plugin.
func (*FGD) Name() string { return Name }

// OnSessionOpen implements framework.SnapshotObserver.
func (f *FGD) OnSessionOpen(s *framework.Snapshot) {
	f.cache.NewSession()
	if !f.workload.Same(s.Workload) {
		f.workload = s.Workload
		f.cache.Reset()
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// PlaceGPUs implements framework.GPUPlacer.
func (f *FGD) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	v := f.cache.Get(t, n, func() nodecache.Verdict {
		return Gradient(t, n, f.workload, func(delta float64) float64 {
			return math.Floor(sigmoid(delta/1000) * 100)
		})
	})
	return v.GPUs, v.Score, v.OK
}

// Gradient evaluates placing t on n: for each candidate GPU choice it computes the
// fragmentation decrease F_n - F_n' over the workload and rates it with score; the first
// choice with the highest score wins.
func Gradient(t *framework.Task, n *framework.Node, w framework.Workload, score func(delta float64) float64) nodecache.Verdict {
	return GradientOf(t, n, func(n *framework.Node) float64 { return framework.NodeFragmentation(n, w) }, score)
}

// GradientOf is Gradient with any fragmentation measure of a node.
func GradientOf(t *framework.Task, n *framework.Node, measure func(*framework.Node) float64, score func(delta float64) float64) nodecache.Verdict {
	before := measure(n)
	after := func(gpus framework.GPUSet, milli int64) float64 {
		n.Used.MilliCPU += t.Request.MilliCPU
		n.Used.Memory += t.Request.Memory
		for _, i := range gpus.Indices() {
			n.GPUs[i].UsedMilli += milli
		}
		f := measure(n)
		for _, i := range gpus.Indices() {
			n.GPUs[i].UsedMilli -= milli
		}
		n.Used.MilliCPU -= t.Request.MilliCPU
		n.Used.Memory -= t.Request.Memory
		return f
	}
	switch {
	case !t.GPU.Any():
		return nodecache.Verdict{Score: score(before - after(0, 0)), OK: true}
	case t.GPU.Count > 0:
		gpus := framework.PickWholeGPUs(&t.GPU, n)
		if gpus == 0 {
			return nodecache.Verdict{}
		}
		return nodecache.Verdict{GPUs: gpus, Score: score(before - after(gpus, framework.MilliPerGPU)), OK: true}
	}
	best := nodecache.Verdict{}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if !framework.FitsGPU(&t.GPU, g) {
			continue
		}
		set := framework.GPUSet(0).Add(i)
		s := score(before - after(set, t.GPU.MilliOn(g)))
		if !best.OK || s > best.Score {
			best = nodecache.Verdict{GPUs: set, Score: s, OK: true}
		}
	}
	return best
}
