// Package gpuclustering is the GPU-clustering baseline of the FGD paper's simulator:
// nodes already running only tasks of the same GPU request class (any share of one GPU,
// or the same count of whole GPUs) score highest, then
// nodes whose mix includes that shape, then idle nodes, then the rest; within a band,
// less GPU left scores higher.
package gpuclustering
