// Package gpufit is Tessera's fragmentation-aware GPU placer. It follows the FGD paper's
// fragmentation gradient (how much of the node's free GPU share the workload's typical
// pods could no longer use after the placement) and adds what FGD misses: GPU share
// that the node's remaining CPU (or memory) cannot feed at the workload's CPU-per-GPU
// (memory-per-GPU) ratio counts as fragmented too, so CPU-only and CPU-heavy pods stop
// stranding GPUs; and GPU share that the workload's model-constrained pods will need
// (their demand against the free GPUs of the models they accept) costs what it strands,
// so pods that may run anywhere leave the scarce models to those that may not. The
// gradient is rounded to bands (0.2 GPU by default) and ties go to the fuller node, so
// whole nodes stay free. Arguments: gpufit.bandMilli, gpufit.cpuStrandWeight.
package gpufit
