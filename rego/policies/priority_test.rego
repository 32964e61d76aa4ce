package tessera.priority_test

import data.tessera.priority

all_classes := ["batch-normal", "offline-low", "production-high"]

base := {
	"kind": "Pod",
	"namespace": {"annotations": {}},
	"workload": {"queue": "train", "podRequests": {"nvidia.com/gpu": 1}},
	"cluster": {
		"queues": {
			"train": {"allowedPriorityClasses": all_classes},
			"prod": {"priorityClassName": "production-high", "allowedPriorityClasses": all_classes},
			"unlisted": {},
		},
		"priorityClasses": {"production-high": 100, "batch-normal": 50, "offline-low": 0},
	},
}

test_default_batch_normal if {
	priority.mutate.priorityClassName == "batch-normal" with input as base
}

test_queue_default_wins if {
	inp := object.union(base, {"workload": {"queue": "prod", "podRequests": {"nvidia.com/gpu": 1}}, "namespace": {"annotations": {"tessera.dev/priority-class": "offline-low"}}})
	priority.mutate.priorityClassName == "production-high" with input as inp
}

test_namespace_default if {
	inp := object.union(base, {"namespace": {"annotations": {"tessera.dev/priority-class": "offline-low"}}})
	priority.mutate.priorityClassName == "offline-low" with input as inp
}

test_existing_class_kept if {
	inp := object.union(base, {"workload": {"queue": "train", "priorityClassName": "offline-low", "podRequests": {"nvidia.com/gpu": 1}}})
	not priority.mutate.priorityClassName with input as inp
}

test_missing_class_not_set if {
	inp := json.patch(base, [{"op": "replace", "path": "/cluster/priorityClasses", "value": {"production-high": 100}}])
	not priority.mutate.priorityClassName with input as inp
}

limited := json.patch(base, [{"op": "add", "path": "/cluster/queues/cheap", "value": {"allowedPriorityClasses": ["offline-low", "batch-normal"]}}])

in_cheap(w) := json.patch(limited, [{"op": "replace", "path": "/workload", "value": object.union({"queue": "cheap", "podRequests": {"nvidia.com/gpu": 1}}, w)}])

test_default_kept_when_allowed if {
	priority.mutate.priorityClassName == "batch-normal" with input as in_cheap({})
}

test_default_outside_list_gives_way if {
	inp := json.patch(in_cheap({}), [{"op": "replace", "path": "/cluster/queues/cheap/allowedPriorityClasses", "value": ["nope", "offline-low"]}])
	priority.mutate.priorityClassName == "offline-low" with input as inp
}

# A queue that lists no classes takes only the cluster's default class: the default
# is that one, or none.
test_unlisted_queue_gets_the_cluster_default_or_none if {
	inp := json.patch(base, [{"op": "replace", "path": "/workload/queue", "value": "unlisted"}])
	not priority.mutate.priorityClassName with input as inp
	global := json.patch(inp, [
		{"op": "add", "path": "/cluster/defaultPriorityClass", "value": "offline-low"},
		{"op": "add", "path": "/namespace/annotations/tessera.dev~1priority-class", "value": "production-high"},
	])
	priority.mutate.priorityClassName == "offline-low" with input as global
}

test_custom_workload_gets_default if {
	js := json.patch(base, [{"op": "replace", "path": "/kind", "value": "LeaderWorkerSet"}])
	priority.mutate.priorityClassName == "batch-normal" with input as js
}
