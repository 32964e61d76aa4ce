// Package pressure decides the node agent's GPU-memory pressure evictions. A pod asks a
// slice of one GPU (its request, tessera.dev/gpu-memory) and may use more, up to its
// limit, while the GPU has the memory free. When a GPU runs short, the pod furthest
// above its request, relative to its request, is evicted; pods at or below their
// requests never are, nor pods without a limit above their request (limit = request),
// even where nothing holds them to it.
//
// A GPU is short when its memory in use is above Policy.ThresholdPercent of its memory
// (Threshold), or when a pod that just arrived on it (bound, its request not reached
// yet, for less than Policy.ArrivalWindow) would push the use past that threshold once it
// takes its request (Arrival). Decide is a pure function of one GPU's reading; Tracker
// keeps what must outlive one reading: when each pod arrived, and the evictions still
// in flight, so that a GPU waits for its victim to go before the next decision and no
// pod is evicted twice. The node agent reads the GPUs, asks the Eviction API and records
// the event and metric.
package pressure
