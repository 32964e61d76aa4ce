// Package deviceplugin serves the kubelet device plugin (deviceplugin/v1beta1) for
// tessera.dev/gpu. Each GPU is advertised as a configurable number of shares. The
// kubelet's Allocate carries only device IDs, so the plugin finds the pod being
// admitted (the oldest pending pod on the node whose next unallocated container asks
// for that many shares, as the kubelet admits pods oldest first and containers in
// order) and hands out the GPUs the scheduler recorded in its tessera.dev/gpu-assignment
// annotation, never the IDs the kubelet happened to pick. GetPreferredAllocation steers
// the kubelet's bookkeeping to the same GPUs.
package deviceplugin
