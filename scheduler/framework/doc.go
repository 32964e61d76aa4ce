// Package framework holds the scheduler's client-free model (the Snapshot of nodes,
// GPUs, queues, jobs and tasks) and the one-method plugin interfaces the session calls:
// ordering, filtering, node scoring and GPU placement.
//
// Everything here is plain data and pure functions: no API client, no controller-runtime,
// no NVML, no OPA. The Kubernetes daemon (scheduler/k8s) and the simulator
// (sim) both fill a Snapshot and run the same session over it.
package framework
