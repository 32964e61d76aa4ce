package nodeagent

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/nodeagent/metrics"
)

// podSlice is one pod's GPU-memory slice on this node.
type podSlice struct {
	pod      *corev1.Pod
	sliceMiB int64 // the request
	limitMiB int64 // the limit: the request unless the pod sets one
	usedB    uint64
	gpus     []string
}

// slices exports each running sliced pod's limit and use (use: bytes by pod UID and
// GPU UUID, see podGPUUse), and records an Event when a pod goes above its slice's
// limit (its request unless it sets a limit, tesserav1.AnnotationGPUMemoryLimit).
func (a *Agent) slices(pods map[types.UID]assignedPod, use map[types.UID]map[string]uint64) {
	byUID := map[types.UID]*podSlice{}
	for uid, ap := range pods {
		if ended(ap.pod) {
			continue
		}
		s := &podSlice{pod: ap.pod}
		for u, mib := range ap.requestMiB {
			if mib > 0 {
				s.sliceMiB += mib
				s.limitMiB += ap.limitMiB[u]
				s.gpus = append(s.gpus, u)
			}
		}
		if s.sliceMiB == 0 {
			continue
		}
		sort.Strings(s.gpus)
		for _, b := range use[uid] {
			s.usedB += b
		}
		byUID[uid] = s
	}
	out := make([]metrics.Slice, 0, len(byUID))
	for uid, s := range byUID {
		out = append(out, metrics.Slice{Namespace: s.pod.Namespace, Pod: s.pod.Name, LimitBytes: uint64(s.sliceMiB) << 20, UsedBytes: s.usedB})
		over := s.usedB > uint64(s.limitMiB)<<20
		if over && !a.overused[uid] && a.deps.Recorder != nil {
			a.deps.Recorder.Event(s.pod, corev1.EventTypeWarning, ReasonSliceExceeded, fmt.Sprintf(
				"pod uses %d MiB of GPU memory on %v, above its limit of %d MiB (slice %d MiB): it may fail to allocate or crowd out the pods sharing the GPU",
				s.usedB>>20, s.gpus, s.limitMiB, s.sliceMiB))
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
