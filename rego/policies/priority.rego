# priorityClassName: the queue's default (Queue annotation tessera.dev/priority-class),
# else the namespace's (namespace annotation tessera.dev/priority-class), else
# batch-normal. Shipped classes: production-high (100), batch-normal (50), offline-low (0).
# A queue with spec.allowedPriorityClasses takes only those: another class is denied, and
# a default outside the list gives way to the first listed class that exists.
package tessera.priority

import data.tessera.lib

default_class := "batch-normal"

classes := object.get(object.get(input, "cluster", {}), "priorityClasses", {})

# allowed: the queue's spec.allowedPriorityClasses; undefined when the queue allows any.
allowed := a if {
	info := lib.queue_info(object.get(input.workload, "queue", ""))
	a := object.get(info, "allowedPriorityClasses", [])
	count(a) > 0
}

preferred := c if {
	info := lib.queue_info(object.get(input.workload, "queue", ""))
	c := object.get(info, "priorityClassName", "")
	c != ""
} else := c if {
	c := lib.namespace_annotation("tessera.dev/priority-class")
} else := default_class

chosen := preferred if {
	not allowed
} else := preferred if {
	preferred in allowed
} else := c if {
	c := [x | some x in allowed; classes[x]][0]
}

# Only classes that exist are set: the API server resolves the name to a priority.
mutate.priorityClassName := chosen if {
	lib.managed
	object.get(input.workload, "priorityClassName", "") == ""
	classes[chosen]
}

deny contains msg if {
	lib.managed
	a := allowed
	c := lib.workload_field("priorityClassName")
	not c in a
	q := input.workload.queue
	msg := sprintf("priorityClassName %q is not allowed in queue %q (its spec.allowedPriorityClasses: [%s]); use one of those, or leave priorityClassName empty for the queue's default", [c, q, concat(", ", a)])
}
