// Package tainttoleration is kube-scheduler's TaintToleration score: a node with
// PreferNoSchedule taints the task does not tolerate scores lower, so work goes there
// only when no better node fits. The autoscaler's scale-down candidate taint is one
// such taint: new work keeps off nodes that are on their way out.
package tainttoleration
