package framework

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// MilliPerGPU is the number of GPU milli-units in one whole GPU.
const MilliPerGPU = 1000

// Resources is a vector of the quantities the scheduler accounts for. GPU is in
// milli-GPUs (1000 = one whole GPU), so whole GPUs and shares add up.
type Resources struct {
	MilliCPU int64
	Memory   int64 // bytes
	GPU      int64 // milli-GPUs
	Pods     int64
	// Scalar holds other extended resources; nil for most tasks.
	Scalar map[corev1.ResourceName]int64
}

// Unlimited is a Resources that nothing exceeds.
var Unlimited = Resources{MilliCPU: math.MaxInt64 / 4, Memory: math.MaxInt64 / 4, GPU: math.MaxInt64 / 4, Pods: math.MaxInt64 / 4}

// Add adds o to r.
func (r *Resources) Add(o *Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.GPU += o.GPU
	r.Pods += o.Pods
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[corev1.ResourceName]int64{}
		}
		r.Scalar[k] += v
	}
}

// Sub subtracts o from r.
func (r *Resources) Sub(o *Resources) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.GPU -= o.GPU
	r.Pods -= o.Pods
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[corev1.ResourceName]int64{}
		}
		r.Scalar[k] -= v
	}
}

// AtLeastZero returns r with every negative dimension raised to 0.
func (r Resources) AtLeastZero() Resources {
	out := Resources{MilliCPU: max(r.MilliCPU, 0), Memory: max(r.Memory, 0), GPU: max(r.GPU, 0), Pods: max(r.Pods, 0)}
	for k, v := range r.Scalar {
		if v > 0 {
			if out.Scalar == nil {
				out.Scalar = map[corev1.ResourceName]int64{}
			}
			out.Scalar[k] = v
		}
	}
	return out
}

// Clone returns a deep copy.
func (r Resources) Clone() Resources {
	if r.Scalar != nil {
		m := make(map[corev1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			m[k] = v
		}
		r.Scalar = m
	}
	return r
}

// FitsIn reports whether r + used <= limit for every resource r asks for, and if not,
// the first resource that does not fit.
func (r *Resources) FitsIn(used, limit *Resources) (bool, corev1.ResourceName) {
	switch {
	case r.MilliCPU > 0 && used.MilliCPU+r.MilliCPU > limit.MilliCPU:
		return false, corev1.ResourceCPU
	case r.Memory > 0 && used.Memory+r.Memory > limit.Memory:
		return false, corev1.ResourceMemory
	case r.GPU > 0 && used.GPU+r.GPU > limit.GPU:
		return false, tesserav1.ResourceGPU
	case r.Pods > 0 && used.Pods+r.Pods > limit.Pods:
		return false, corev1.ResourcePods
	}
	for k, v := range r.Scalar {
		if v > 0 && used.Scalar[k]+v > limit.Scalar[k] {
			return false, k
		}
	}
	return true, ""
}

// FitsCapability is FitsIn against a queue capability: extended resources that the
// capability does not name are not limited.
func (r *Resources) FitsCapability(used, capability *Resources) (bool, corev1.ResourceName) {
	if r.Scalar == nil {
		return r.FitsIn(used, capability)
	}
	limit := *capability
	limit.Scalar = make(map[corev1.ResourceName]int64, len(r.Scalar))
	for k := range r.Scalar {
		if v, ok := capability.Scalar[k]; ok {
			limit.Scalar[k] = v
		} else {
			limit.Scalar[k] = Unlimited.MilliCPU
		}
	}
	return r.FitsIn(used, &limit)
}

// FormatDim prints one dimension of r in the unit people use for it: CPUs, Mi, GPUs.
func FormatDim(name corev1.ResourceName, r *Resources) string {
	switch name {
	case corev1.ResourceCPU:
		return fmt.Sprintf("%g", float64(r.MilliCPU)/1000)
	case corev1.ResourceMemory:
		return fmt.Sprintf("%dMi", r.Memory>>20)
	case tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU:
		return FormatGPU(r.GPU)
	}
	return fmt.Sprint(r.Get(name))
}

// UnitOf names a dimension in messages ("GPU" for GPUs, else the resource name).
func UnitOf(name corev1.ResourceName) string {
	if name == tesserav1.ResourceGPU || name == tesserav1.ResourceNvidiaGPU {
		return "GPU"
	}
	return string(name)
}

// IsZero reports whether r holds nothing.
func (r *Resources) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.GPU != 0 || r.Pods != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// Get returns one dimension by resource name.
func (r *Resources) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	case tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU:
		return r.GPU
	case corev1.ResourcePods:
		return r.Pods
	}
	return r.Scalar[name]
}

// String prints the non-zero dimensions in Kubernetes units.
func (r Resources) String() string {
	var parts []string
	if r.MilliCPU != 0 {
		parts = append(parts, "cpu="+resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String())
	}
	if r.Memory != 0 {
		parts = append(parts, "memory="+resource.NewQuantity(r.Memory, resource.BinarySI).String())
	}
	if r.GPU != 0 {
		parts = append(parts, "gpu="+FormatGPU(r.GPU))
	}
	keys := make([]string, 0, len(r.Scalar))
	for k := range r.Scalar {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, r.Scalar[corev1.ResourceName(k)]))
	}
	return strings.Join(parts, ",")
}

// FormatGPU prints milli-GPUs as a GPU count ("8", "2.5").
func FormatGPU(milli int64) string {
	if milli%MilliPerGPU == 0 {
		return fmt.Sprintf("%d", milli/MilliPerGPU)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", float64(milli)/MilliPerGPU), "0"), ".")
}

// FromResourceList converts a Kubernetes ResourceList. tessera.dev/gpu and
// nvidia.com/gpu count whole GPUs (fractions allowed); tessera.dev/gpu-memory is not
// part of the vector (it is a per-GPU request, see GPURequest).
func FromResourceList(rl corev1.ResourceList) Resources {
	var r Resources
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		case tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU:
			r.GPU += q.MilliValue()
		case corev1.ResourcePods:
			r.Pods = q.Value()
		case tesserav1.ResourceGPUMemory:
		default:
			if r.Scalar == nil {
				r.Scalar = map[corev1.ResourceName]int64{}
			}
			r.Scalar[name] = q.Value()
		}
	}
	return r
}
