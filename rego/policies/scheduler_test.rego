package tessera.scheduler_test

import data.tessera.scheduler

test_gpu_pod_gets_tessera if {
	scheduler.mutate.schedulerName == "tessera" with input as {"kind": "Pod", "workload": {"podRequests": {"tessera.dev/gpu-memory": 4096}}}
}

test_default_scheduler_replaced if {
	scheduler.mutate.schedulerName == "tessera" with input as {"kind": "Job", "workload": {"schedulerName": "default-scheduler", "podRequests": {"nvidia.com/gpu": 2}}}
}

test_idempotent_and_other_schedulers_kept if {
	not scheduler.mutate.schedulerName with input as {"kind": "Pod", "workload": {"schedulerName": "tessera", "podRequests": {"nvidia.com/gpu": 1}}}
	not scheduler.mutate.schedulerName with input as {"kind": "Pod", "workload": {"schedulerName": "volcano", "podRequests": {"nvidia.com/gpu": 1}}}
}

test_cpu_pod_untouched if {
	not scheduler.mutate.schedulerName with input as {"kind": "Pod", "workload": {"podRequests": {"cpu": 4}}}
}
