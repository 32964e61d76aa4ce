// Package gpu holds the node agent's vendor-neutral view of a node's GPUs: the inventory
// discovered at start (devices, pairwise links, NVLink islands), periodic samples and
// health events, and the Source interface that the NVML adapter (package nvidia)
// implements. It imports no NVML.
package gpu
