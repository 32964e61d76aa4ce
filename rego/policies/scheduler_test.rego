package tessera.scheduler_test

import data.tessera.lib
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

test_claim_pod_gets_tessera if {
	scheduler.mutate.schedulerName == "tessera" with input as {"kind": "Pod", "workload": {"podRequests": {"cpu": 1}, "claimRequests": {"tessera.dev/gpu-memory": 10240}}}
}

test_claim_pod_may_tolerate_gpu_taint if {
	count(scheduler.deny) == 0 with input as {"kind": "Pod", "workload": {"schedulerName": "tessera", "claimRequests": {"tessera.dev/gpu": 1}, "tolerations": [{"key": "tessera.dev/gpu", "operator": "Exists"}]}}
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

gpu_nodes := {"gpuNodes": {"gpu-node-7": true}}

cpu_pod(w) := {"kind": "Pod", "workload": object.union({"podRequests": {"cpu": 1}}, w), "cluster": gpu_nodes}

test_cpu_pod_node_name_on_gpu_node_denied if {
	msgs := scheduler.deny with input as cpu_pod({"nodeName": "gpu-node-7"})
	some msg in msgs
	contains(msg, `spec.nodeName "gpu-node-7" is a GPU node`)
	contains(msg, "remove spec.nodeName")
	count(scheduler.deny) == 1 with input as object.union(cpu_pod({"nodeName": "gpu-node-7"}), {"kind": "Job"})
	count(scheduler.deny) == 0 with input as cpu_pod({"nodeName": "cpu-node-1"})
	count(scheduler.deny) == 0 with input as object.union(cpu_pod({"nodeName": "gpu-node-7"}), {"user": {"username": "system:node:gpu-node-7", "groups": ["system:nodes"]}})
}

test_cpu_pod_tolerating_gpu_taint_denied if {
	msgs := scheduler.deny with input as cpu_pod({"tolerations": [
		{"key": "example.com/spot", "operator": "Exists", "value": "", "effect": "NoSchedule"},
		{"key": "nvidia.com/gpu", "operator": "Exists", "value": "", "effect": "NoSchedule"},
	]})
	some msg in msgs
	contains(msg, "spec.tolerations[1] tolerates the GPU nodes' taint nvidia.com/gpu")
	count(scheduler.deny) == 1 with input as cpu_pod({"tolerations": [{"key": "tessera.dev/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]})
}

test_cpu_pod_tolerating_everything_denied if {
	msgs := scheduler.deny with input as cpu_pod({"tolerations": [{"key": "", "operator": "Exists", "value": "", "effect": ""}]})
	some msg in msgs
	contains(msg, "spec.tolerations[0] tolerates every taint, the GPU nodes' among them (nvidia.com/gpu, tessera.dev/gpu)")
	count(scheduler.deny) == 0 with input as cpu_pod({"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "value": "", "effect": "NoExecute"}]})
}

test_gpu_pod_and_daemonset_may_tolerate_gpu_taint if {
	tol := {"tolerations": [{"key": "", "operator": "Exists", "value": "", "effect": ""}]}
	count(scheduler.deny) == 0 with input as gpu_pod(tol)
	ds := object.union(cpu_pod(tol), {"user": {"username": "system:serviceaccount:kube-system:daemon-set-controller", "groups": []}})
	count(scheduler.deny) == 0 with input as ds
}

aliased := {"settings": {"allowedSchedulers": ["batch-scheduler"], "schedulerNameAliases": ["volcano"]}}

# An alias of tessera becomes tessera on every workload, GPU or not, and makes it one
# Tessera manages.
test_alias_rewritten if {
	scheduler.mutate.schedulerName == "tessera" with input as object.union(gpu_pod({"schedulerName": "volcano"}), {"cluster": aliased})
	cpu := object.union(cpu_pod({"schedulerName": "volcano"}), {"cluster": aliased})
	scheduler.mutate.schedulerName == "tessera" with input as cpu
	lib.managed with input as cpu
	count(scheduler.deny) == 0 with input as object.union(gpu_pod({"schedulerName": "volcano"}), {"cluster": aliased})
	not scheduler.mutate.schedulerName with input as object.union(cpu_pod({"schedulerName": "batch-scheduler"}), {"cluster": aliased})
}

test_alias_rewritten_on_custom_workloads if {
	ray := {"kind": "RayCluster", "workload": {"schedulerName": "volcano", "gangRequests": {"nvidia.com/gpu": 8}}, "cluster": aliased}
	scheduler.mutate.schedulerName == "tessera" with input as ray
	count(scheduler.deny) == 0 with input as ray
}

# A gang mode's scheduler that is neither an alias nor allowed: a GPU workload is
# denied, a managed one without GPUs warned, each with the two settings to choose from.
test_gang_mode_scheduler_not_configured if {
	msgs := scheduler.deny with input as object.union(gpu_pod({"schedulerName": "scheduler-plugins-scheduler"}), {"cluster": aliased})
	some msg in msgs
	contains(msg, `spec.schedulerName "scheduler-plugins-scheduler"`)
	contains(msg, "coscheduling plugin")
	contains(msg, "webhook.schedulerNameAliases (--scheduler-name-alias)")
	contains(msg, "webhook.allowedSchedulers (--allowed-scheduler)")

	managed_cpu := object.union(cpu_pod({"schedulerName": "scheduler-plugins-scheduler"}), {"cluster": aliased, "namespace": {"annotations": {"tessera.dev/queue": "train"}}})
	warnings := scheduler.warn with input as managed_cpu
	some w in warnings
	contains(w, `spec.schedulerName "scheduler-plugins-scheduler": the pods wait for that scheduler, not tessera`)
	contains(w, "webhook.schedulerNameAliases")
	count(scheduler.deny) == 0 with input as managed_cpu
	not scheduler.mutate.schedulerName with input as managed_cpu

	unmanaged_cpu := object.union(cpu_pod({"schedulerName": "scheduler-plugins-scheduler"}), {"cluster": aliased})
	count(scheduler.warn) == 0 with input as unmanaged_cpu
}

# Other schedulers' messages name no gang mode; an allowed gang-mode scheduler is quiet.
test_gang_mode_scheduler_allowed_or_other if {
	msgs := scheduler.deny with input as gpu_pod({"schedulerName": "my-scheduler"})
	some msg in msgs
	not contains(msg, "schedulerNameAliases")
	allowed := object.union(cpu_pod({"schedulerName": "volcano", "queue": "train"}), {"cluster": settings})
	count(scheduler.warn) == 0 with input as allowed
	count(scheduler.deny) == 0 with input as object.union(gpu_pod({"schedulerName": "volcano"}), {"cluster": settings})
}

test_custom_workload_scheduler_checked if {
	js := {"kind": "JobSet", "workload": {"schedulerName": "my-scheduler", "gangRequests": {"nvidia.com/gpu": 8}}}
	count(scheduler.deny) == 1 with input as js
	scheduler.mutate.schedulerName == "tessera" with input as {"kind": "JobSet", "workload": {"gangRequests": {"nvidia.com/gpu": 8}}}
}
