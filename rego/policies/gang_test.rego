package tessera.gang_test

import data.tessera.gang

job(w) := {
	"kind": "Job",
	"namespace": {"annotations": {}},
	"workload": object.union({"queue": "train", "podRequests": {"nvidia.com/gpu": 4}}, w),
	"cluster": {"queues": {
		"train": {"capability": {"nvidia.com/gpu": 32}},
		"quick": {"runtime": "short"},
	}},
}

test_long_job_gets_replicas if {
	gang.mutate.minAvailable == 5 with input as job({"replicas": 5})
}

test_short_label_gets_80_percent if {
	gang.mutate.minAvailable == 4 with input as job({"replicas": 5, "labels": {"tessera.dev/runtime": "short"}})
	gang.mutate.minAvailable == 8 with input as job({"replicas": 10, "labels": {"tessera.dev/runtime": "short"}})
	gang.mutate.minAvailable == 3 with input as job({"replicas": 3, "labels": {"tessera.dev/runtime": "short"}})
}

test_short_from_queue_data if {
	gang.mutate.minAvailable == 6 with input as job({"queue": "quick", "replicas": 7})
}

test_explicit_min_kept if {
	not gang.mutate.minAvailable with input as job({"replicas": 5, "minAvailable": 2})
}

test_single_replica_untouched if {
	not gang.mutate.minAvailable with input as job({"replicas": 1})
}

test_min_larger_than_replicas_denied if {
	msgs := gang.deny with input as job({"replicas": 2, "minAvailable": 3})
	some msg in msgs
	contains(msg, "minAvailable 3 is larger than the 2 replicas")
}

test_gang_over_capability_denied if {
	msgs := gang.deny with input as job({"replicas": 9})
	some msg in msgs
	contains(msg, `queue "train"`)
	contains(msg, "36 nvidia.com/gpu")
	contains(msg, "capability of 32")
}

test_gang_within_capability_allowed if {
	count(gang.deny) == 0 with input as job({"replicas": 8})
}

test_group_total_checked if {
	inp := object.union(job({}), {"kind": "PodGroup", "workload": {"queue": "train", "minAvailable": 2, "gangRequests": {"nvidia.com/gpu": 40}}})
	msgs := gang.deny with input as inp
	some msg in msgs
	contains(msg, "40 nvidia.com/gpu")
}
