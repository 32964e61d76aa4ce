// Package dra is the node agent's Dynamic Resource Allocation driver, gpu.tessera.dev:
// it publishes the node's GPUs as one ResourceSlice pool (pool name = node name, one
// device gpu-<NVML index> per GPU, a consumable `memory` capacity) and serves the
// kubelet plugin (k8s.io/dynamic-resource-allocation/kubeletplugin) that prepares the
// ResourceClaims allocated on the node.
//
// Preparing a claim writes one CDI spec (package cdi) and hands each allocated GPU to
// its containers as two CDI devices: the NVIDIA container toolkit's <CDIKind>=<UUID>
// and the claim's own tessera.dev/claim device. For a memory share that device sets
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT to the share and CUDA_MPS_PIPE_DIRECTORY, and mounts
// the MPS control daemon's pipe directory. A share is refused, with an error in the
// pod's events and a Warning event on the claim, unless its GPU is in EXCLUSIVE_PROCESS
// compute mode with the MPS control daemon running: without both, nothing holds a
// container to its share.
//
// Sharing GPUs (MPS on, EXCLUSIVE_PROCESS) are published with allowMultipleAllocations
// and a request policy on `memory` (minimum and step the share granularity, default and
// maximum the whole GPU rounded down to the step); other GPUs are published whole
// (the API allows a request policy only with allowMultipleAllocations). Unhealthy GPUs
// stay in the pool with the NoSchedule taint gpu.tessera.dev/unhealthy: no new claim
// gets them, the claims already allocated keep their device.
package dra
