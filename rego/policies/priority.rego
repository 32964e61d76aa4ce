# priorityClassName: the queue's default (Queue annotation tessera.dev/priority-class),
# else the namespace's (namespace annotation tessera.dev/priority-class), else
# batch-normal. Shipped classes: production-high (100), batch-normal (50), offline-low (0).
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

# Only classes that exist are set: the API server resolves the name to a priority.
mutate.priorityClassName := chosen if {
	lib.managed
	object.get(input.workload, "priorityClassName", "") == ""
	object.get(object.get(input, "cluster", {}), "priorityClasses", {})[chosen]
}
