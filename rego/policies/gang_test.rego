package tessera.gang_test

import data.tessera.gang
import data.tessera.lib

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

# A JobSet of 2 replicated jobs of 4 pods of 8 GPUs: the input counts every pod of
# every template (replicas 8, gangRequests 64).
jobset := {
	"kind": "JobSet",
	"namespace": {"annotations": {}},
	"workload": {
		"queue": "train",
		"replicas": 8,
		"podRequests": {"nvidia.com/gpu": 8},
		"gangRequests": {"nvidia.com/gpu": 64},
		"templates": [
			{"path": "spec.replicatedJobs[0].template.spec.template", "replicas": 4, "podRequests": {"nvidia.com/gpu": 8}},
			{"path": "spec.replicatedJobs[1].template.spec.template", "replicas": 4, "podRequests": {"nvidia.com/gpu": 8}},
		],
	},
	"cluster": {"queues": {"train": {"capability": {"nvidia.com/gpu": 32}}}},
}

test_jobset_over_capability_denied if {
	msgs := gang.deny with input as jobset
	count(msgs) == 1
	some msg in msgs
	contains(msg, `gang of 8 pod(s) needs 64 nvidia.com/gpu but queue "train" has a capability of 32`)
	contains(msg, "lower the replicas or the per-pod request")
}

test_jobset_within_capability_allowed if {
	inp := json.patch(jobset, [{"op": "replace", "path": "/cluster/queues/train/capability/nvidia.com~1gpu", "value": 64}])
	count(gang.deny) == 0 with input as inp
}

# The scheduler sizes a custom workload's gang from the whole workload: no minAvailable.
test_jobset_gets_no_min_available if {
	not gang.mutate.minAvailable with input as jobset
}

# The parts of a larger workload (a JobSet's child Jobs, ...) get no gang of their own.
test_parts_of_operator_workloads_get_no_min_available if {
	every k in lib.operator_gang_labels {
		not gang.mutate.minAvailable with input as job({"replicas": 4, "labels": {k: "llm"}})
	}
	gang.mutate.minAvailable == 4 with input as job({"replicas": 4, "labels": {"app": "llm"}})
}

# A child Job's capability check counts its own pods only (the JobSet's counted them all).
test_child_job_checks_its_pods if {
	inp := job({"replicas": 9, "labels": {"jobset.sigs.k8s.io/jobset-name": "llm"}})
	count(gang.deny) == 0 with input as inp
}
