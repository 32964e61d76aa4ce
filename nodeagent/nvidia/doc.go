// Package nvidia is the node agent's only importer of NVML (github.com/NVIDIA/go-nvml):
// it implements gpu.Source over an nvml.Interface. Production code passes nvml.New();
// tests pass go-nvml's mock servers (see package nvidiatest).
package nvidia
