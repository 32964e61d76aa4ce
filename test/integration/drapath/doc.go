// Package drapath tests the whole Dynamic Resource Allocation path of Tessera's GPUs
// against a real kube-apiserver and etcd: the node agent publishing its node's GPUs and
// serving the kubelet plugin, the scheduler allocating claims and binding their pods,
// and the kubelet preparing the claims on the plugin's socket.
//
// It is a package of its own because the node agent links NVML through cgo, resolved
// only when NVML is loaded: a test binary that also links Go's plugin package (as
// package integration does, through kustomize) is bound at start and would not run on a
// machine without the NVIDIA driver.
package drapath
