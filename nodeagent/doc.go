// Package nodeagent is `tessera node-agent`, the DaemonSet on GPU nodes. It discovers
// the GPUs through NVML (package nvidia, behind gpu.Source), publishes them in the
// node's GPUNode and on the Node (package publish), serves the kubelet device plugin
// for tessera.dev/gpu (package deviceplugin), samples utilisation, memory, temperature
// and per-pod GPU memory every interval (package cgroup maps processes to pods),
// exports Prometheus metrics (package metrics) and warns with an Event when a pod uses
// more GPU memory than its slice. It keeps each GPU pod's peak GPU memory in the
// GPUNode's status.pods, for the right-sizing recommender (usage.go). When NVML is missing or failing it says so in a log
// line and in the GPUNode's Healthy condition, marks the GPUs unhealthy and retries
// with backoff; it never exits for it.
package nodeagent
