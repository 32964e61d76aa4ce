// Command tessera-node-agent is Tessera's node agent, run by a DaemonSet on every GPU
// node: NVML discovery, the GPUNode and Node publisher, the kubelet device plugin for
// tessera.dev/gpu, the DRA driver gpu.tessera.dev, utilisation sampling and Prometheus
// metrics (package nodeagent).
//
// It is the one cgo binary of Tessera: go-nvml loads libnvidia-ml.so.1 from the host
// driver at run time, so it is built with CGO_ENABLED=1 against glibc
// (Dockerfile.node-agent). Everything else is the pure-Go tessera binary (cmd/tessera).
// --fake-gpus runs the agent on go-nvml's simulated servers, without GPUs;
// --fake-compute-mode puts their GPUs in a compute mode (exclusive-process to share them
// by memory through DRA).
package main
