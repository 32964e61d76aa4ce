package rightsize

import "strings"

// oomMessages are what CUDA frameworks print when the GPU has no memory left.
var oomMessages = []string{
	"cuda out of memory",                  // PyTorch
	"cuda error: out of memory",           // CUDA runtime
	"cuda_error_out_of_memory",            // driver API, NCCL
	"resource_exhausted: out of memory",   // TensorFlow, JAX
	"outofmemoryerror",                    // torch.OutOfMemoryError / torch.cuda.OutOfMemoryError
	"failed to allocate memory on device", // XLA
}

// OutOfMemory reports whether a failed run ran out of GPU memory: its termination
// message or last log lines carry a CUDA out-of-memory message, or its peak reached
// its slice (within 2%).
func OutOfMemory(message string, peakMiB, limitMiB int64) bool {
	m := strings.ToLower(message)
	for _, s := range oomMessages {
		if strings.Contains(m, s) {
			return true
		}
	}
	return limitMiB > 0 && peakMiB*100 >= limitMiB*98
}
