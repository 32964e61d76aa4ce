// Command benchscheduler measures how fast Tessera's scheduler binds pods on a real API
// server, next to kube-scheduler and next to the API server's ceiling (the same pods
// bound round-robin with no scheduling work), in one run so that the ratios hold on a
// shared machine. `make bench-scheduler` runs it and writes out/bench-scheduler.json.
//
// Each case creates every pod first (pending), then starts the scheduler under test and
// counts binds from a watch: pods per second is the binds over the time from the first
// bind to the last. Cases: "single" (one-GPU pods) and "gang8" (the same pods in gangs
// of 8 with their PodGroups). With -heap-nodes and -heap-pods it also reports the
// scheduler's heap after scheduling a large cluster.
package main
