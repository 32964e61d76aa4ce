package tessera.queue_test

import data.tessera.lib
import data.tessera.queue

cluster := {"queues": {"train": {}, "infer": {}, "ns-queue": {}}}

gpu_pod(extra) := object.union({
	"kind": "Pod",
	"namespace": {"name": "team", "annotations": {}},
	"workload": {"podRequests": {"nvidia.com/gpu": 1}},
	"cluster": cluster,
}, extra)

test_label_wins_over_namespace if {
	inp := gpu_pod({"workload": {"queue": "train", "podRequests": {"nvidia.com/gpu": 1}}, "namespace": {"annotations": {"tessera.dev/queue": "ns-queue"}}})
	queue.resolved == "train" with input as inp
	not queue.mutate.queue with input as inp
}

test_namespace_annotation if {
	inp := gpu_pod({"namespace": {"annotations": {"tessera.dev/queue": "ns-queue"}}})
	queue.mutate.queue == "ns-queue" with input as inp
}

test_volcano_then_kueue if {
	v := gpu_pod({"workload": {"annotations": {"scheduling.volcano.sh/queue-name": "train"}, "labels": {"kueue.x-k8s.io/queue-name": "infer"}, "podRequests": {}}})
	queue.mutate.queue == "train" with input as v
	k := gpu_pod({"workload": {"labels": {"kueue.x-k8s.io/queue-name": "infer"}, "podRequests": {}}})
	queue.mutate.queue == "infer" with input as k
}

test_default_queue if {
	queue.mutate.queue == "default" with input as gpu_pod({})
	count(queue.deny) == 0 with input as gpu_pod({})
}

test_unmanaged_pod_untouched if {
	inp := {"kind": "Pod", "namespace": {"annotations": {}}, "workload": {"podRequests": {"cpu": 1}}, "cluster": cluster}
	not queue.mutate.queue with input as inp
}

test_unknown_queue_denied if {
	inp := gpu_pod({"workload": {"queue": "nope", "podRequests": {"nvidia.com/gpu": 1}}})
	msgs := queue.deny with input as inp
	some msg in msgs
	contains(msg, `queue "nope" does not exist`)
	contains(msg, "infer, ns-queue, train")
}

restricted := {"queues": {
	"team-a": {"namespaceSelector": {"matchLabels": {"team": "a"}, "matchExpressions": []}},
	"by-name": {"namespaceSelector": {"matchLabels": {}, "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team", "other"]}]}},
	"not-scratch": {"namespaceSelector": {"matchLabels": {}, "matchExpressions": [{"key": "scratch", "operator": "DoesNotExist", "values": []}]}},
	"broken": {"namespaceSelector": {"matchLabels": {}, "matchExpressions": []}, "namespaceSelectorError": "values: Invalid value"},
	"open": {},
}}

in_ns(q, labels) := {
	"kind": "Pod",
	"namespace": {"name": "team", "labels": labels, "annotations": {}},
	"workload": {"queue": q, "podRequests": {"nvidia.com/gpu": 1}},
	"cluster": restricted,
}

test_namespace_selector_admits_selected if {
	count(queue.deny) == 0 with input as in_ns("team-a", {"team": "a"})
	count(queue.deny) == 0 with input as in_ns("by-name", {})
	count(queue.deny) == 0 with input as in_ns("not-scratch", {"team": "b"})
	count(queue.deny) == 0 with input as in_ns("open", {"team": "b"})
}

test_namespace_selector_denies_others if {
	msgs := queue.deny with input as in_ns("team-a", {"team": "b"})
	some msg in msgs
	contains(msg, `queue "team-a" does not take workloads from namespace "team"`)
	contains(msg, "spec.namespaceSelector")
	contains(msg, "[by-name, not-scratch, open]")
	count(queue.deny) == 1 with input as in_ns("not-scratch", {"scratch": ""})
}

test_team_namespace_may_not_use_default if {
	teams := {"queues": {"default": {}, "team-a": restricted.queues["team-a"], "open": {}}}
	named := json.patch(in_ns("default", {"team": "a"}), [{"op": "replace", "path": "/cluster", "value": teams}])
	msgs := queue.deny with input as named
	count(msgs) == 1
	some msg in msgs
	contains(msg, `namespace "team" belongs to queue(s) [team-a]`)
	contains(msg, "spec.capability")
	implied := json.patch(named, [{"op": "replace", "path": "/workload/queue", "value": ""}])
	queue.mutate.queue == "team-a" with input as implied
	count(queue.deny) == 0 with input as implied
	two := json.patch(implied, [{"op": "add", "path": "/cluster/queues/team-a2", "value": restricted.queues["team-a"]}])
	count(queue.deny) == 1 with input as two
	count(queue.deny) == 0 with input as json.patch(named, [{"op": "replace", "path": "/namespace/labels", "value": {"team": "b"}}])
	count(queue.deny) == 0 with input as json.patch(named, [{"op": "replace", "path": "/workload/queue", "value": "team-a"}])
	cpu := json.patch(two, [{"op": "replace", "path": "/workload/podRequests", "value": {"cpu": 1}}])
	count(queue.deny) == 0 with input as cpu
}

test_invalid_namespace_selector_takes_nobody if {
	msgs := queue.deny with input as in_ns("broken", {"team": "a"})
	count(msgs) == 1
	some msg in msgs
	contains(msg, `queue "broken" has an invalid spec.namespaceSelector`)
}

test_not_in_selects_namespaces_without_the_key if {
	sel := {"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["scratch"]}]}
	lib.selector_matches(sel, {"team": "a"})
	lib.selector_matches(sel, {"team": "a", "tier": "prod"})
	not lib.selector_matches(sel, {"team": "a", "tier": "scratch"})
	not lib.selector_matches(sel, {"team": "b"})
	lib.selector_matches({}, {})
	lib.selector_matches({"matchExpressions": [{"key": "x", "operator": "Exists", "values": []}]}, {"x": ""})
	not lib.selector_matches({"matchExpressions": [{"key": "x", "operator": "In", "values": ["1"]}]}, {})
}

cheap := {"queues": {"cheap": {"allowedPriorityClasses": ["offline-low", "batch-normal"]}, "unlisted": {}}}

in_cheap(w) := {
	"kind": "Pod",
	"namespace": {"name": "team", "annotations": {}},
	"workload": object.union({"queue": "cheap", "podRequests": {"nvidia.com/gpu": 1}}, w),
	"cluster": cheap,
}

test_class_outside_queue_list_denied if {
	msgs := queue.deny with input as in_cheap({"priorityClassName": "production-high"})
	some msg in msgs
	contains(msg, `priorityClassName "production-high" is not allowed in queue "cheap"`)
	contains(msg, "[offline-low, batch-normal]")
	msgs2 := queue.deny with input as {"kind": "PodGroup", "namespace": {"name": "team"}, "workload": {"queue": "cheap", "priorityClassName": "production-high"}, "cluster": cheap}
	count(msgs2) == 1
}

test_class_in_queue_list_allowed if {
	count(queue.deny) == 0 with input as in_cheap({"priorityClassName": "offline-low"})
	count(queue.deny) == 0 with input as in_cheap({})
}

test_queue_without_list_takes_the_cluster_default_only if {
	msgs := queue.deny with input as in_cheap({"queue": "unlisted", "priorityClassName": "batch-normal"})
	some msg in msgs
	contains(msg, `priorityClassName "batch-normal" is not allowed in queue "unlisted"`)
	contains(msg, "it lists no spec.allowedPriorityClasses, so it takes only workloads without a priorityClassName")
	count(queue.deny) == 0 with input as in_cheap({"queue": "unlisted"})
	global := json.patch(in_cheap({"queue": "unlisted", "priorityClassName": "cluster-normal"}), [{"op": "add", "path": "/cluster/defaultPriorityClass", "value": "cluster-normal"}])
	count(queue.deny) == 0 with input as global
	msgs2 := queue.deny with input as json.patch(global, [{"op": "replace", "path": "/workload/priorityClassName", "value": "production-high"}])
	some msg2 in msgs2
	contains(msg2, `so it takes only the cluster's default class "cluster-normal"`)
}

# A pod that asks for no GPU and names no queue is in the default queue: its class is
# checked all the same (it would preempt through kube-scheduler), except the cluster's
# default class, which the API server gives it.
test_cpu_pod_class_checked if {
	cpu := {"kind": "Pod", "namespace": {"name": "team", "annotations": {}}, "workload": {"podRequests": {"cpu": 1}, "priorityClassName": "production-high"}, "cluster": cheap}
	msgs := queue.deny with input as cpu
	some msg in msgs
	contains(msg, `priorityClassName "production-high" is not allowed in queue "default"`)
	count(queue.deny) == 0 with input as json.patch(cpu, [{"op": "remove", "path": "/workload/priorityClassName"}])
	listed := json.patch(cpu, [{"op": "add", "path": "/cluster/queues/default", "value": {"allowedPriorityClasses": ["batch-normal"]}}])
	count(queue.deny) == 1 with input as listed
	global := json.patch(listed, [{"op": "add", "path": "/cluster/defaultPriorityClass", "value": "production-high"}])
	count(queue.deny) == 0 with input as global
	gpu := json.patch(global, [{"op": "replace", "path": "/workload/podRequests", "value": {"nvidia.com/gpu": 1}}])
	count(queue.deny) == 1 with input as gpu
}

# Platform software the cluster already runs: the GPU Operator's DaemonSet pods at
# system-node-critical, created by the DaemonSet controller in namespace gpu-operator,
# are admitted without any label; a tenant's CPU pod naming the same class, or a class
# its queue leaves out, is still refused.
daemon_set_controller := {"username": "system:serviceaccount:kube-system:daemon-set-controller", "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]}

platform_pod(ns, class, user) := {
	"kind": "Pod",
	"operation": "CREATE",
	"namespace": {"name": ns, "labels": {}, "annotations": {}},
	"workload": {"podRequests": {"cpu": 0.1}, "priorityClassName": class, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "value": "", "effect": "NoSchedule"}]},
	"user": user,
	"cluster": cheap,
}

test_daemonset_pod_system_class_admitted if {
	count(queue.deny) == 0 with input as platform_pod("gpu-operator", "system-node-critical", daemon_set_controller)
	count(queue.deny) == 0 with input as platform_pod("gpu-operator", "system-cluster-critical", daemon_set_controller)
	# A DaemonSet's pods get the built-in classes, not any class.
	count(queue.deny) == 1 with input as platform_pod("gpu-operator", "production-high", daemon_set_controller)
}

test_tenant_cpu_pod_system_class_denied if {
	tenant := {"username": "system:serviceaccount:team:tenant", "groups": ["system:serviceaccounts"]}
	msgs := queue.deny with input as platform_pod("team", "system-node-critical", tenant)
	some msg in msgs
	contains(msg, `priorityClassName "system-node-critical" is not allowed in queue "default"`)
	count(queue.deny) == 1 with input as platform_pod("team", "production-high", tenant)
	# Without a user (a dry-run input, a replay) nothing is exempt.
	count(queue.deny) == 1 with input as json.patch(platform_pod("team", "system-node-critical", tenant), [{"op": "remove", "path": "/user"}])
}

# A GPU workload of the DaemonSet controller is Tessera's: its class is its queue's.
test_daemonset_gpu_pod_class_checked if {
	gpu := json.patch(platform_pod("gpu-operator", "system-node-critical", daemon_set_controller), [{"op": "replace", "path": "/workload/podRequests", "value": {"nvidia.com/gpu": 1}}])
	count(queue.deny) == 1 with input as gpu
}

# The namespace label tessera.dev/platform: "true" lets workloads Tessera does not manage
# carry any class there; the label's value must be "true", and it changes nothing for
# workloads Tessera manages: GPU workloads, those naming a queue, those of a namespace
# with a default queue.
test_platform_namespace_label if {
	tenant := {"username": "system:serviceaccount:monitoring:prometheus-operator", "groups": []}
	mon := json.patch(platform_pod("monitoring", "system-cluster-critical", tenant), [{"op": "add", "path": "/namespace/labels", "value": {"tessera.dev/platform": "true"}}])
	count(queue.deny) == 0 with input as mon
	count(queue.deny) == 0 with input as json.patch(mon, [{"op": "replace", "path": "/workload/priorityClassName", "value": "production-high"}])
	job := json.patch(mon, [{"op": "replace", "path": "/kind", "value": "Job"}])
	count(queue.deny) == 0 with input as job

	count(queue.deny) == 1 with input as json.patch(mon, [{"op": "replace", "path": "/namespace/labels", "value": {"tessera.dev/platform": "yes"}}])
	count(queue.deny) == 1 with input as json.patch(mon, [{"op": "replace", "path": "/namespace/labels", "value": {}}, {"op": "add", "path": "/namespace/annotations", "value": {"tessera.dev/platform": "true"}}])
	count(queue.deny) == 1 with input as json.patch(mon, [{"op": "replace", "path": "/workload/podRequests", "value": {"nvidia.com/gpu": 1}}])
	count(queue.deny) == 1 with input as json.patch(mon, [{"op": "add", "path": "/workload/queue", "value": "cheap"}])
	count(queue.deny) == 1 with input as json.patch(mon, [{"op": "add", "path": "/namespace/annotations", "value": {"tessera.dev/queue": "cheap"}}])
	count(queue.deny) == 1 with input as json.patch(mon, [{"op": "add", "path": "/workload/schedulerName", "value": "tessera"}])
}

# A Queue named default replaces the implicit one: its classes apply to every workload
# that names no queue, its namespaceSelector to the managed ones.
test_default_queue_object if {
	c := {"queues": {"default": {"allowedPriorityClasses": ["batch-normal", "offline-low"], "namespaceSelector": {"matchLabels": {"team": "a"}, "matchExpressions": []}}}}
	cpu := {"kind": "Pod", "namespace": {"name": "team", "labels": {"team": "b"}, "annotations": {}}, "workload": {"podRequests": {"cpu": 1}, "priorityClassName": "offline-low"}, "cluster": c}
	count(queue.deny) == 0 with input as cpu
	count(queue.deny) == 1 with input as json.patch(cpu, [{"op": "replace", "path": "/workload/priorityClassName", "value": "production-high"}])
	gpu := json.patch(cpu, [{"op": "replace", "path": "/workload/podRequests", "value": {"nvidia.com/gpu": 1}}])
	msgs := queue.deny with input as gpu
	some msg in msgs
	contains(msg, `queue "default" does not take workloads from namespace "team"`)
}

# A custom workload's class is checked in every pod template.
test_template_classes_checked if {
	js := {
		"kind": "JobSet",
		"namespace": {"name": "team", "annotations": {}},
		"workload": {"queue": "cheap", "gangRequests": {"nvidia.com/gpu": 8}, "priorityClassName": "offline-low", "templates": [
			{"path": "spec.replicatedJobs[0].template.spec.template", "priorityClassName": "offline-low"},
			{"path": "spec.replicatedJobs[1].template.spec.template", "priorityClassName": "production-high"},
		]},
		"cluster": cheap,
	}
	msgs := queue.deny with input as js
	count(msgs) == 1
	some msg in msgs
	contains(msg, `priorityClassName "production-high" is not allowed in queue "cheap"`)
	count(queue.deny) == 0 with input as json.patch(js, [{"op": "replace", "path": "/workload/templates/1/priorityClassName", "value": "batch-normal"}])
}

test_custom_workload_gets_namespace_queue if {
	js := {"kind": "RayCluster", "namespace": {"name": "team", "annotations": {"tessera.dev/queue": "ns-queue"}}, "workload": {"gangRequests": {"nvidia.com/gpu": 8}}, "cluster": cluster}
	queue.mutate.queue == "ns-queue" with input as js
}
