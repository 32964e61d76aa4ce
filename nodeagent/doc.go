// Package nodeagent is `tessera node-agent`, the DaemonSet on GPU nodes. It discovers
// the GPUs through NVML (package nvidia, behind gpu.Source), publishes them in the
// node's GPUNode and on the Node (package publish), serves the kubelet device plugin
// for tessera.dev/gpu (package deviceplugin), samples utilisation, memory, temperature
// and per-pod GPU memory every interval (package cgroup maps processes to pods),
// exports Prometheus metrics (package metrics) and warns with an Event when a pod uses
// more GPU memory than its slice. It keeps each GPU pod's peak GPU memory in the
// GPUNode's status.pods, for the right-sizing recommender (usage.go). A slice's limit
// (tessera.dev/gpu-memory-limit) may be above its request; when a GPU runs short the
// agent evicts the pod furthest above its request through the Eviction API (package
// pressure decides, pressure.go asks and records). When NVML is missing or failing it says so in a log
// line and in the GPUNode's Healthy condition, marks the GPUs unhealthy and retries
// with backoff; it never exits for it.
//
// Where the API server serves resource.k8s.io/v1 (Config.DRA auto, or on), the agent is
// also the node's DRA driver gpu.tessera.dev (package dra): it publishes the GPUs as the
// node's ResourceSlice pool, re-reading the inventory every sample so that a compute
// mode changed with nvidia-smi or a GPU turning unhealthy reaches the pool, and prepares
// the claims allocated on the node through the kubelet plugin, with a CDI spec per claim
// (package cdi). The device plugin keeps serving its extended resources then, so that
// pods asking for tessera.dev/gpu keep working, unless Config.ExtendedResourceClaims
// leaves their GPUs to the claims Tessera's scheduler makes for them (KEP-5004's
// extended resources backed by DRA): then GPUs reach containers only through claims. While the
// container toolkit's configuration refuses delivery, the pool is published empty and
// every claim is refused, as the device plugin advertises no device.
package nodeagent
