package tessera.queue_test

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
