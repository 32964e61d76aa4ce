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

// modelPressure is, per GPU model, the part of its free GPU share that the workload's
// model-constrained demand is expected to need: as much demand as the cluster has free
// GPU share arrives, each constrained part spread over its models by their free share.
// A placement that takes x milli of model m from pods that could run elsewhere strands
// about x x pressure[m] of the constrained demand, which then finds no GPU.
func modelPressure(nodes []*framework.Node, demand []modelDemand) map[string]float64 {
	if len(demand) == 0 {
		return nil
	}
	free := map[string]float64{}
	var total float64
	for _, n := range nodes {
		if n.Unschedulable || n.GPUModel == "" {
			continue
		}
		f := float64(n.FreeGPUMilli())
		free[n.GPUModel] += f
		total += f
	}
	p := map[string]float64{}
	for _, d := range demand {
		var avail float64
		for _, m := range d.models {
			avail += free[m]
		}
		if avail == 0 {
			continue
		}
		for _, m := range d.models {
			if free[m] > 0 {
				p[m] += total * d.share / avail
			}
		}
	}
	for m := range p {
		p[m] = min(p[m], 1)
	}
	return p
}
