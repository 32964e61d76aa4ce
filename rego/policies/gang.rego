# Gang size. minAvailable defaults to ceil(0.8 x replicas) for short jobs and to
# replicas for long ones; the label tessera.dev/runtime (short | long) decides, else the
# queue's default runtime, else long. Neither custom workloads (JobSet, RayCluster, ...:
# the gang is gangSize pods, those one gang of the object holds) nor parts of a larger workload
# (lib.operator_gang: a JobSet's child Jobs, ...) get a default: the scheduler sizes
# their gang from the whole workload. A gang larger than its queue's capability, and a
# minAvailable larger than replicas, are denied.
package tessera.gang

import data.tessera.lib

runtime := r if {
	r := lib.label_or_annotation("tessera.dev/runtime")
} else := r if {
	info := lib.queue_info(object.get(input.workload, "queue", ""))
	r := object.get(info, "runtime", "")
	r != ""
} else := "long"

default_min_available(replicas) := ceil((replicas * 8) / 10) if runtime == "short"

default_min_available(replicas) := replicas if runtime != "short"

mutate.minAvailable := m if {
	lib.managed
	input.kind in {"Job", "PodGroup"}
	not input.workload.minAvailable
	not lib.operator_gang
	replicas := input.workload.replicas
	replicas > 1
	m := default_min_available(replicas)
}

deny contains msg if {
	m := input.workload.minAvailable
	r := input.workload.replicas
	m > r
	msg := sprintf("minAvailable %d is larger than the %d replicas; lower tessera.dev/min-available (or minMember) to at most %d", [m, r, r])
}

gang_size := m if {
	m := input.workload.minAvailable
} else := m if {
	m := mutate.minAvailable
} else := n if {
	n := input.workload.gangSize
} else := n if {
	input.workload.templates
	n := input.workload.replicas
} else := 1

# The gang's total request per resource: the group's own total, else pods x per-pod.
gang_total(r) := t if {
	t := input.workload.gangRequests[r]
} else := t if {
	t := input.workload.podRequests[r] * gang_size
}

deny contains msg if {
	lib.managed
	q := object.get(input.workload, "queue", "")
	capability := object.get(lib.queue_info(q), "capability", {})
	some r, limit in capability
	total := gang_total(r)
	total > limit
	msg := sprintf("gang of %d pod(s) needs %v %s but queue %q has a capability of %v; %s, or raise the queue's capability", [gang_size, total, r, q, limit, smaller])
}

smaller := "lower the replicas or the per-pod request" if input.workload.templates
else := "lower minAvailable or the request"
