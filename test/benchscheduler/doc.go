// Command benchscheduler measures how fast Tessera's scheduler binds pods on a real API
// server, next to kube-scheduler and next to the API server's ceiling (the same pods
// bound round-robin with no scheduling work), in one run so that the ratios hold on a
// shared machine. `make bench-scheduler` runs it and writes out/bench-scheduler.json.
//
// Each case creates every pod first (pending), then starts the scheduler under test and
// counts binds from a watch: pods per second is the binds over the time from the first
// bind to the last. Cases: "single" (one-GPU pods) and "gang8" (the same pods in gangs
// of 8 with their PodGroups); "single5k" and "churn5k" on 5,000 nodes; "dra5k", the
// same 5,000 nodes with their GPUs published as ResourceSlices (one pool per node, eight
// whole GPUs, Tessera's DeviceClasses) and pods that each use a ResourceClaim of one GPU
// of its own, created by name with the pod: kube-scheduler allocates those claims
// itself. dra5k measures the burst's rate, then the creation-to-bind latency of pods
// created at a steady rate afterwards, for the ceiling (claims allocated and pods bound
// round-robin), Tessera, Tessera with the same pods asking the extended resource
// instead, and kube-scheduler. With -heap-nodes and -heap-pods it also reports the
// scheduler's heap after scheduling a large cluster.
package main
