# GPU requests: rewrite nvidia.com/gpu into tessera.dev/gpu for namespaces annotated
# tessera.dev/rewrite-nvidia-gpu: "true"; deny GPU memory larger than the largest GPU
# in the cluster; warn on GPU requests without limits, and on a whole GPU asked in a queue
# whose right-sizing mode is Recommend where the workload's runs fit in a slice.
package tessera.gpu

import data.tessera.lib

mutate.gpuRewrite := true if {
	lib.namespace_annotation("tessera.dev/rewrite-nvidia-gpu") == "true"
	some c in object.get(input.workload, "containers", [])
	some list in [object.get(c, "requests", {}), object.get(c, "limits", {})]
	list["nvidia.com/gpu"] > 0
}

deny contains msg if {
	largest := object.get(input.cluster, "maxGPUMemoryMiB", 0)
	largest > 0
	some c in object.get(input.workload, "containers", [])
	mem := object.get(object.get(c, "requests", {}), "tessera.dev/gpu-memory", 0)
	mem > largest
	msg := sprintf("container %q requests %v MiB of tessera.dev/gpu-memory but the largest GPU in the cluster has %v MiB; request at most %v", [c.name, mem, largest, largest])
}

warn contains msg if {
	some c in object.get(input.workload, "containers", [])
	some r, v in object.get(c, "requests", {})
	lib.gpu_resource(r)
	v > 0
	not object.get(c, "limits", {})[r]
	msg := sprintf("container %q requests %s without a limit; set limits.%s to the same value", [c.name, r, r])
}

# input.recommendation: a GPU pod of a queue that right-sizes (Recommend or Auto). Auto
# turns the container's GPU into the slice itself; Recommend only tells.
warn contains msg if {
	r := input.recommendation
	r.mode == "Recommend"
	r.gpuMemoryMiB > 0
	some c in object.get(input.workload, "containers", [])
	some res in ["tessera.dev/gpu", "nvidia.com/gpu"]
	object.get(object.get(c, "requests", {}), res, 0) == 1
	msg := sprintf("container %q asks a whole GPU, but the runs of workload %s fit in %v MiB (%s); ask %v of tessera.dev/gpu-memory instead, or ask the operator to set queue %q's spec.gpuRightSizing.mode to Auto", [c.name, r.workload, r.gpuMemoryMiB, r.reason, r.gpuMemoryMiB, r.queue])
}
