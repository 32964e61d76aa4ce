package snapshot

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/podrequests"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Annotations that protect a pod from eviction.
const (
	annotationSafeToEvict  = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	annotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
)

// maxSliceMiB bounds a tessera.dev/gpu-memory request; larger values are bytes given by mistake.
const maxSliceMiB = 1 << 20

// finished reports whether the pod ran to completion (it holds nothing).
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// preemptible is false for pods annotated to never be evicted.
func preemptible(p *corev1.Pod) bool {
	return p.Annotations[annotationSafeToEvict] != "false" && p.Annotations[annotationDoNotDisrupt] != "true"
}

// checkpoints reads the checkpoint interval and last checkpoint a pod declares; a value
// that does not parse counts as not declared, as the expected runtime's does.
func checkpoints(p *corev1.Pod) (every time.Duration, at time.Time) {
	if d, err := time.ParseDuration(p.Annotations[tesserav1.AnnotationCheckpointInterval]); err == nil && d > 0 {
		every = d
	}
	if t, err := time.Parse(time.RFC3339, p.Annotations[tesserav1.AnnotationCheckpointedAt]); err == nil {
		at = t
	}
	return every, at
}

// convertTask turns a pod's spec into a task (status and placement are set by the
// caller). It fails when the pod's GPU requests cannot be honoured.
func convertTask(p *corev1.Pod, wholeGPUs bool) (*framework.Task, error) {
	p = podrequests.WithDefaultedRequests(p)
	bad := func(field, format string, args ...any) error {
		return objErr("Pod", p.Namespace, p.Name, field, format, args...)
	}
	// Validate each container's GPU requests and find the container the GPUs go to.
	var gpuContainer, sliceContainer string
	var asksTessera, asksNvidia bool
	check := func(kind string, cs []corev1.Container) error {
		for i := range cs {
			c := &cs[i]
			for _, name := range []corev1.ResourceName{tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU, tesserav1.ResourceGPUMemory} {
				q, ok := c.Resources.Requests[name]
				if !ok {
					continue
				}
				field := fmt.Sprintf("spec.%s[%d].resources.requests[%s]", kind, i, name)
				if name == tesserav1.ResourceGPUMemory {
					if q.Sign() <= 0 || q.Value() > maxSliceMiB {
						return bad(field, "%s is not a GPU memory slice in MiB (1..%d)", q.String(), maxSliceMiB)
					}
					if sliceContainer != "" && sliceContainer != c.Name {
						return bad(field, "container %q asks a GPU memory slice too, and only one container may; ask it in one container", sliceContainer)
					}
					sliceContainer = c.Name
					continue
				}
				n, err := wholeCount(q)
				if err != nil {
					return bad(field, "%v; ask %s (MiB) for a share of one GPU", err, tesserav1.ResourceGPUMemory)
				}
				if n == 0 {
					continue
				}
				asksTessera = asksTessera || name == tesserav1.ResourceGPU
				asksNvidia = asksNvidia || name == tesserav1.ResourceNvidiaGPU
				if gpuContainer == "" {
					gpuContainer = c.Name
				}
			}
		}
		return nil
	}
	if err := check("containers", p.Spec.Containers); err != nil {
		return nil, err
	}
	if err := check("initContainers", p.Spec.InitContainers); err != nil {
		return nil, err
	}
	if asksTessera && asksNvidia {
		return nil, bad("spec.containers[*].resources.requests", "asks both %s and %s; they count the same GPUs, ask one", tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU)
	}
	reqs := podrequests.Of(p)
	gpu := framework.GPURequest{}
	for _, name := range []corev1.ResourceName{tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU} {
		q := reqs[name]
		gpu.Count += int(q.Value())
		delete(reqs, name)
	}
	if q, ok := reqs[tesserav1.ResourceGPUMemory]; ok {
		gpu.MemoryMiB = q.Value()
		delete(reqs, tesserav1.ResourceGPUMemory)
	}
	delete(reqs, tesserav1.ResourceGPUSlice) // the slice's device, placed by its memory
	if gpu.Count > 0 && gpu.MemoryMiB > 0 {
		return nil, bad("spec.containers[*].resources.requests", "asks whole GPUs and a %s slice; ask one or the other", tesserav1.ResourceGPUMemory)
	}
	for name, q := range reqs {
		if q.Sign() < 0 {
			return nil, bad(fmt.Sprintf("spec.containers[*].resources.requests[%s]", name), "is negative (%s)", q.String())
		}
	}
	container := gpuContainer
	if gpu.MemoryMiB > 0 {
		container = sliceContainer
		if wholeGPUs {
			gpu = framework.GPURequest{Count: 1}
		}
	}
	if container == "" && len(p.Spec.Containers) > 0 {
		container = p.Spec.Containers[0].Name
	}
	req := framework.FromResourceList(reqs)
	req.Pods = 1
	return &framework.Task{
		Name:         p.Name,
		Namespace:    p.Namespace,
		UID:          uidOr(string(p.UID), p.Namespace+"/"+p.Name),
		Container:    container,
		Request:      req,
		GPU:          gpu,
		NodeSelector: p.Spec.NodeSelector,
		Affinity:     p.Spec.Affinity,
		Tolerations:  p.Spec.Tolerations,
		Preemptible:  preemptible(p),
	}, nil
}

func uidOr(uid, fallback string) string {
	if uid != "" {
		return uid
	}
	return fallback
}

// minAvailable reads a gang-size annotation; ok is false when absent.
func minAvailable(kind, ns, name string, annotations map[string]string, key string) (int, bool, error) {
	s, ok := annotations[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false, objErr(kind, ns, name, "metadata.annotations["+key+"]", "%q is not a gang size (a whole number >= 1); the annotation is ignored", s)
	}
	return n, true, nil
}
