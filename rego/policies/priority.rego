# priorityClassName: the queue's default (Queue annotation tessera.dev/priority-class),
# else the namespace's (namespace annotation tessera.dev/priority-class), else
# batch-normal. Shipped classes: production-high (100), batch-normal (50), offline-low (0).
# A queue takes only the classes it allows (lib.allowed_classes; the queue policy denies
# others): a default outside them gives way to the first listed class that exists.
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

allowed := lib.allowed_classes(object.get(input.workload, "queue", ""))

# Only classes that exist are set: the API server resolves the name to a priority.
# The default gives way to the first allowed class that exists: in a queue that lists
# none, the cluster's default class, or none when the cluster has none.
mutate.priorityClassName := c if {
	lib.managed
	object.get(input.workload, "priorityClassName", "") == ""
	classes := object.get(object.get(input, "cluster", {}), "priorityClasses", {})
	c := [x | some x in candidates; classes[x]][0]
}

candidates := [chosen] if chosen in allowed
else := allowed
