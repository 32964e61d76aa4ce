// Package idlereclaim takes back GPUs that running pods hold but leave idle, per the
// spec.idleReclaim of each Queue: a pod whose assigned GPUs all stayed at or below
// the utilization threshold (GPUNode status, as the node agent samples it) for idleFor
// is told (a Warning event, tessera_gpu_idle_reclaim_pending_gpus); gracePeriod later,
// still idle, its workload is suspended: spec.suspend (runPolicy.suspend) set on a
// Job, JobSet, RayCluster, RayJob, MPIJob or PyTorchJob, a Deployment, StatefulSet or
// LeaderWorkerSet scaled to zero with its replicas recorded in
// tessera.dev/idle-reclaim-replicas, any other pod evicted through the Eviction API.
// A dry run (the default) tells and reports, and suspends nothing. A pod or workload
// annotated tessera.dev/idle-reclaim: "false" is spared while its queue holds no more
// than its deserved share. The decisions are package autoscale's (IdleReclaim); this
// package reads the cluster and does them. The autoscaler runs it every round.
package idlereclaim
