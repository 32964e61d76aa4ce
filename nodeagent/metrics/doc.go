// Package metrics holds the node agent's Prometheus metrics, shaped like NVIDIA's DCGM
// exporter where they overlap (one series per GPU, labelled gpu, uuid, model and
// node), plus per-pod GPU-memory slice limits and usage for the OOM early warning.
package metrics
