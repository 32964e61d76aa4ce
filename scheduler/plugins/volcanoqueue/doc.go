// Package volcanoqueue is Volcano's queue sharing, as the anchors the simulator
// compares Tessera with run it: the proportion plugin (volcano-proportion) and the
// capacity plugin (volcano-capacity) of volcano-sh/volcano v1.16.0-alpha.1
// (commit ed72c7c, pkg/scheduler/plugins/proportion/proportion.go and
// pkg/scheduler/plugins/capacity/capacity.go), flat queues only.
//
// Both give each queue a real capability: the cluster less every queue's guarantee,
// plus its own, capped by its capability. They differ in what a queue deserves:
//
//   - proportion ignores spec.deserved. A queue deserves a weighted water-fill of the
//     cluster, capped by its real capability and by what its jobs request (running and
//     pending, placeable or not), floored at its guarantee. A queue may allocate only
//     up to what it deserves, so work that cannot be placed can keep GPUs idle
//     (Volcano issue #2304). Reclaim takes from queues above what they deserve, for a
//     queue that stays within its own.
//   - capacity honours spec.deserved (floored at the guarantee): a queue allocates up
//     to its real capability, and reclaim takes back what a queue holds beyond its
//     deserved share for a queue below its own in some resource.
//
// In both, queues are served by priority, then by share (allocated over deserved, the
// largest over cpu, memory and GPU), and a job enters a queue (the enqueue action)
// only while what the queue holds, what its admitted jobs that do not run yet need and
// the job's minimum stay within the queue's real capability.
package volcanoqueue
