package framework

import (
	"fmt"
	"math/bits"
)

// DerivedGPUUUID is the UUID given to GPU i of node when no node agent reports the
// GPUs' own (a node known by its allocatable GPUs only, a trace's node).
func DerivedGPUUUID(node string, i int) string { return fmt.Sprintf("GPU-%s-%d", node, i) }

// GPU is one physical GPU of a node and what is allocated on it.
type GPU struct {
	Index     int
	UUID      string
	Model     string
	MemoryMiB int64
	// Island groups GPUs joined by NVLink; NUMA is the CPU socket the GPU hangs off.
	Island  int
	NUMA    int
	Healthy bool
	// Device is the GPU's device name in its node's Dynamic Resource Allocation pool
	// ("" when the node publishes none for it: then only extended resources reach it);
	// Shareable says the device takes several allocations (memory shares).
	Device    string
	Shareable bool
	// ViaClaims says GPUs reach pods on the GPU's node only through claims: a request
	// made as extended resources gets a claim the scheduler makes for it, so it needs a
	// device, and one that takes several allocations for a share.
	ViaClaims bool
	// UsedMilli is the allocated share, 0..1000; a whole-GPU task sets it to 1000.
	UsedMilli int64
	// Tasks counts the tasks using the GPU.
	Tasks int
}

// FreeMilli is the unallocated share of the GPU, 0 when unhealthy.
func (g *GPU) FreeMilli() int64 {
	if !g.Healthy {
		return 0
	}
	return MilliPerGPU - g.UsedMilli
}

// MaxGPUsPerNode is the most GPUs a node may have: what a GPUSet can index.
const MaxGPUsPerNode = 64

// CheckGPUCount is nil for 0..MaxGPUsPerNode GPUs on a node, else the error every
// input path reports (the caller prefixes the field).
func CheckGPUCount(n int64) error {
	if n < 0 || n > MaxGPUsPerNode {
		return fmt.Errorf("%d GPUs; at most %d per node are supported (split it into nodes of at most %d)", n, MaxGPUsPerNode, MaxGPUsPerNode)
	}
	return nil
}

// GPUSet is a set of GPU indices on one node (a node has at most MaxGPUsPerNode GPUs).
type GPUSet uint64

// Add returns s with GPU i.
func (s GPUSet) Add(i int) GPUSet { return s | 1<<uint(i) }

// Has reports whether GPU i is in s.
func (s GPUSet) Has(i int) bool { return s&(1<<uint(i)) != 0 }

// Len is the number of GPUs in s.
func (s GPUSet) Len() int { return bits.OnesCount64(uint64(s)) }

// Indices lists the GPUs in s, lowest first.
func (s GPUSet) Indices() []int {
	out := make([]int, 0, s.Len())
	for v := uint64(s); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// GPURequest is what one task asks of GPUs: Count whole GPUs, or a share of one GPU
// given as Milli (a fraction, as in traces) or MemoryMiB (tessera.dev/gpu-memory).
type GPURequest struct {
	Count     int
	Milli     int64
	MemoryMiB int64
	// Models restricts the GPU model; empty allows any.
	Models []string
	// Claim is set when the GPUs come through resource claims (Dynamic Resource
	// Allocation) rather than extended resources.
	Claim *ClaimRequest
}

// ClaimRequest restricts a request made through resource claims to the GPUs that are
// published as devices and that the claims' device classes and selectors accept.
type ClaimRequest struct {
	// Allowed holds the UUIDs of the GPUs the claims accept; nil accepts every GPU
	// published as a device.
	Allowed map[string]bool
	// Match, when set, is a claim's matchAttribute constraints: the values of their
	// attributes for each GPU (by UUID) that has them all. The request's GPUs must all
	// have one value; Allowed holds only GPUs that have the attributes.
	Match map[string]string
	// Distinct is a claim's distinctAttribute constraints, one map each: the value of
	// the attribute for each GPU that has it. The request's GPUs must all have
	// different values of each; Allowed holds only GPUs that have the attributes.
	Distinct []map[string]string
	// Alternatives, when set, are a firstAvailable request's subrequests in order of
	// preference: the GPUs each accepts (within Allowed, which holds them all). The
	// request's GPUs all come from the first alternative the node can serve.
	Alternatives []map[string]bool
}

// alternative is r restricted to its claim's alternative i.
func (r *GPURequest) alternative(i int) *GPURequest {
	c := *r.Claim
	c.Allowed, c.Alternatives = c.Alternatives[i], nil
	alt := *r
	alt.Claim = &c
	return &alt
}

// firstAlternative is the first of r's alternatives that n can serve now, with its
// pick; -1 when none can.
func (r *GPURequest) firstAlternative(n *Node) (int, GPUSet) {
	for i := range r.Claim.Alternatives {
		if gpus := PickGPUs(r.alternative(i), n); gpus != 0 {
			return i, gpus
		}
	}
	return -1, 0
}

// Matches reports whether gpus of n meet the request's matchAttribute and
// distinctAttribute constraints and, for a firstAvailable request, come from the first
// alternative n can serve.
func (r *GPURequest) Matches(n *Node, gpus GPUSet) bool {
	if r.Claim == nil {
		return true
	}
	if r.Claim.Alternatives != nil {
		i, _ := r.firstAlternative(n)
		if i < 0 {
			return false
		}
		for _, g := range gpus.Indices() {
			if !r.Claim.Alternatives[i][n.GPUs[g].UUID] {
				return false
			}
		}
	}
	if m := r.Claim.Match; m != nil {
		first, seen := "", false
		for _, i := range gpus.Indices() {
			v, ok := m[n.GPUs[i].UUID]
			if !ok || seen && v != first {
				return false
			}
			first, seen = v, true
		}
	}
	for _, d := range r.Claim.Distinct {
		values := map[string]bool{}
		for _, i := range gpus.Indices() {
			v, ok := d[n.GPUs[i].UUID]
			if !ok || values[v] {
				return false
			}
			values[v] = true
		}
	}
	return true
}

// AllowsDevice reports whether GPU g can serve the request as far as claims go: always
// for extended-resource requests, unless claims carry g's GPUs (GPU.ViaClaims); for
// claims, g must be published as a device the claims accept and, for a share, take
// several allocations.
func (r *GPURequest) AllowsDevice(g *GPU) bool {
	c := r.Claim
	if c == nil && !g.ViaClaims {
		return true
	}
	return g.Device != "" && (c == nil || c.Allowed == nil || c.Allowed[g.UUID]) && (g.Shareable || !r.Shared())
}

// Any reports whether the task needs a GPU at all.
func (r *GPURequest) Any() bool { return r.Count > 0 || r.Milli > 0 || r.MemoryMiB > 0 }

// Shared reports whether the task asks for part of one GPU.
func (r *GPURequest) Shared() bool { return r.Count == 0 && (r.Milli > 0 || r.MemoryMiB > 0) }

// MilliOn is the share of gpu one of the task's GPUs takes: 1000 for whole GPUs, the
// share for fractional requests, and the memory slice rounded up to whole milli so that
// slices never add up to more than the GPU's memory.
func (r *GPURequest) MilliOn(gpu *GPU) int64 {
	switch {
	case r.Count > 0:
		return MilliPerGPU
	case r.Milli > 0:
		return r.Milli
	case r.MemoryMiB > 0:
		if gpu.MemoryMiB <= 0 {
			return MilliPerGPU + 1 // never fits
		}
		return (r.MemoryMiB*MilliPerGPU + gpu.MemoryMiB - 1) / gpu.MemoryMiB
	}
	return 0
}

// GPUs is the number of GPUs the task occupies.
func (r *GPURequest) GPUs() int {
	if r.Count > 0 {
		return r.Count
	}
	if r.Shared() {
		return 1
	}
	return 0
}

// AllowsModel reports whether a GPU model satisfies the request.
func (r *GPURequest) AllowsModel(model string) bool {
	if len(r.Models) == 0 {
		return true
	}
	for _, m := range r.Models {
		if m == model {
			return true
		}
	}
	return false
}

// NominalMilli estimates the milli-GPUs the task takes before it is placed, counting a
// memory slice against refMemoryMiB (the cluster's largest GPU, an optimistic estimate).
func (r *GPURequest) NominalMilli(refMemoryMiB int64) int64 {
	switch {
	case r.Count > 0:
		return int64(r.Count) * MilliPerGPU
	case r.Milli > 0:
		return r.Milli
	case r.MemoryMiB > 0 && refMemoryMiB > 0:
		return min(MilliPerGPU, (r.MemoryMiB*MilliPerGPU+refMemoryMiB-1)/refMemoryMiB)
	}
	return 0
}

func trailingZeros(v uint64) int { return bits.TrailingZeros64(v) }
