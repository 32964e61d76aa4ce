# Queues: deserved must not exceed capability; warn when the queues together deserve
# more than the cluster has. spec.namespaceSelector must be a valid selector, and the
# queue's default priority class (annotation tessera.dev/priority-class) one of its
# spec.allowedPriorityClasses (a warning when it lists none: the queue then takes only
# the cluster's default class).
package tessera.queues

deny contains msg if {
	some r, d in object.get(input.workload, "deserved", {})
	c := input.workload.capability[r]
	d > c
	msg := sprintf("spec.deserved[%s] = %v exceeds spec.capability[%s] = %v; lower deserved or raise capability", [r, d, r, c])
}

others := [q | some name, q in object.get(input.cluster, "queues", {}); name != input.workload.name]

warn contains msg if {
	some r, have in object.get(input.cluster, "capacity", {})
	mine := object.get(object.get(input.workload, "deserved", {}), r, 0)
	mine > 0
	total := mine + sum([object.get(object.get(q, "deserved", {}), r, 0) | some q in others])
	total > have
	msg := sprintf("queues together deserve %v %s but the cluster has %v; deserved shares will not all be met", [total, r, have])
}

deny contains msg if {
	e := input.workload.namespaceSelectorError
	msg := sprintf("spec.namespaceSelector is invalid: %s; fix the selector (no namespace could use the queue)", [e])
}

deny contains msg if {
	allowed := object.get(input.workload, "allowedPriorityClasses", [])
	count(allowed) > 0
	c := object.get(object.get(input.workload, "annotations", {}), "tessera.dev/priority-class", "")
	c != ""
	not c in allowed
	msg := sprintf("annotation tessera.dev/priority-class %q (the queue's default priority class) is not in spec.allowedPriorityClasses [%s]; add it there or pick one of them", [c, concat(", ", allowed)])
}

warn contains msg if {
	count(object.get(input.workload, "allowedPriorityClasses", [])) == 0
	c := object.get(object.get(input.workload, "annotations", {}), "tessera.dev/priority-class", "")
	c != ""
	c != object.get(input.cluster, "defaultPriorityClass", "")
	msg := sprintf("annotation tessera.dev/priority-class %q (the queue's default priority class) has no effect: a queue that lists no spec.allowedPriorityClasses takes only the cluster's default class; list %q in spec.allowedPriorityClasses", [c, c])
}

warn contains msg if {
	classes := object.get(input.cluster, "priorityClasses", {})
	some c in object.get(input.workload, "allowedPriorityClasses", [])
	not has_class(classes, c)
	msg := sprintf("spec.allowedPriorityClasses names %q, which is not a PriorityClass of the cluster; workloads cannot use it until it exists", [c])
}

has_class(classes, c) if _ = classes[c]
