// Package mps sets GPU-memory limits in the node's CUDA MPS control daemon
// (nvidia-cuda-mps-control), where the containers that share a GPU cannot raise them.
package mps
