package nodeagent

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/rightsize"
)

// Bounds of the pods' GPU-memory history published in the GPUNode status.
const (
	// endedKeep is how long an ended pod's entry stays, so that the recommender sees
	// its final peak.
	endedKeep = 5 * time.Minute
	// maxPodEntries bounds status.pods (the CRD allows 256).
	maxPodEntries = 256
	// A running pod's published peak moves only when the peak grew by peakStepPercent
	// or peakStepMiB, whichever is less, so that the entries do not change with every
	// sample; an ended pod's entry has its exact peak.
	peakStepPercent = 5
	peakStepMiB     = 256
)

// assignedPod is a pod holding Tessera-assigned GPUs on this node.
type assignedPod struct {
	pod *corev1.Pod
	// requestMiB is its slice of each GPU by UUID (the tessera.dev/gpu-memory requests
	// of its containers there); 0 for a whole GPU.
	requestMiB map[string]int64
	// limitMiB is the GPU-memory limit of its slice of each GPU by UUID (the requests
	// where no limit is set, tesserav1.AnnotationGPUMemoryLimit); 0 for a whole GPU.
	limitMiB map[string]int64
}

// assignedPods are the node's pods with a GPU assignment for it, terminated ones
// included, by UID.
func assignedPods(pods []corev1.Pod, node string) map[types.UID]assignedPod {
	out := map[types.UID]assignedPod{}
	for i := range pods {
		p := &pods[i]
		ann, ok := p.Annotations[tesserav1.AnnotationGPUAssign]
		if !ok || p.Spec.NodeName != node {
			continue
		}
		as, err := tesserav1.ParseGPUAssignment(ann)
		if err != nil || as.Node != node {
			continue // the device plugin refuses such pods, with the reason
		}
		ap := assignedPod{pod: p, requestMiB: map[string]int64{}, limitMiB: map[string]int64{}}
		whole := map[string]bool{}
		for _, c := range as.Containers {
			limit := c.MemoryMiB
			if c.MemoryMiB > 0 {
				if l, err := tesserav1.GPUMemoryLimitMiB(p.Annotations, c.Container, c.MemoryMiB); err == nil {
					limit = l // else the device plugin refuses the container its limit
				}
			}
			for _, u := range c.UUIDs {
				ap.requestMiB[u] += c.MemoryMiB
				ap.limitMiB[u] += limit
				whole[u] = whole[u] || c.MemoryMiB == 0
			}
		}
		for u := range whole {
			if whole[u] {
				ap.requestMiB[u], ap.limitMiB[u] = 0, 0
			}
		}
		out[p.UID] = ap
	}
	return out
}

func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podGPUUse maps the GPUs' processes to pods through their cgroups: the bytes each
// pod holds on each GPU, by pod UID and GPU UUID.
func (a *Agent) podGPUUse(samples []gpu.Sample) map[types.UID]map[string]uint64 {
	use := map[types.UID]map[string]uint64{}
	for _, smp := range samples {
		for _, proc := range smp.Processes {
			owner, ok, err := a.cgroups.Owner(proc.PID)
			if err != nil {
				a.deps.Log.V(1).Info("Cannot map GPU process to a pod", "pid", proc.PID, "err", err.Error())
				continue
			}
			if !ok {
				continue
			}
			uid := types.UID(owner.PodUID)
			if use[uid] == nil {
				use[uid] = map[string]uint64{}
			}
			use[uid][smp.UUID] += proc.MemoryUsedBytes
		}
	}
	return use
}

// podMemory is what the agent knows of one pod's GPU-memory use.
type podMemory struct {
	published tesserav1.GPUPodMemory
	peakMiB   int64 // exact, published.PeakMiB lags it by less than a peak step
}

// usageHistory tracks the peak GPU memory of every pod holding Tessera-assigned GPUs.
type usageHistory struct {
	pods map[types.UID]*podMemory
	// seeded is set once a previous agent's entries were taken over (seed).
	seeded bool
}

// seed takes over the entries a previous agent published, so that a restart loses
// neither a running pod's peak so far nor an ended pod's final one.
func (h *usageHistory) seed(prev []tesserav1.GPUPodMemory) {
	if h.pods == nil {
		h.pods = map[types.UID]*podMemory{}
	}
	for _, e := range prev {
		uid := types.UID(e.UID)
		m := h.pods[uid]
		if m == nil {
			h.pods[uid] = &podMemory{published: e, peakMiB: e.PeakMiB}
			continue
		}
		m.published.FirstMiB = e.FirstMiB
		if e.PeakMiB > m.peakMiB {
			m.peakMiB = e.PeakMiB
			m.published.PeakMiB, m.published.GPUMemoryMiB, m.published.LimitMiB = e.PeakMiB, e.GPUMemoryMiB, e.LimitMiB
		}
	}
	h.seeded = true
}

// observe takes one sample: the node's assigned pods (listed), each pod's use per GPU,
// and each GPU's memory in MiB by UUID.
func (h *usageHistory) observe(pods map[types.UID]assignedPod, use map[types.UID]map[string]uint64, gpuMiB map[string]int64, now time.Time) {
	if h.pods == nil {
		h.pods = map[types.UID]*podMemory{}
	}
	for uid, ap := range pods {
		m := h.pods[uid]
		if ended(ap.pod) {
			if m != nil {
				m.end(now)
			}
			continue
		}
		onGPU, perGPU := "", int64(0)
		for u, b := range use[uid] {
			if _, assigned := ap.requestMiB[u]; assigned && (int64(b>>20) > perGPU || int64(b>>20) == perGPU && u < onGPU) {
				onGPU, perGPU = u, int64(b>>20)
			}
		}
		if perGPU == 0 {
			continue
		}
		if m == nil {
			m = &podMemory{published: tesserav1.GPUPodMemory{Namespace: ap.pod.Namespace, Name: ap.pod.Name, UID: string(uid),
				Workload: rightsize.WorkloadKey(ap.pod.Labels, ap.pod.OwnerReferences, ap.pod.Name), FirstMiB: perGPU}}
			h.pods[uid] = m
		}
		if perGPU > m.peakMiB {
			m.peakMiB = perGPU
			m.published.GPUMemoryMiB, m.published.LimitMiB = gpuMiB[onGPU], ap.requestMiB[onGPU]
		}
		if p := m.published.PeakMiB; m.peakMiB-p >= min(peakStepMiB, p*peakStepPercent/100) && m.peakMiB > p {
			m.published.PeakMiB = m.peakMiB
		}
	}
	for uid, m := range h.pods {
		if _, listed := pods[uid]; !listed {
			m.end(now)
		}
		if e := m.published.EndedTime; e != nil && now.Sub(e.Time) >= endedKeep {
			delete(h.pods, uid)
		}
	}
}

// end marks the pod ended, with its exact peak.
func (m *podMemory) end(now time.Time) {
	if m.published.EndedTime == nil {
		t := metav1.NewTime(now)
		m.published.EndedTime, m.published.PeakMiB = &t, m.peakMiB
	}
}

// entries are the GPUNode's status.pods: at most maxPodEntries, running pods and the
// most recently ended ones first kept, sorted by namespace and name.
func (h *usageHistory) entries() []tesserav1.GPUPodMemory {
	out := make([]tesserav1.GPUPodMemory, 0, len(h.pods))
	for _, m := range h.pods {
		out = append(out, m.published)
	}
	if len(out) > maxPodEntries {
		sort.Slice(out, func(i, j int) bool { return endedAfter(out[i].EndedTime, out[j].EndedTime) })
		out = out[:maxPodEntries]
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].UID < out[j].UID
	})
	return out
}

// endedAfter orders running pods (nil) first, then the latest ended.
func endedAfter(a, b *metav1.Time) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b != nil
	default:
		return a.After(b.Time)
	}
}
