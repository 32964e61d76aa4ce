# Queue: the workload's tessera.dev/queue label, else its namespace's tessera.dev/queue
# annotation, else Volcano's or Kueue's queue name, else "default". Unknown queues are denied.
package tessera.queue

import data.tessera.lib

resolved := q if {
	q := lib.workload_field("queue")
} else := q if {
	q := lib.namespace_annotation("tessera.dev/queue")
} else := q if {
	q := lib.label_or_annotation("scheduling.volcano.sh/queue-name")
} else := q if {
	q := lib.label_or_annotation("kueue.x-k8s.io/queue-name")
} else := "default"

mutate.queue := resolved if {
	lib.managed
	object.get(input.workload, "queue", "") != resolved
}

# The default queue is implicit: a cluster without Queue objects still admits work.
deny contains msg if {
	lib.managed
	resolved != "default"
	lib.queue_info(resolved) == null
	known := concat(", ", sort([n | some n, _ in object.get(input.cluster, "queues", {})]))
	msg := sprintf("queue %q does not exist (known queues: [%s]); create the Queue or set label tessera.dev/queue to an existing one", [resolved, known])
}
