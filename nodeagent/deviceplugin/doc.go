// Package deviceplugin serves the kubelet device plugin (deviceplugin/v1beta1) for
// tessera.dev/gpu and tessera.dev/gpu-slice. Each GPU is advertised as a configurable
// number of shares. Allocate hands out the GPUs the scheduler recorded in the pod's
// tessera.dev/gpu-assignment annotation, never the IDs the kubelet happened to pick;
// GetPreferredAllocation steers the kubelet's bookkeeping to the same GPUs.
//
// The kubelet's Allocate does not say which pod it is for, so the plugin works it out,
// and does not guess:
//   - The candidates are the pending pods on the node whose next container not yet
//     allocated asks for as many devices. Containers already allocated are those the
//     plugin handed devices to (kept by pod UID: a pod deleted and created again under
//     its name is another pod), those the kubelet's pod resources API lists with
//     devices (by namespace and name; an entry holding devices the plugin gave an
//     earlier pod of that name is that pod's), and all of those of a pod with container
//     statuses.
//   - Of these, only pods the kubelet lists in its pod resources API can be the one: it
//     lists the pod it is admitting before it allocates it, and does not list pods it
//     has not received yet, such as an older pod bound after a younger one.
//   - If several remain, the devices the kubelet passes decide: devices the plugin gave
//     another container of one candidate (the kubelet reuses an init container's
//     devices), or the devices GetPreferredAllocation preferred for the one pod it could
//     tell just before.
//   - If several still remain and they were assigned different GPUs, Allocate refuses:
//     the kubelet fails that pod's admission and its controller creates it again, rather
//     than one pod getting another's GPUs. Candidates assigned the same GPUs get the same
//     either way.
//
// With MPS a memory slice is enforced: its container gets the MPS pipe directory and
// CUDA_MPS_PIPE_DIRECTORY, and its limit is held by the MPS control daemon. A slice on a
// GPU not in EXCLUSIVE_PROCESS compute mode, or with no control daemon answering, is
// refused.
package deviceplugin
