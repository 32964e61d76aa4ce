# GPU workloads are scheduled by tessera. A workload that names another custom
# scheduler keeps it; only the default scheduler is replaced.
package tessera.scheduler

import data.tessera.lib

mutate.schedulerName := "tessera" if {
	lib.is_gpu_workload
	object.get(input.workload, "schedulerName", "") in {"", "default-scheduler"}
	input.kind != "PodGroup"
}
