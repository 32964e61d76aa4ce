// Package predicates filters nodes for a task: unschedulable nodes, taints and
// tolerations, nodeSelector and required node affinity (through component-helpers),
// CPU, memory, pods, extended resources, GPU model, free whole GPUs and per-GPU free share.
package predicates
