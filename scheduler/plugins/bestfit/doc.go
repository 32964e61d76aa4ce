// Package bestfit is the best-fit baseline of the FGD paper's simulator:
// 100 x (1 - sum_i w_i (free_i - req_i) / maxSpec_i) over CPU and GPU, w = 0.5 each,
// maxSpec 128 CPUs and 8 GPUs, truncated to an integer; shares go to the best-fitting GPU.
package bestfit
