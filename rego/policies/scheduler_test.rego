package tessera.scheduler_test

import data.tessera.scheduler

test_gpu_pod_gets_tessera if {
	scheduler.mutate.schedulerName == "tessera" with input as {"kind": "Pod", "workload": {"podRequests": {"tessera.dev/gpu-memory": 4096}}}
}

test_default_scheduler_replaced if {
	scheduler.mutate.schedulerName == "tessera" with input as {"kind": "Job", "workload": {"schedulerName": "default-scheduler", "podRequests": {"nvidia.com/gpu": 2}}}
}

test_idempotent_and_other_schedulers_kept if {
	not scheduler.mutate.schedulerName with input as {"kind": "Pod", "workload": {"schedulerName": "tessera", "podRequests": {"nvidia.com/gpu": 1}}}
	not scheduler.mutate.schedulerName with input as {"kind": "Pod", "workload": {"schedulerName": "volcano", "podRequests": {"nvidia.com/gpu": 1}}}
}

test_cpu_pod_untouched if {
	not scheduler.mutate.schedulerName with input as {"kind": "Pod", "workload": {"podRequests": {"cpu": 4}}}
}

gpu_pod(w) := {"kind": "Pod", "workload": object.union({"podRequests": {"tessera.dev/gpu": 1}}, w)}

settings := {"settings": {"schedulerUsers": ["system:serviceaccount:tessera-system:tessera-scheduler"], "allowedSchedulers": ["volcano"]}}

test_other_scheduler_denied if {
	msgs := scheduler.deny with input as object.union(gpu_pod({"schedulerName": "my-scheduler"}), {"cluster": settings})
	some msg in msgs
	contains(msg, `spec.schedulerName "my-scheduler"`)
	contains(msg, "set it to tessera")
	contains(msg, "[tessera, volcano]")
}

test_other_scheduler_denied_without_settings if {
	msgs := scheduler.deny with input as gpu_pod({"schedulerName": "volcano"})
	some msg in msgs
	contains(msg, "[tessera]")
}

test_allowed_schedulers_admitted if {
	count(scheduler.deny) == 0 with input as object.union(gpu_pod({"schedulerName": "volcano"}), {"cluster": settings})
	count(scheduler.deny) == 0 with input as gpu_pod({"schedulerName": "tessera"})
	count(scheduler.deny) == 0 with input as gpu_pod({"schedulerName": "default-scheduler"})
	count(scheduler.deny) == 0 with input as gpu_pod({})
}

test_cpu_pod_keeps_any_scheduler if {
	count(scheduler.deny) == 0 with input as {"kind": "Pod", "workload": {"schedulerName": "my-scheduler", "nodeName": "n1", "podRequests": {"cpu": 1}}}
}

test_job_template_checked if {
	msgs := scheduler.deny with input as {"kind": "Job", "workload": {"schedulerName": "my-scheduler", "podRequests": {"nvidia.com/gpu": 1}}}
	count(msgs) == 1
}

test_node_name_preset_denied if {
	msgs := scheduler.deny with input as gpu_pod({"nodeName": "gpu-node-7"})
	some msg in msgs
	contains(msg, `spec.nodeName is preset to "gpu-node-7"`)
	contains(msg, "let the tessera scheduler place it")
}

test_scheduler_identity_exempt if {
	inp := object.union(gpu_pod({"nodeName": "n1", "schedulerName": "my-scheduler"}), {
		"cluster": settings,
		"user": {"username": "system:serviceaccount:tessera-system:tessera-scheduler", "groups": []},
	})
	count(scheduler.deny) == 0 with input as inp
	tenant := json.patch(inp, [{"op": "replace", "path": "/user/username", "value": "system:serviceaccount:team:tenant"}])
	count(scheduler.deny) == 2 with input as tenant
}

test_mirror_pods_of_nodes_exempt if {
	inp := object.union(gpu_pod({"nodeName": "n1"}), {"user": {"username": "system:node:n1", "groups": ["system:nodes", "system:authenticated"]}})
	count(scheduler.deny) == 0 with input as inp
}
