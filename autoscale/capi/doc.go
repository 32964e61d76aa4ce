// Package capi removes the Cluster API Machines behind drained GPU nodes; it is the only
// package of Tessera that imports Cluster API's types (sigs.k8s.io/cluster-api/api,
// core v1beta2).
//
// A workload-cluster Node maps to its Machine in the management cluster through the
// Node's cluster.x-k8s.io/machine and cluster.x-k8s.io/cluster-namespace annotations,
// else through a Machine's status.nodeRef or spec.providerID. The Machine's node group
// is the MachineDeployment owning its MachineSet, or the MachineSet itself; the group's
// cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size annotation is its floor.
// Removing a node annotates its Machine cluster.x-k8s.io/delete-machine (so that the
// MachineSet deletes that Machine first) and lowers the group's replicas by one through
// the scale subresource. MachinePools and control-plane Machines are never removed.
package capi
