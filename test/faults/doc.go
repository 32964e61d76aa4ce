// Package faults injects faults into a running Tessera (the end-to-end cluster of
// test/e2e: kube-apiserver and etcd, kube-controller-manager, kwok nodes, Cluster API,
// and Tessera's own binaries built with their fault points, internal/failpoint) while
// a mixed workload runs, and checks after each recovery that nothing was lost.
//
// A schedule is a seed: it decides the order of the fault points, the action at each
// (a crash, errors, a delay, a process killed) and the workload. Every point of the
// catalog is visited once per seed, so one seed covers them all. After each fault the
// driver waits for recovery (the next pod bound, or the next scale-down step for the
// autoscaler's points) and checks the invariants (invariants.go). A violation names the
// seed, the step and the fault, so that `FAULT_SEEDS=<seed> make faults` replays it.
//
// make faults runs the CI schedule; FAULT_SEEDS=1-25 make faults the long one.
package faults
