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

cheap := {"queues": {"cheap": {"allowedPriorityClasses": ["offline-low", "batch-normal"]}, "any": {}}}

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
	count(queue.deny) == 0 with input as in_cheap({"queue": "any", "priorityClassName": "production-high"})
}
