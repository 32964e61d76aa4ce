package sim

import (
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// maxPodsPerNode is the pod capacity of simulated nodes; the trace does not limit pods.
const maxPodsPerNode = 1000

// buildNodes turns trace nodes into scheduler nodes, GPU-less nodes included.
func buildNodes(specs []trace.NodeSpec) []*framework.Node {
	nodes := make([]*framework.Node, len(specs))
	for i, s := range specs {
		n := &framework.Node{
			Name:        s.Name,
			Index:       i,
			Labels:      s.Labels,
			Allocatable: framework.Resources{MilliCPU: s.MilliCPU, Memory: s.MemoryMiB << 20, Pods: maxPodsPerNode, GPU: int64(s.GPUs) * framework.MilliPerGPU},
			GPUModel:    s.Model,
		}
		n.GPUs = make([]framework.GPU, s.GPUs)
		for g := range n.GPUs {
			n.GPUs[g] = framework.GPU{Index: g, UUID: framework.DerivedGPUUUID(s.Name, g), Model: s.Model, MemoryMiB: s.GPUMemoryMiB,
				Island: g / 4, NUMA: g * 2 / max(s.GPUs, 1), Healthy: true}
		}
		n.Refresh()
		nodes[i] = n
	}
	return nodes
}

// gpuRequest is a trace pod's GPU ask: whole GPUs, or a share of one (a whole GPU when
// the profile cannot share GPUs).
func gpuRequest(p *trace.PodSpec, wholeGPUs bool) framework.GPURequest {
	r := framework.GPURequest{Models: p.GPUModels}
	switch {
	case p.NumGPU == 0:
	case p.IsShare() && !wholeGPUs:
		r.Milli = p.GPUMilli
	default:
		r.Count = p.NumGPU
	}
	return r
}

// podJob wraps one trace pod as a job of one task.
func podJob(p *trace.PodSpec, wholeGPUs bool) *framework.Job {
	j := &framework.Job{Name: p.Name, Namespace: "trace", UID: p.Name, MinMember: 1, Inqueue: true}
	t := &framework.Task{Name: p.Name, Namespace: "trace", UID: p.Name, Job: j, Container: "main",
		Request: framework.Resources{MilliCPU: p.MilliCPU, Memory: p.MemoryMiB << 20, Pods: 1},
		GPU:     gpuRequest(p, wholeGPUs), Preemptible: true}
	j.Tasks = []*framework.Task{t}
	return j
}

// workload turns the trace's typical shapes into the scheduler's workload.
func workload(shapes []trace.Shape, pods []trace.PodSpec) framework.Workload {
	type key struct {
		cpu, milli int64
		gpus       int
	}
	mem := map[key][2]int64{}
	for _, p := range pods {
		k := key{p.MilliCPU, p.GPUMilli, p.NumGPU}
		m := mem[k]
		mem[k] = [2]int64{m[0] + p.MemoryMiB, m[1] + 1}
	}
	w := make(framework.Workload, len(shapes))
	for i, s := range shapes {
		p := trace.PodSpec{NumGPU: s.NumGPU, GPUMilli: s.GPUMilli, GPUModels: s.Models()}
		w[i] = framework.PodShape{MilliCPU: s.MilliCPU, GPU: gpuRequest(&p, false), P: s.P}
		if m := mem[key{s.MilliCPU, s.GPUMilli, s.NumGPU}]; m[1] > 0 {
			w[i].Memory = m[0] / m[1] << 20
		}
	}
	return w
}
