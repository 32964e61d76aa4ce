# Helpers shared by Tessera's default admission policies.
package tessera.lib

# Resources that make a workload a GPU workload: every tessera.dev/* resource and
# the NVIDIA device plugin's nvidia.com/gpu.
gpu_resource(r) if startswith(r, "tessera.dev/")

gpu_resource("nvidia.com/gpu")

is_gpu_workload if {
	some r, v in object.get(input.workload, "podRequests", {})
	gpu_resource(r)
	v > 0
}

# A pod's resource claims of Tessera's device classes (input.workload.claimRequests).
is_gpu_workload if {
	some r, v in object.get(input.workload, "claimRequests", {})
	gpu_resource(r)
	v > 0
}

is_gpu_workload if {
	some r, v in object.get(input.workload, "gangRequests", {})
	gpu_resource(r)
	v > 0
}

# label_or_annotation(k) is the workload's label k, else its annotation k.
label_or_annotation(k) := v if {
	v := object.get(object.get(input.workload, "labels", {}), k, "")
	v != ""
} else := v if {
	v := object.get(object.get(input.workload, "annotations", {}), k, "")
	v != ""
}

namespace_annotation(k) := v if {
	v := object.get(object.get(input.namespace, "annotations", {}), k, "")
	v != ""
}

workload_field(k) := v if {
	v := object.get(input.workload, k, "")
	v != ""
}

# managed: Tessera decides for the workload. GPU workloads, workloads that name a
# queue (Tessera's, Volcano's or Kueue's), namespaces with a default queue, and
# workloads already handed to the tessera scheduler.
managed if is_gpu_workload

managed if workload_field("queue")

managed if namespace_annotation("tessera.dev/queue")

managed if label_or_annotation("scheduling.volcano.sh/queue-name")

managed if label_or_annotation("kueue.x-k8s.io/queue-name")

managed if input.workload.schedulerName == "tessera"

managed if input.workload.schedulerName in scheduler_aliases

workload_kinds := {"Pod", "Job", "PodGroup", "JobSet", "RayCluster", "RayJob", "LeaderWorkerSet", "PyTorchJob", "MPIJob"}

queue_info(q) := object.get(queues, q, null)

queues := object.get(object.get(input, "cluster", {}), "queues", {})

# allowed_classes(q): the priority classes workloads of queue q may name: its
# spec.allowedPriorityClasses, in order. A queue that lists none (the implicit default
# queue lists none) takes only the cluster's default class: the globalDefault
# PriorityClass, which the API server gives pods that name none before the webhooks see
# them, or no class at all. The scheduler charges the same to the queue.
allowed_classes(q) := a if {
	a := object.get(object.get(queues, q, {}), "allowedPriorityClasses", [])
	count(a) > 0
} else := [c | some c in global_default_class]

global_default_class := {c | c := object.get(object.get(input, "cluster", {}), "defaultPriorityClass", ""); c != ""}

# gpu_node(n): n is a node with GPUs (a GPUNode of that name).
gpu_node(n) if object.get(object.get(input, "cluster", {}), "gpuNodes", {})[n]

# gpu_taints: the taint keys that keep pods without GPUs off GPU nodes: the NVIDIA
# device plugin's nvidia.com/gpu (which the ExtendedResourceToleration admission plugin
# tolerates for pods requesting it) and Tessera's tessera.dev/gpu.
gpu_taints := {"nvidia.com/gpu", "tessera.dev/gpu"}

# tolerates_gpu_taint(t): the toleration t lets a pod onto tainted GPU nodes: it names a
# GPU taint, or it has no key and operator Exists (tolerates every taint).
tolerates_gpu_taint(t) if object.get(t, "key", "") in gpu_taints

tolerates_gpu_taint(t) if {
	object.get(t, "key", "") == ""
	object.get(t, "operator", "") == "Exists"
}

# settings: the operator's admission settings (webhook flags): schedulerUsers,
# allowedSchedulers, schedulerNameAliases.
settings := object.get(object.get(input, "cluster", {}), "settings", {})

# scheduler_aliases: scheduler names that mean tessera (--scheduler-name-alias): the
# names operators' gang modes write, handed to Tessera by the operator.
scheduler_aliases := {s | some s in object.get(settings, "schedulerNameAliases", [])}

# operator_gang: the workload is a part of a larger one whose gang Tessera's scheduler
# finds itself, from the workload controller's object (a JobSet's child Jobs, a Ray
# cluster's, a LeaderWorkerSet's or a training job's pods) or from a group another tool
# declares (Kueue's pod groups, the coscheduling plugin's PodGroups).
operator_gang if {
	some k in operator_gang_labels
	_ = object.get(input.workload, "labels", {})[k]
}

operator_gang_labels := {
	"jobset.sigs.k8s.io/jobset-name",
	"ray.io/cluster",
	"leaderworkerset.sigs.k8s.io/name",
	"training.kubeflow.org/job-name",
	"kueue.x-k8s.io/pod-group-name",
	"scheduling.x-k8s.io/pod-group",
}

# from_scheduler: the request comes from the scheduler's identity.
from_scheduler if {
	u := object.get(object.get(input, "user", {}), "username", "")
	u != ""
	u in object.get(settings, "schedulerUsers", [])
}

# from_node: a kubelet's request (mirror pods of static pods are created bound).
from_node if "system:nodes" in object.get(object.get(input, "user", {}), "groups", [])

# platform_namespace: the request's namespace is labelled tessera.dev/platform: "true",
# a namespace of the platform team's software (the GPU Operator, monitoring, cert-manager,
# ingress). Only whoever may update namespaces sets the label; tenants may not.
platform_namespace if object.get(object.get(input.namespace, "labels", {}), "tessera.dev/platform", "") == "true"

# system_classes: the PriorityClasses every Kubernetes cluster has, for node and cluster
# software.
system_classes := {"system-node-critical", "system-cluster-critical"}

# from_daemonset_controller: kube-controller-manager's DaemonSet controller creates the
# pod. A DaemonSet runs a pod on every node it selects, GPU nodes included when its
# author says so; tenants may not create DaemonSets.
from_daemonset_controller if input.user.username == "system:serviceaccount:kube-system:daemon-set-controller"

# selector_matches(sel, labels): the label selector sel (as the webhook writes a
# metav1.LabelSelector: matchLabels, matchExpressions [{key, operator, values}]) selects
# labels. An empty selector selects everything.
selector_matches(sel, labels) if {
	every k, v in object.get(sel, "matchLabels", {}) {
		object.get(labels, k, null) == v
	}
	every e in object.get(sel, "matchExpressions", []) {
		expression_matches(e, labels)
	}
}

expression_matches(e, labels) if {
	e.operator == "In"
	value_in(labels, e.key, e.values)
}

# NotIn selects labels without the key too.
expression_matches(e, labels) if {
	e.operator == "NotIn"
	not value_in(labels, e.key, e.values)
}

expression_matches(e, labels) if {
	e.operator == "Exists"
	_ = labels[e.key]
}

expression_matches(e, labels) if {
	e.operator == "DoesNotExist"
	not has_key(labels, e.key)
}

has_key(obj, k) if _ = obj[k]

value_in(labels, k, values) if labels[k] in values

# namespace_labels: the request namespace's labels, with kubernetes.io/metadata.name,
# which the API server sets on every namespace.
namespace_labels := object.union(
	object.get(input.namespace, "labels", {}),
	{"kubernetes.io/metadata.name": object.get(input.namespace, "name", "")},
)

# queue_takes_namespace(info): the queue (its cluster document) takes workloads from the
# request's namespace: it has no namespaceSelector, or a valid one that selects it.
queue_takes_namespace(info) if not info.namespaceSelector

queue_takes_namespace(info) if {
	not info.namespaceSelectorError
	selector_matches(info.namespaceSelector, namespace_labels)
}
