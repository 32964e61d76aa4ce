// Package nodeorder is the part of Volcano's nodeorder plugin (volcano-sh/volcano
// v1.16.0-alpha.1, pkg/scheduler/plugins/nodeorder/nodeorder.go) that scores by
// resources, with its default weights: kube-scheduler's LeastAllocated over cpu and
// memory (leastrequested.weight 1), MostAllocated (mostrequested.weight 0) and
// BalancedAllocation over cpu, memory and the GPU (balancedresource.weight 1). With
// Volcano's default binpack (cpu and memory at weight 1), leastrequested cancels
// binpack exactly, and balancedresource decides. The affinity, taint, image and
// spread scores it also sums are accepted as arguments and left out: they are the
// same on every node the simulator's pods fit.
package nodeorder
