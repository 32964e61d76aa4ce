package snapshot

import (
	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Assignment encodes where a placed task's GPUs are as the tessera.dev/gpu-assignment
// annotation: the GPUs' UUIDs for the task's GPU container and, for a shared GPU, the
// slice's memory. It reports false for tasks placed without GPUs. The simulator and the
// scheduler daemon share it, so both write what the node agent's device plugin reads.
func Assignment(t *framework.Task, n *framework.Node, gpus framework.GPUSet) (tesserav1.GPUAssignment, bool) {
	if gpus == 0 || n == nil {
		return tesserav1.GPUAssignment{}, false
	}
	c := tesserav1.ContainerGPUs{Container: t.Container}
	for _, i := range gpus.Indices() {
		c.UUIDs = append(c.UUIDs, n.GPUs[i].UUID)
	}
	if t.GPU.Shared() {
		c.MemoryMiB = t.GPU.MemoryMiB
		if c.MemoryMiB == 0 { // a fractional share, as traces give: its part of the GPU's memory
			g := &n.GPUs[gpus.Indices()[0]]
			c.MemoryMiB = max(1, t.GPU.Milli*g.MemoryMiB/framework.MilliPerGPU)
		}
	}
	return tesserav1.GPUAssignment{Node: n.Name, Containers: []tesserav1.ContainerGPUs{c}}, true
}
