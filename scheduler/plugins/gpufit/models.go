package gpufit

import (
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// modelDemand is the part of the workload's GPU demand that only some GPU models serve.
type modelDemand struct {
	models []string
	// share is the part of the workload's GPU demand, in [0, 1].
	share float64
}

// constrainedDemand groups the workload's model-constrained GPU demand by allowed models.
func constrainedDemand(w framework.Workload, refMemoryMiB int64) []modelDemand {
	var total float64
	var out []modelDemand
	for i := range w {
		m := &w[i]
		d := m.P * float64(m.GPU.NominalMilli(refMemoryMiB))
		total += d
		if d == 0 || len(m.GPU.Models) == 0 {
			continue
		}
		k := slices.IndexFunc(out, func(o modelDemand) bool { return slices.Equal(o.models, m.GPU.Models) })
		if k < 0 {
			out = append(out, modelDemand{models: m.GPU.Models})
			k = len(out) - 1
		}
		out[k].share += d
	}
	for i := range out {
		out[i].share /= total
	}
	return out
}

// modelFree is the free GPU share per GPU model, kept up to date from the nodes whose
// allocation changed since the last session.
type modelFree struct {
	nodes   []*framework.Node
	ids     map[string]int
	byModel []float64 // per model id
	// per node index: model id (-1 for none), version and free share last counted
	model   []int
	version []uint64
	free    []float64
}

// update counts the session's nodes, from scratch when the node list is another.
func (f *modelFree) update(nodes []*framework.Node) {
	if len(nodes) != len(f.nodes) || len(nodes) > 0 && &nodes[0] != &f.nodes[0] {
		*f = modelFree{nodes: nodes, ids: map[string]int{}}
		for _, n := range nodes {
			for len(f.model) <= n.Index {
				f.model, f.version, f.free = append(f.model, -1), append(f.version, 0), append(f.free, 0)
			}
			if n.Unschedulable || n.GPUModel == "" {
				continue
			}
			id, ok := f.ids[n.GPUModel]
			if !ok {
				id = len(f.ids)
				f.ids[n.GPUModel] = id
				f.byModel = append(f.byModel, 0)
			}
			f.model[n.Index], f.version[n.Index] = id, n.Version-1
		}
	}
	for _, n := range nodes {
		if id := f.model[n.Index]; id >= 0 && f.version[n.Index] != n.Version {
			free := float64(n.FreeGPUMilli())
			f.byModel[id] += free - f.free[n.Index]
			f.free[n.Index], f.version[n.Index] = free, n.Version
		}
	}
}

// modelPressure is, per GPU model id of f, the part of its free GPU share that the
// workload's model-constrained demand is expected to need: as much demand as the
// cluster has free GPU share arrives, each constrained part spread over its models by
// their free share. A placement that takes x milli of model m from pods that could run
// elsewhere strands about x * pressure[m] of the constrained demand, which then finds
// no GPU.
func modelPressure(f *modelFree, demand []modelDemand, pressure []float64) []float64 {
	pressure = append(pressure[:0], make([]float64, len(f.byModel))...)
	var total float64
	for _, free := range f.byModel {
		total += free
	}
	for _, d := range demand {
		var avail float64
		for _, m := range d.models {
			if id, ok := f.ids[m]; ok {
				avail += f.byModel[id]
			}
		}
		if avail <= 0 {
			continue
		}
		for _, m := range d.models {
			if id, ok := f.ids[m]; ok {
				pressure[id] = min(pressure[id]+total*d.share/avail, 1)
			}
		}
	}
	return pressure
}
