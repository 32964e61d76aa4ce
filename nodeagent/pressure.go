package nodeagent

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/nodeagent/pressure"
)

// pressureGPUs are the readings of the GPUs that hold memory slices: each GPU's memory
// and use, and each unfinished sliced pod's request, limit and use there.
func pressureGPUs(devs []tesserav1.GPUDevice, samples map[string]gpu.Sample, pods map[types.UID]assignedPod,
	use map[types.UID]map[string]uint64) []pressure.GPU {
	byUUID := map[string]*pressure.GPU{}
	for uid, ap := range pods {
		if ended(ap.pod) {
			continue
		}
		for u, req := range ap.requestMiB {
			if req <= 0 {
				continue
			}
			g := byUUID[u]
			if g == nil {
				g = &pressure.GPU{UUID: u}
				byUUID[u] = g
			}
			g.Pods = append(g.Pods, pressure.Pod{UID: uid, Namespace: ap.pod.Namespace, Name: ap.pod.Name, RequestMiB: req,
				LimitMiB: ap.limitMiB[u], UsedMiB: int64(use[uid][u] >> 20), Terminating: ap.pod.DeletionTimestamp != nil})
		}
	}
	var out []pressure.GPU
	for _, d := range devs {
		g, s := byUUID[d.UUID], samples[d.UUID]
		if g == nil || s.Err != nil || d.MemoryMiB <= 1 { // 1: unreadable (see devices)
			continue
		}
		g.Index, g.MemoryMiB, g.UsedMiB = int(d.Index), d.MemoryMiB, int64(s.MemoryUsedBytes>>20)
		sort.Slice(g.Pods, func(i, j int) bool { return g.Pods[i].String() < g.Pods[j].String() })
		out = append(out, *g)
	}
	return out
}

// relievePressure evicts, through the Eviction API, the pod furthest above its request
// on each GPU short of memory (package pressure decides), and records why: a Warning
// event GPUMemoryPressure on the pod and tessera_gpu_pressure_evictions_total. The
// Eviction API honours the pod's terminationGracePeriodSeconds (SIGTERM, then the grace
// period to checkpoint) and its PodDisruptionBudgets: an eviction a budget refuses is
// asked again at the next sample.
func (a *Agent) relievePressure(ctx context.Context, devs []tesserav1.GPUDevice, samples map[string]gpu.Sample,
	pods map[types.UID]assignedPod, use map[types.UID]map[string]uint64) {
	if a.pressure == nil {
		return
	}
	for _, e := range a.pressure.Decide(pressureGPUs(devs, samples, pods, use), a.now()) {
		pod := pods[e.Victim.UID].pod
		uid := pod.UID
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}}
		err := a.deps.Kube.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			continue // gone or replaced already
		case apierrors.IsTooManyRequests(err):
			a.deps.Log.Info("GPU memory pressure: a PodDisruptionBudget refuses the eviction for now; asking again next sample",
				"pod", e.Victim.String(), "gpu", e.GPU.UUID, "reason", e.Message())
			continue
		case err != nil:
			a.deps.Log.Error(err, "GPU memory pressure: evict pod", "pod", e.Victim.String(), "gpu", e.GPU.UUID)
			continue
		}
		a.pressure.Evicted(e)
		a.metrics.PressureEvicted(e.GPU.Index, e.Trigger).Inc()
		msg := e.Message()
		a.deps.Log.Info("GPU memory pressure: evicted pod", "pod", e.Victim.String(), "gpu", e.GPU.UUID, "trigger", e.Trigger, "reason", msg)
		if a.deps.Recorder != nil {
			a.deps.Recorder.Event(pod, corev1.EventTypeWarning, tesserav1.EventReasonGPUMemoryPressure, fmt.Sprintf("%s: %s", e.Trigger, msg))
		}
	}
}
