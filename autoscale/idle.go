package autoscale

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// IdleGPUs finds pods whose GPUs are allocated but unused: every utilization sample
// of the pod stayed at or below Threshold for longer than After. Such pods are
// reported (tessera_gpu_allocated_idle_gpus and an event on the pod), never evicted:
// the owner decides. It is not safe for concurrent use.
type IdleGPUs struct {
	Threshold float64
	After     time.Duration
	since     map[string]time.Time // pod -> first sample of the current idle stretch
	gpus      map[string]int
}

// IdlePod is a pod whose allocated GPUs sat idle since Since.
type IdlePod struct {
	Pod   string
	GPUs  int
	Since time.Time
}

// Observe records a sample: utilization (percent, the highest over the pod's GPUs) of
// pod, which holds gpus GPUs, at now.
func (d *IdleGPUs) Observe(pod string, gpus int, utilization float64, now time.Time) {
	if d.since == nil {
		d.since, d.gpus = map[string]time.Time{}, map[string]int{}
	}
	d.gpus[pod] = gpus
	if utilization > d.Threshold {
		delete(d.since, pod)
		return
	}
	if _, ok := d.since[pod]; !ok {
		d.since[pod] = now
	}
}

// Forget drops a pod that ended.
func (d *IdleGPUs) Forget(pod string) {
	delete(d.since, pod)
	delete(d.gpus, pod)
}

// Known lists the pods observed and not forgotten.
func (d *IdleGPUs) Known() []string {
	out := make([]string, 0, len(d.gpus))
	for pod := range d.gpus {
		out = append(out, pod)
	}
	return out
}

// Idle lists the pods idle for longer than After at now, by name.
func (d *IdleGPUs) Idle(now time.Time) []IdlePod {
	var out []IdlePod
	for pod, s := range d.since {
		if now.Sub(s) > d.After {
			out = append(out, IdlePod{Pod: pod, GPUs: d.gpus[pod], Since: s})
		}
	}
	slices.SortFunc(out, func(a, b IdlePod) int { return cmp.Compare(a.Pod, b.Pod) })
	return out
}

// PodUtilization is the highest last-sampled utilization (percent) of the GPUs the
// scheduler assigned to p (tessera.dev/gpu-assignment), as gn reports them, and how
// many they are; ok is false for a pod without an assignment or with a GPU gn does not
// report. A slice shares its GPU with other pods: it is as busy as the GPU.
func PodUtilization(p *corev1.Pod, gn *tesserav1.GPUNode) (util float64, gpus int, ok bool) {
	v := p.Annotations[tesserav1.AnnotationGPUAssign]
	if v == "" {
		return 0, 0, false
	}
	a, err := tesserav1.ParseGPUAssignment(v)
	if err != nil {
		return 0, 0, false
	}
	byUUID := map[string]int32{}
	for _, dev := range gn.Status.Devices {
		byUUID[dev.UUID] = dev.UtilizationPercent
	}
	seen := map[string]bool{}
	for _, c := range a.Containers {
		for _, u := range c.UUIDs {
			pct, found := byUUID[u]
			if !found {
				return 0, 0, false
			}
			if !seen[u] {
				seen[u] = true
				util = max(util, float64(pct))
			}
		}
	}
	return util, len(seen), len(seen) > 0
}
