# Queues: deserved must not exceed capability; warn when the queues together deserve
# more than the cluster has.
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
