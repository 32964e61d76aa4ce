#!/usr/bin/env bash
# Runs the node agent's NVML discovery and sampling on this machine's real GPUs and
# compares them with nvidia-smi (index, UUID, model, memory, PCI bus id, MIG mode,
# driver and CUDA versions, NUMA node from sysfs; utilisation, memory used and
# temperature within tolerances), then prints the discovered links next to
# `nvidia-smi topo -m`. Needs the NVIDIA driver (libnvidia-ml.so.1, nvidia-smi).
#
#   hack/gpu-check.sh            # with Go: builds and runs the check
#   hack/gpu-check.sh --build    # without a GPU: only builds bin/nvidia-gpu.test
#   bin/nvidia-gpu.test -test.v  # on a GPU machine without Go
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=./nodeagent/nvidia
if [[ "${1:-}" == "--build" ]]; then
  mkdir -p bin
  CGO_ENABLED=1 go test -c -tags gpu -o bin/nvidia-gpu.test "$pkg"
  echo "built bin/nvidia-gpu.test"
  exit 0
fi
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found; run this on a machine with the NVIDIA driver" >&2; exit 1; }
nvidia-smi -L
if command -v go >/dev/null; then
  CGO_ENABLED=1 go test -count=1 -tags gpu -run TestRealGPUMatchesNvidiaSMI -v "$pkg"
elif [[ -x bin/nvidia-gpu.test ]]; then
  bin/nvidia-gpu.test -test.run TestRealGPUMatchesNvidiaSMI -test.v
else
  echo "gpu-check: neither go nor bin/nvidia-gpu.test (build it with: hack/gpu-check.sh --build)" >&2
  exit 1
fi
