package tessera.queues_test

import data.tessera.queues

cluster := {
	"capacity": {"tessera.dev/gpu": 16},
	"queues": {"a": {"deserved": {"tessera.dev/gpu": 8}}, "b": {"deserved": {"tessera.dev/gpu": 6}}},
}

test_deserved_over_capability_denied if {
	inp := {"kind": "Queue", "workload": {"name": "c", "deserved": {"tessera.dev/gpu": 8}, "capability": {"tessera.dev/gpu": 4}}, "cluster": cluster}
	msgs := queues.deny with input as inp
	some msg in msgs
	contains(msg, "spec.deserved[tessera.dev/gpu] = 8 exceeds spec.capability[tessera.dev/gpu] = 4")
}

test_sum_of_deserved_warns if {
	inp := {"kind": "Queue", "workload": {"name": "c", "deserved": {"tessera.dev/gpu": 4}}, "cluster": cluster}
	msgs := queues.warn with input as inp
	some msg in msgs
	contains(msg, "deserve 18 tessera.dev/gpu but the cluster has 16")
}

test_update_replaces_own_share if {
	inp := {"kind": "Queue", "workload": {"name": "a", "deserved": {"tessera.dev/gpu": 10}}, "cluster": cluster}
	count(queues.warn) == 0 with input as inp
	count(queues.deny) == 0 with input as inp
}

test_invalid_namespace_selector_denied if {
	inp := {"kind": "Queue", "workload": {"name": "c", "namespaceSelectorError": "key: Invalid value: \"bad key\""}, "cluster": cluster}
	msgs := queues.deny with input as inp
	some msg in msgs
	contains(msg, "spec.namespaceSelector is invalid")
	contains(msg, "bad key")
}

test_default_class_outside_allowed_denied if {
	w := {"name": "c", "annotations": {"tessera.dev/priority-class": "production-high"}, "allowedPriorityClasses": ["batch-normal", "offline-low"]}
	msgs := queues.deny with input as {"kind": "Queue", "workload": w, "cluster": cluster}
	some msg in msgs
	contains(msg, `annotation tessera.dev/priority-class "production-high"`)
	contains(msg, "[batch-normal, offline-low]")
	ok := json.patch(w, [{"op": "replace", "path": "/annotations/tessera.dev~1priority-class", "value": "offline-low"}])
	count(queues.deny) == 0 with input as {"kind": "Queue", "workload": ok, "cluster": cluster}
}

test_unknown_allowed_class_warns if {
	inp := {"kind": "Queue", "workload": {"name": "c", "allowedPriorityClasses": ["offline-low", "nope"]}, "cluster": object.union(cluster, {"priorityClasses": {"offline-low": 0}})}
	msgs := queues.warn with input as inp
	count(msgs) == 1
	some msg in msgs
	contains(msg, `"nope"`)
}

test_default_class_without_allowed_classes_warns if {
	w := {"name": "c", "annotations": {"tessera.dev/priority-class": "production-high"}}
	msgs := queues.warn with input as {"kind": "Queue", "workload": w, "cluster": cluster}
	some msg in msgs
	contains(msg, `annotation tessera.dev/priority-class "production-high"`)
	contains(msg, "has no effect")
	count(queues.warn) == 0 with input as {"kind": "Queue", "workload": w, "cluster": object.union(cluster, {"defaultPriorityClass": "production-high"})}
}
