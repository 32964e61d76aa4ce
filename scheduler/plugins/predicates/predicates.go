package predicates

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "predicates"

// Predicates is the filter plugin.
type Predicates struct{}

var _ framework.Filter = Predicates{}

// Name implements framework.Plugin.
func (Predicates) Name() string { return Name }

var scheduleTaints = func(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// Filter implements framework.Filter.
func (Predicates) Filter(t *framework.Task, n *framework.Node) framework.FitCode {
	if n.Unschedulable && !t.Tolerates(&unschedulableTaint) {
		return framework.FitUnschedulable
	}
	if len(n.Taints) > 0 {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Taints, t.Tolerations, scheduleTaints, true); untolerated {
			return framework.FitTaint
		}
	}
	if t.HasNodeConstraints() {
		if ok, err := t.RequiredAffinity().Match(n.Object()); !ok || err != nil {
			return framework.FitNodeSelector
		}
	}
	if code := fitResources(&t.Request, &n.Used, &n.Allocatable); code != framework.FitOK {
		return code
	}
	return FitGPU(&t.GPU, n)
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

func fitResources(req, used, alloc *framework.Resources) framework.FitCode {
	switch {
	case req.MilliCPU > 0 && used.MilliCPU+req.MilliCPU > alloc.MilliCPU:
		return framework.FitCPU
	case req.Memory > 0 && used.Memory+req.Memory > alloc.Memory:
		return framework.FitMemory
	case req.Pods > 0 && used.Pods+req.Pods > alloc.Pods:
		return framework.FitPods
	}
	if req.Scalar == nil {
		return framework.FitOK
	}
	for k, v := range req.Scalar {
		if v > 0 && used.Scalar[k]+v > alloc.Scalar[k] {
			return framework.FitScalar
		}
	}
	return framework.FitOK
}

// FitGPU checks the GPU part of a request against a node's free GPUs.
func FitGPU(r *framework.GPURequest, n *framework.Node) framework.FitCode {
	if !r.Any() {
		return framework.FitOK
	}
	if len(n.GPUs) == 0 || !r.AllowsModel(n.GPUModel) {
		return framework.FitGPUModel
	}
	if !n.ClaimsLikeExtended(r) {
		return fitClaimGPU(r, n)
	}
	switch {
	case r.Count > 0:
		if n.FreeWholeGPUs() < r.Count {
			return framework.FitGPUCount
		}
	case r.Milli > 0:
		if n.MaxFreeMilli() < r.Milli {
			return framework.FitGPUMemory
		}
	default:
		for i := range n.GPUs {
			if framework.FitsGPU(r, &n.GPUs[i]) {
				return framework.FitOK
			}
		}
		return framework.FitGPUMemory
	}
	return framework.FitOK
}

// fitClaimGPU checks a request made through resource claims, GPU by GPU: only the GPUs
// the claims accept count.
func fitClaimGPU(r *framework.GPURequest, n *framework.Node) framework.FitCode {
	accepted, fits := 0, 0
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if !r.AllowsDevice(g) {
			continue
		}
		accepted++
		if framework.FitsGPU(r, g) && (r.Count == 0 || g.UsedMilli == 0) {
			fits++
		}
	}
	switch {
	case accepted == 0:
		return framework.FitGPUDevice
	case r.Count > 0 && fits < r.Count:
		return framework.FitGPUCount
	case fits == 0:
		return framework.FitGPUMemory
	}
	return framework.FitOK
}
