// Package cache keeps the cluster state the scheduler decides on: informers (through
// controller-runtime's cache) over Pods, Nodes, GPUNodes, Queues, PodGroups,
// PriorityClasses, PodDisruptionBudgets, Namespaces and batch Jobs, with unused fields
// stripped. Snapshot turns the current state into a fresh framework.Snapshot through
// snapshot.Builder; once Watch's event handlers have seen every object, the cache keeps
// the objects as the events report them and converts only the nodes and pods that
// changed since the last snapshot (snapshot.Memo), so a session pays for what changed
// rather than for the whole cluster's conversion. Assume overlays decisions the scheduler made that the informers
// have not reported back yet, so that a session never places onto capacity a bind of
// the previous one already took. Changed signals when a relevant object changes.
//
// The scheduler daemon (scheduler/k8s) and the autoscaler share it; neither converts
// API objects itself.
package cache
