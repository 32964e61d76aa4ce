# priorityClassName: the queue's default (Queue annotation tessera.dev/priority-class),
# else the namespace's (namespace annotation tessera.dev/priority-class), else
# batch-normal. Shipped classes: production-high (100), batch-normal (50), offline-low (0).
# A queue with spec.allowedPriorityClasses takes only those (the queue policy denies
# others): a default outside the list gives way to the first listed class that exists.
package tessera.priority

import data.tessera.lib

default_class := "batch-normal"

chosen := c if {
	info := lib.queue_info(object.get(input.workload, "queue", ""))
	c := object.get(info, "priorityClassName", "")
	c != ""
} else := c if {
	c := lib.namespace_annotation("tessera.dev/priority-class")
} else := default_class

# outside: the queue lists its classes (the webhook leaves spec.allowedPriorityClasses out
# when it is empty) and chosen is not one of them; set to the list.
outside := a if {
	a := lib.queue_info(object.get(input.workload, "queue", "")).allowedPriorityClasses
	not chosen in a
}

# Only classes that exist are set: the API server resolves the name to a priority.
mutate.priorityClassName := chosen if {
	lib.managed
	object.get(input.workload, "priorityClassName", "") == ""
	not outside
	object.get(object.get(input, "cluster", {}), "priorityClasses", {})[chosen]
}

mutate.priorityClassName := c if {
	a := outside
	lib.managed
	object.get(input.workload, "priorityClassName", "") == ""
	classes := object.get(object.get(input, "cluster", {}), "priorityClasses", {})
	c := [x | some x in a; classes[x]][0]
}
