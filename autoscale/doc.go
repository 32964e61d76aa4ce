// Package autoscale is the pure scale-down planner: it decides which GPU nodes may be
// removed and never calls a client. Idle detection (no GPU-requesting pod bound, GPU
// utilization below the ScaleDownPolicy threshold, both for longer than idleAfter),
// candidate methods behind one interface (Empty, Underused), the rules that keep a node
// (annotations, PodDisruptionBudgets, pods without a controller or with local storage,
// minNodes, node-group minimum sizes, maxParallel, cooldown) and the scheduler core's
// what-if call that answers whether a node's pods, and the pending gangs that need it,
// still fit without it. GPUs that are allocated but unused are reported, never drained;
// a Queue's idle reclaim (IdleReclaim: tell a pod idle for idleFor, suspend its workload
// gracePeriod later, an opt-out that holds within the queue's deserved share) decides
// here too, and autoscale/idlereclaim does it.
//
// Planner.Plan reads a Cluster (the scheduler's snapshot plus per-node state) and
// returns a Plan; autoscale/actuator carries it out, and the simulator runs the same
// planner on its virtual clock. The scale-down state a node carries (the candidate
// taint and the tessera.dev/scale-down annotation) is defined here so that both sides
// read it the same way.
package autoscale
