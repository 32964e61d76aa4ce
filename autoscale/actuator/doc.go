// Package actuator carries out the plans of package autoscale against a cluster, one
// step per node and round: taint the candidate tessera.dev/scale-down-candidate:
// PreferNoSchedule, plan again after a delay, cordon, drain through the Eviction API,
// mark its machine for deletion and lower its node group by one through an
// Infrastructure (autoscale/capi for Cluster API), record the scale-down in the
// ScaleDownPolicy's status. Where each node stands lives on the API objects (the
// taint, spec.unschedulable, the node's tessera.dev/scale-down annotation, the Machine's
// annotations, the policy's status), so a restarted controller carries on where the last
// one stopped and never lowers a group twice; a failed step is undone. ReadCluster
// builds the planner's input from the cluster; NewManager runs the actuator as
// `tessera autoscaler` does.
package actuator
