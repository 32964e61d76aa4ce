package tessera.gpu_test

import data.tessera.gpu

pod(containers, ns) := {
	"kind": "Pod",
	"namespace": {"annotations": ns},
	"workload": {"containers": containers},
	"cluster": {"maxGPUMemoryMiB": 81920},
}

test_rewrite_only_when_opted_in if {
	c := [{"name": "main", "requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 2}}]
	gpu.mutate.gpuRewrite with input as pod(c, {"tessera.dev/rewrite-nvidia-gpu": "true"})
	not gpu.mutate.gpuRewrite with input as pod(c, {})
}

test_rewrite_idempotent if {
	c := [{"name": "main", "requests": {"tessera.dev/gpu": 2}, "limits": {"tessera.dev/gpu": 2}}]
	not gpu.mutate.gpuRewrite with input as pod(c, {"tessera.dev/rewrite-nvidia-gpu": "true"})
}

test_memory_larger_than_largest_gpu_denied if {
	c := [{"name": "main", "requests": {"tessera.dev/gpu-memory": 90000}, "limits": {"tessera.dev/gpu-memory": 90000}}]
	msgs := gpu.deny with input as pod(c, {})
	some msg in msgs
	contains(msg, "90000 MiB")
	contains(msg, "81920 MiB")
}

test_memory_that_fits_allowed if {
	c := [{"name": "main", "requests": {"tessera.dev/gpu-memory": 81920}, "limits": {"tessera.dev/gpu-memory": 81920}}]
	count(gpu.deny) == 0 with input as pod(c, {})
}

test_no_gpu_nodes_no_memory_check if {
	c := [{"name": "main", "requests": {"tessera.dev/gpu-memory": 90000}}]
	count(gpu.deny) == 0 with input as object.union(pod(c, {}), {"cluster": {"maxGPUMemoryMiB": 0}})
}

test_request_without_limit_warns if {
	c := [{"name": "main", "requests": {"nvidia.com/gpu": 1}}]
	msgs := gpu.warn with input as pod(c, {})
	some msg in msgs
	contains(msg, `container "main" requests nvidia.com/gpu without a limit`)
	count(gpu.warn) == 0 with input as pod([{"name": "main", "requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}], {})
}

recommended(mode, mib) := {"mode": mode, "queue": "train", "workload": "Job/resnet", "gpuMemoryMiB": mib, "runs": 12, "reason": "p95 of 12 runs' peaks"}

test_recommend_mode_warns_of_a_slice if {
	c := [{"name": "main", "requests": {"tessera.dev/gpu": 1}, "limits": {"tessera.dev/gpu": 1}}]
	msgs := gpu.warn with input as object.union(pod(c, {}), {"recommendation": recommended("Recommend", 20480)})
	some msg in msgs
	contains(msg, `container "main" asks a whole GPU, but the runs of workload Job/resnet fit in 20480 MiB`)
	contains(msg, `queue "train"`)
}

test_no_slice_warning_without_recommendation if {
	c := [{"name": "main", "requests": {"tessera.dev/gpu": 1}, "limits": {"tessera.dev/gpu": 1}}]
	count(gpu.warn) == 0 with input as object.union(pod(c, {}), {"recommendation": recommended("Recommend", 0)})
	count(gpu.warn) == 0 with input as object.union(pod(c, {}), {"recommendation": recommended("Auto", 20480)})
	count(gpu.warn) == 0 with input as pod(c, {})
	two := [{"name": "main", "requests": {"tessera.dev/gpu": 2}, "limits": {"tessera.dev/gpu": 2}}]
	count(gpu.warn) == 0 with input as object.union(pod(two, {}), {"recommendation": recommended("Recommend", 20480)})
}
