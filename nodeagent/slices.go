package nodeagent

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/nodeagent/metrics"
)

// podSlice is one pod's GPU-memory slice on this node.
type podSlice struct {
	pod      *corev1.Pod
	limitMiB int64
	usedB    uint64
	gpus     []string
}

// slices maps GPU processes to pods through their cgroups, exports each sliced pod's
// limit and use, and records an Event when a pod goes above its slice.
func (a *Agent) slices(pods []corev1.Pod, samples []gpu.Sample) {
	byUID := map[types.UID]*podSlice{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != a.cfg.NodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ann, ok := p.Annotations[tesserav1.AnnotationGPUAssign]
		if !ok {
			continue
		}
		as, err := tesserav1.ParseGPUAssignment(ann)
		if err != nil || as.Node != a.cfg.NodeName {
			continue // the device plugin refuses such pods, with the reason
		}
		s := &podSlice{pod: p}
		for _, c := range as.Containers {
			if c.MemoryMiB > 0 {
				s.limitMiB += c.MemoryMiB
				s.gpus = append(s.gpus, c.UUIDs...)
			}
		}
		if s.limitMiB > 0 {
			byUID[p.UID] = s
		}
	}
	for _, smp := range samples {
		for _, proc := range smp.Processes {
			owner, ok, err := a.cgroups.Owner(proc.PID)
			if err != nil {
				a.deps.Log.V(1).Info("Cannot map GPU process to a pod", "pid", proc.PID, "err", err.Error())
				continue
			}
			if s := byUID[types.UID(owner.PodUID)]; ok && s != nil {
				s.usedB += proc.MemoryUsedBytes
			}
		}
	}
	out := make([]metrics.Slice, 0, len(byUID))
	for uid, s := range byUID {
		out = append(out, metrics.Slice{Namespace: s.pod.Namespace, Pod: s.pod.Name, LimitBytes: uint64(s.limitMiB) << 20, UsedBytes: s.usedB})
		over := s.usedB > uint64(s.limitMiB)<<20
		if over && !a.overused[uid] && a.deps.Recorder != nil {
			a.deps.Recorder.Event(s.pod, corev1.EventTypeWarning, ReasonSliceExceeded, fmt.Sprintf(
				"pod uses %d MiB of GPU memory on %v, above its slice of %d MiB: it may fail to allocate or crowd out the pods sharing the GPU",
				s.usedB>>20, s.gpus, s.limitMiB))
		}
		a.overused[uid] = over
	}
	for uid := range a.overused {
		if byUID[uid] == nil {
			delete(a.overused, uid)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Pod < out[j].Namespace+"/"+out[j].Pod })
	a.metrics.SetSlices(out)
}
