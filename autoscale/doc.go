// Package autoscale decides which GPU nodes may be removed: idle detection (no
// GPU-requesting pod bound, GPU utilization below the ScaleDownPolicy threshold, both
// for longer than idleAfter), candidate methods behind one interface (Empty,
// Underused), the rules that keep a node (annotations, PodDisruptionBudgets, pods
// without a controller or with local storage, minNodes, node-group minimum sizes,
// maxParallel, cooldown) and the scheduler core's what-if call that answers whether a
// node's pods, and the pending gangs that need it, still fit without it. GPUs that are
// allocated but unused are reported, never drained.
//
// Deciding is separate from doing: Planner.Plan returns a Plan and changes nothing; the
// Actuator carries it out, one step per node and round: taint the candidate
// tessera.dev/scale-down-candidate:PreferNoSchedule, plan again after a delay, cordon,
// drain through the Eviction API, mark its machine for deletion and lower its node group
// by one through an Infrastructure (autoscale/capi for Cluster API), record the
// scale-down in the ScaleDownPolicy's status. Where each node stands lives on the API
// objects (the taint, spec.unschedulable, the node's tessera.dev/scale-down annotation,
// the Machine's annotations, the policy's status), so a restarted controller carries on
// where the last one stopped and never lowers a group twice; a failed step is undone.
// NewManager runs the actuator as `tessera autoscaler` does.
package autoscale
