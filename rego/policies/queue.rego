# Queue: the workload's tessera.dev/queue label, else its namespace's tessera.dev/queue
# annotation, else Volcano's or Kueue's queue name, else the one Queue that owns the
# namespace (namespace_owners), else "default". Unknown queues are
# denied, and so are queues whose spec.namespaceSelector does not select the workload's
# namespace, and a priorityClassName the queue's spec.allowedPriorityClasses leaves out
# (the priority policy picks defaults among them); a queue that lists none takes only
# the cluster's default class. The class is checked on every workload, CPU pods included,
# but for platform software Tessera does not manage (unmanaged_platform).
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
} else := q if {
	[q] := namespace_owners
} else := "default"

# namespace_owners: the queues other than default whose spec.namespaceSelector selects
# the workload's namespace. They own it: a workload there that names no queue goes to
# the one owner (as a namespace's default LocalQueue takes them in Kueue), and none may
# use the default queue.
namespace_owners := sort([n |
	some n, q in lib.queues
	n != "default"
	_ = q.namespaceSelector
	lib.queue_takes_namespace(q)
])

mutate.queue := resolved if {
	lib.managed
	object.get(input.workload, "queue", "") != resolved
}

# The default queue is implicit: a cluster without Queue objects still admits work, from
# every namespace, with the cluster's default priority class only. A Queue named default
# is checked like any other: its namespaceSelector and allowedPriorityClasses apply.
deny contains msg if {
	lib.managed
	resolved != "default"
	lib.queue_info(resolved) == null
	known := concat(", ", sort([n | some n, _ in object.get(input.cluster, "queues", {})]))
	msg := sprintf("queue %q does not exist (known queues: [%s]); create the Queue or set label tessera.dev/queue to an existing one", [resolved, known])
}

deny contains msg if {
	info := lib.queue_info(resolved)
	_ = info.namespaceSelector
	not info.namespaceSelectorError
	not lib.queue_takes_namespace(info)
	lib.managed
	ns := object.get(input.namespace, "name", "")
	usable := sort([n | some n, q in object.get(input.cluster, "queues", {}); lib.queue_takes_namespace(q)])
	msg := sprintf("queue %q does not take workloads from namespace %q: its spec.namespaceSelector does not select the namespace; set label tessera.dev/queue to a queue this namespace may use ([%s]), or ask the operator to add the namespace to the queue's namespaceSelector", [resolved, ns, concat(", ", usable)])
}

# A namespace that a Queue's spec.namespaceSelector selects belongs to that team: its
# workloads may not use the default queue, named or implied (a namespace several queues
# own), or they would escape the team's spec.capability (the default queue selects every
# tenant namespace). The default queue is for namespaces no Queue owns.
deny contains msg if {
	lib.managed
	resolved == "default"
	count(namespace_owners) > 0
	ns := object.get(input.namespace, "name", "")
	msg := sprintf("namespace %q belongs to queue(s) [%s] (their spec.namespaceSelector selects it), so its workloads may not use the default queue, whose share would escape their spec.capability; set label tessera.dev/queue to one of them, or annotate the namespace with tessera.dev/queue=<queue>", [ns, concat(", ", namespace_owners)])
}

deny contains msg if {
	e := lib.queue_info(resolved).namespaceSelectorError
	lib.managed
	msg := sprintf("queue %q has an invalid spec.namespaceSelector (%s), so no namespace may use it; the operator must fix the Queue", [resolved, e])
}

# Every workload, managed or not: a pod that asks for no GPU still preempts other
# tenants' pods through kube-scheduler with a high class. Workloads that name no queue
# are in the default queue; those Tessera does not manage may always carry the cluster's
# default class, which the API server gives them. Platform software is let through when
# Tessera does not manage it (unmanaged_platform): any class in a namespace labelled
# tessera.dev/platform: "true", and the built-in system classes on the pods the DaemonSet
# controller creates, in every namespace.
deny contains msg if {
	c := lib.workload_field("priorityClassName")
	msg := class_denied(c)
}

# A custom workload's pod templates each name their own.
deny contains msg if {
	some t in input.workload.templates
	msg := class_denied(t.priorityClassName)
}

class_denied(c) := msg if {
	not c in lib.allowed_classes(resolved)
	not unmanaged_default(c)
	not unmanaged_platform(c)
	msg := sprintf("priorityClassName %q is not allowed in queue %q (%s); use one of those, or leave priorityClassName empty for the queue's default", [c, resolved, allowed_text])
}

unmanaged_default(c) if {
	not lib.managed
	c in lib.global_default_class
}

# unmanaged_platform(c): a workload Tessera does not manage (no GPU, no queue, not handed
# to tessera) in a platform namespace, whatever its class; or a pod of a DaemonSet (node
# software: device plugins, exporters, log agents), which tenants may not create, at
# system-node-critical or system-cluster-critical. GPU workloads and workloads that name a
# queue are checked against their queue everywhere.
unmanaged_platform(_) if {
	not lib.managed
	lib.platform_namespace
}

unmanaged_platform(c) if {
	not lib.managed
	c in lib.system_classes
	lib.from_daemonset_controller
}

allowed_text := sprintf("its spec.allowedPriorityClasses: [%s]", [concat(", ", a)]) if {
	a := lib.queue_info(resolved).allowedPriorityClasses
	count(a) > 0
} else := sprintf("it lists no spec.allowedPriorityClasses, so it takes only the cluster's default class %q", [c]) if {
	some c in lib.global_default_class
} else := "it lists no spec.allowedPriorityClasses, so it takes only workloads without a priorityClassName: no PriorityClass is the cluster's globalDefault"
