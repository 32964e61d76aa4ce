# GPU workloads are scheduled by tessera, which applies their queue and assigns their
# GPUs: "" and default-scheduler become tessera; another scheduler is denied unless the
# operator allows it (webhook flag --allowed-scheduler); spec.nodeName preset, which
# skips every scheduler, is denied. Workloads that ask for no GPU stay off GPU nodes:
# spec.nodeName naming a GPU node and tolerations of the GPU nodes' taint are denied.
# The scheduler's own identity is exempt, and so are the mirror pods kubelets create for
# their static pods and, from tolerations, DaemonSets' pods.
package tessera.scheduler

import data.tessera.lib

mutate.schedulerName := "tessera" if {
	lib.is_gpu_workload
	object.get(input.workload, "schedulerName", "") in {"", "default-scheduler"}
	input.kind != "PodGroup"
}

allowed := {"tessera"} | {s | some s in object.get(lib.settings, "allowedSchedulers", [])}

# The first line of each rule fails fast for the usual pod, which names no scheduler
# and no node: admission latency.
deny contains msg if {
	s := input.workload.schedulerName
	not s in {"", "default-scheduler"}
	not s in allowed
	lib.is_gpu_workload
	input.kind in {"Pod", "Job"}
	not lib.from_scheduler
	msg := sprintf("spec.schedulerName %q: GPU workloads are scheduled by tessera, which applies their queue and assigns their GPUs; remove spec.schedulerName or set it to tessera (schedulers the operator allows for GPU workloads: [%s])", [s, concat(", ", sort(allowed))])
}

deny contains msg if {
	n := input.workload.nodeName
	n != ""
	lib.is_gpu_workload
	input.kind in {"Pod", "Job"}
	not lib.from_scheduler
	not lib.from_node
	msg := sprintf("spec.nodeName is preset to %q: a GPU workload must be placed by the tessera scheduler, which applies its queue and assigns its GPUs; remove spec.nodeName and let the tessera scheduler place it (choose nodes with a nodeSelector or node affinity)", [n])
}

deny contains msg if {
	n := input.workload.nodeName
	n != ""
	lib.gpu_node(n)
	not lib.is_gpu_workload
	input.kind in {"Pod", "Job"}
	not lib.from_scheduler
	not lib.from_node
	msg := sprintf("spec.nodeName %q is a GPU node: a workload that requests no GPU may not be placed on one; remove spec.nodeName, or request the GPUs it needs and let the tessera scheduler place it", [n])
}

deny contains msg if {
	some i, t in object.get(input.workload, "tolerations", [])
	lib.tolerates_gpu_taint(t)
	not lib.is_gpu_workload
	input.kind in {"Pod", "Job"}
	not lib.from_scheduler
	not lib.from_node
	not lib.from_daemonset_controller
	msg := sprintf("spec.tolerations[%d] %s: a workload that requests no GPU may not run on GPU nodes; remove the toleration, or request the GPUs it needs", [i, tolerated(t)])
}

tolerated(t) := sprintf("tolerates the GPU nodes' taint %s", [k]) if {
	k := object.get(t, "key", "")
	k != ""
} else := sprintf("tolerates every taint, the GPU nodes' among them (%s)", [concat(", ", sort(lib.gpu_taints))])
