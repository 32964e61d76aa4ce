# GPU workloads are scheduled by tessera, which applies their queue and assigns their
# GPUs: "" and default-scheduler become tessera; another scheduler is denied unless the
# operator allows it (webhook flag --allowed-scheduler); spec.nodeName preset, which
# skips every scheduler, is denied. The scheduler's own identity is exempt, and so are
# the mirror pods kubelets create for their static pods.
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
