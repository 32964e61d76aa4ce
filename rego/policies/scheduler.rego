# GPU workloads are scheduled by tessera, which applies their queue and assigns their
# GPUs: "" and default-scheduler become tessera; another scheduler is denied unless the
# operator allows it (webhook flag --allowed-scheduler); spec.nodeName preset, which
# skips every scheduler, is denied. The names the operator made aliases of tessera
# (--scheduler-name-alias) become tessera on every workload. A gang mode's scheduler name
# (gang_schedulers) that is neither gets a message naming both settings: a denial on a
# GPU workload, a warning on a managed one that asks for no GPU. Workloads that ask for
# no GPU stay off GPU nodes: spec.nodeName naming a GPU node and tolerations of the GPU
# nodes' taint are denied. The scheduler's own identity is exempt, and so are the mirror
# pods kubelets create for their static pods and, from tolerations, DaemonSets' pods.
package tessera.scheduler

import data.tessera.lib

mutate.schedulerName := "tessera" if {
	lib.is_gpu_workload
	object.get(input.workload, "schedulerName", "") in {"", "default-scheduler"}
	input.kind != "PodGroup"
}

mutate.schedulerName := "tessera" if {
	input.workload.schedulerName in lib.scheduler_aliases
	input.kind != "PodGroup"
}

allowed := {"tessera"} | {s | some s in object.get(lib.settings, "allowedSchedulers", [])}

# gang_schedulers: the scheduler names that workload controllers' gang modes and
# gang-scheduling manifests write.
gang_schedulers := {
	"volcano": "Volcano, and KubeRay's and the Kubeflow training operator's Volcano integration",
	"yunikorn": "Apache YuniKorn, and KubeRay's YuniKorn integration",
	"scheduler-plugins-scheduler": "the scheduler-plugins coscheduling plugin, and KubeRay's and the Kubeflow training operator's integration of it",
}

# The first line of each rule fails fast for the usual pod, which names no scheduler
# and no node: admission latency.
deny contains msg if {
	s := input.workload.schedulerName
	not s in {"", "default-scheduler"}
	not s in allowed
	not s in lib.scheduler_aliases
	lib.is_gpu_workload
	input.kind != "PodGroup"
	not lib.from_scheduler
	msg := sprintf("spec.schedulerName %q: GPU workloads are scheduled by tessera, which applies their queue and assigns their GPUs; remove spec.schedulerName or set it to tessera (schedulers the operator allows for GPU workloads: [%s])%s", [s, concat(", ", sort(allowed)), gang_mode(s)])
}

warn contains msg if {
	s := input.workload.schedulerName
	gang_schedulers[s]
	not s in allowed
	not s in lib.scheduler_aliases
	not lib.is_gpu_workload
	lib.managed
	input.kind != "PodGroup"
	msg := sprintf("spec.schedulerName %q: the pods wait for that scheduler, not tessera%s", [s, gang_mode(s)])
}

gang_mode(s) := sprintf("; %q is the scheduler name of a gang mode (%s): to have Tessera schedule such workloads, the operator adds it to webhook.schedulerNameAliases (--scheduler-name-alias); to keep that scheduler running them beside Tessera, to webhook.allowedSchedulers (--allowed-scheduler)", [s, gang_schedulers[s]]) if {
	gang_schedulers[s]
} else := ""

deny contains msg if {
	n := input.workload.nodeName
	n != ""
	lib.is_gpu_workload
	input.kind != "PodGroup"
	not lib.from_scheduler
	not lib.from_node
	msg := sprintf("spec.nodeName is preset to %q: a GPU workload must be placed by the tessera scheduler, which applies its queue and assigns its GPUs; remove spec.nodeName and let the tessera scheduler place it (choose nodes with a nodeSelector or node affinity)", [n])
}

deny contains msg if {
	n := input.workload.nodeName
	n != ""
	lib.gpu_node(n)
	not lib.is_gpu_workload
	input.kind != "PodGroup"
	not lib.from_scheduler
	not lib.from_node
	msg := sprintf("spec.nodeName %q is a GPU node: a workload that requests no GPU may not be placed on one; remove spec.nodeName, or request the GPUs it needs and let the tessera scheduler place it", [n])
}

deny contains msg if {
	some i, t in object.get(input.workload, "tolerations", [])
	lib.tolerates_gpu_taint(t)
	not lib.is_gpu_workload
	input.kind != "PodGroup"
	not lib.from_scheduler
	not lib.from_node
	not lib.from_daemonset_controller
	msg := sprintf("spec.tolerations[%d] %s: a workload that requests no GPU may not run on GPU nodes; remove the toleration, or request the GPUs it needs", [i, tolerated(t)])
}

tolerated(t) := sprintf("tolerates the GPU nodes' taint %s", [k]) if {
	k := object.get(t, "key", "")
	k != ""
} else := sprintf("tolerates every taint, the GPU nodes' among them (%s)", [concat(", ", sort(lib.gpu_taints))])
