package gpufit

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/fgd"
	"github.com/tessera-gpu/tessera/scheduler/plugins/internal/nodecache"
)

// Name is the plugin's name in configuration.
const Name = "gpufit"

// Defaults of the plugin's arguments.
const (
	// DefaultBandMilli is the width of one score band of the fragmentation gradient.
	DefaultBandMilli = 200
	// DefaultCPUStrandWeight weighs GPU share stranded by CPU against FGD fragmentation.
	DefaultCPUStrandWeight = 1.0
)

// GPUFit is the placer.
type GPUFit struct {
	// BandMilli (gpufit.bandMilli) and CPUStrandWeight (gpufit.cpuStrandWeight) tune the
	// score; see the defaults.
	BandMilli       float64
	CPUStrandWeight float64

	workload framework.Workload
	cache    nodecache.Cache
	// cpuPerGPU is the workload's mean CPU request per GPU (milli-CPU per milli-GPU).
	cpuPerGPU float64
	memPerGPU float64
	// demand is the workload's model-constrained GPU demand; pressure its share of each
	// model's free GPUs this session, by model id of free.
	demand   []modelDemand
	free     modelFree
	pressure []float64
}

var (
	_ framework.GPUPlacer        = (*GPUFit)(nil)
	_ framework.SnapshotObserver = (*GPUFit)(nil)
)

// New returns the plugin with default arguments.
func New() *GPUFit {
	return &GPUFit{BandMilli: DefaultBandMilli, CPUStrandWeight: DefaultCPUStrandWeight}
}

// Configure reads gpufit.bandMilli and gpufit.cpuStrandWeight.
func (g *GPUFit) Configure(args map[string]string) error {
	for k, v := range args {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case k != "gpufit.bandMilli" && k != "gpufit.cpuStrandWeight":
			return fmt.Errorf("unknown gpufit argument %s; known: gpufit.bandMilli, gpufit.cpuStrandWeight", k)
		case err != nil || f < 0 || (k == "gpufit.bandMilli" && f == 0):
			return fmt.Errorf("gpufit argument %s: %q must be a positive number", k, v)
		case k == "gpufit.bandMilli":
			g.BandMilli = f
		default:
			g.CPUStrandWeight = f
		}
	}
	return nil
}

// Name implements framework.Plugin.
func (*GPUFit) Name() string { return Name }

// OnSessionOpen implements framework.SnapshotObserver.
func (g *GPUFit) OnSessionOpen(s *framework.Snapshot) {
	g.cache.NewSession()
	defer func() {
		g.pressure = g.pressure[:0]
		if len(g.demand) > 0 {
			g.free.update(s.Nodes)
			g.pressure = modelPressure(&g.free, g.demand, g.pressure)
		}
	}()
	if g.workload.Same(s.Workload) {
		return
	}
	g.workload = s.Workload
	g.demand = constrainedDemand(s.Workload, s.MaxGPUMemoryMiB)
	g.cache.Reset()
	var cpu, gpu, mem float64
	for _, m := range g.workload {
		if m.GPU.Count > 0 {
			gpu += m.P * float64(m.GPU.Count*framework.MilliPerGPU)
		} else if m.GPU.Milli > 0 {
			gpu += m.P * float64(m.GPU.Milli)
		} else {
			continue
		}
		cpu += m.P * float64(m.MilliCPU)
		mem += m.P * float64(m.Memory)
	}
	g.cpuPerGPU, g.memPerGPU = 0, 0
	if gpu > 0 {
		g.cpuPerGPU = cpu / gpu
		g.memPerGPU = mem / gpu
	}
}

// PlaceGPUs implements framework.GPUPlacer. The score is the banded decrease of the
// fragmentation measure plus a packing term below one band.
func (g *GPUFit) PlaceGPUs(t *framework.Task, n *framework.Node) (framework.GPUSet, float64, bool) {
	v := g.cache.Get(t, n, func() nodecache.Verdict {
		if len(g.workload) == 0 {
			gpus := framework.PickGPUs(&t.GPU, n)
			return nodecache.Verdict{GPUs: gpus, Score: packing(n), OK: gpus != 0 || !t.GPU.Any()}
		}
		v := fgd.GradientOf(t, n, g.measure, func(delta float64) float64 { return math.Round(delta / g.BandMilli) })
		if v.OK {
			v.Score += packing(n)
		}
		return v
	})
	if v.OK && len(g.pressure) > 0 {
		v.Score -= g.stranded(t, n, v.GPUs) / g.BandMilli
	}
	return v.GPUs, v.Score, v.OK
}

// stranded is the model-constrained demand that placing t on n's GPUs takes capacity
// from, in milli: not banded, as it is the same for every node of one GPU model.
func (g *GPUFit) stranded(t *framework.Task, n *framework.Node, gpus framework.GPUSet) float64 {
	if n.Index >= len(g.free.model) {
		return 0
	}
	id := g.free.model[n.Index]
	if id < 0 || g.pressure[id] == 0 {
		return 0
	}
	var milli int64
	for _, i := range gpus.Indices() {
		milli += t.GPU.MilliOn(&n.GPUs[i])
	}
	return g.pressure[id] * float64(milli)
}

// measure is the FGD fragmentation plus the free GPU share that the node's remaining CPU
// can no longer feed at the workload's CPU-per-GPU ratio.
func (g *GPUFit) measure(n *framework.Node) float64 {
	f := framework.NodeFragmentation(n, g.workload)
	if g.cpuPerGPU > 0 {
		free := float64(n.FreeGPUMilli())
		fed := float64(n.Allocatable.MilliCPU-n.Used.MilliCPU) / g.cpuPerGPU
		if g.memPerGPU > 0 {
			fed = min(fed, float64(n.Allocatable.Memory-n.Used.Memory)/g.memPerGPU)
		}
		if free > fed {
			f += g.CPUStrandWeight * (free - fed)
		}
	}
	return f
}

// packing is in [0, 1): higher when the node has less GPU (or, without GPUs, CPU) free.
func packing(n *framework.Node) float64 {
	nodeFree := 0.0
	if len(n.GPUs) > 0 {
		nodeFree = float64(n.FreeGPUMilli()) / float64(len(n.GPUs)*framework.MilliPerGPU)
	} else if n.Allocatable.MilliCPU > 0 {
		nodeFree = float64(n.Allocatable.MilliCPU-n.Used.MilliCPU) / float64(n.Allocatable.MilliCPU)
	}
	return 0.99 * (1 - nodeFree)
}
