// Package autoscale decides which GPU nodes may be removed: idle detection (no
// GPU-requesting pod bound, GPU utilization below the ScaleDownPolicy threshold, both
// for longer than idleAfter), candidate methods behind one interface (Empty,
// Underused), the rules that keep a node (annotations, PodDisruptionBudgets, pods
// without a controller or with local storage, minNodes, node-group minimum sizes,
// maxParallel, cooldown) and the scheduler core's what-if call that answers whether a
// node's pods, and the pending gangs that need it, still fit without it. GPUs that are
// allocated but unused are reported, never drained.
//
// Deciding is separate from doing: Planner.Plan returns a Plan and changes nothing; an
// actuator carries it out.
package autoscale
