package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/rightsize"
)

// ProfileSource finds the GPUProfile that holds a workload's GPU-memory history.
type ProfileSource interface {
	// Profile is the GPUProfile of workload (rightsize.WorkloadKey) in namespace; nil
	// when it has none.
	Profile(ctx context.Context, namespace, workload string) (*tesserav1.GPUProfile, error)
}

// IndexGPUProfileWorkload is the cache index of GPUProfiles by spec.workload.
const IndexGPUProfileWorkload = "spec.workload"

// IndexProfiles adds the IndexGPUProfileWorkload index that CachedProfiles reads; call
// it before the cache starts.
func IndexProfiles(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &tesserav1.GPUProfile{}, IndexGPUProfileWorkload, func(o client.Object) []string {
		return []string{o.(*tesserav1.GPUProfile).Spec.Workload}
	})
}

// CachedProfiles reads GPUProfiles from an informer cache that IndexProfiles indexed:
// a lookup per pod, no API call.
type CachedProfiles struct {
	Reader client.Reader
}

var _ ProfileSource = CachedProfiles{}

// Profile implements ProfileSource.
func (c CachedProfiles) Profile(ctx context.Context, namespace, workload string) (*tesserav1.GPUProfile, error) {
	var list tesserav1.GPUProfileList
	if err := c.Reader.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingFields{IndexGPUProfileWorkload: workload}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list the GPUProfiles of workload %s in namespace %s: %w", workload, namespace, err)
	}
	return pickProfile(list.Items), nil
}

// StaticProfiles is a ProfileSource over fixed GPUProfiles (tests, the simulator).
type StaticProfiles []tesserav1.GPUProfile

var _ ProfileSource = StaticProfiles(nil)

// Profile implements ProfileSource.
func (s StaticProfiles) Profile(_ context.Context, namespace, workload string) (*tesserav1.GPUProfile, error) {
	var found []tesserav1.GPUProfile
	for _, p := range s {
		if p.Namespace == namespace && p.Spec.Workload == workload {
			found = append(found, p)
		}
	}
	return pickProfile(found), nil
}

// pickProfile is the profile that saw the most runs, then the first by name, of
// several naming the same workload; nil for none.
func pickProfile(ps []tesserav1.GPUProfile) *tesserav1.GPUProfile {
	if len(ps) == 0 {
		return nil
	}
	p := slices.MinFunc(ps, func(a, b tesserav1.GPUProfile) int {
		return cmp.Or(cmp.Compare(b.Status.Runs, a.Status.Runs), cmp.Compare(a.Name, b.Name))
	})
	return &p
}

// rightSizing is what admission does with a GPU pod's recommendation, by its queue's
// spec.gpuRightSizing.mode: Off nothing; Recommend shows it to the policies
// (input.recommendation) and records it on the pod; Auto also gives the one container
// asking one whole GPU a slice of the recommended size.
type rightSizing struct {
	queue    string
	mode     tesserav1.RightSizingMode
	workload string
	// profile is the GPUProfile's name; "" when the workload has none.
	profile string
	runs    int32
	// mib is the recommendation; 0 when there is none. limit is the GPU-memory limit
	// recommended beside it (0: none).
	mib, limit int64
	reason     string
	// container is the index in spec.containers of the container Auto gives the slice,
	// -1 for none; from is the request it replaces ("nvidia.com/gpu=1").
	container int
	from      string
	// kept says why Auto leaves a recommended pod's request as it is.
	kept string
}

// planRightSizing decides the right-sizing of pod, a GPU pod of queue, from its
// workload's GPUProfile; nil when the queue does not right-size.
func (h *Handler) planRightSizing(ctx context.Context, pod *corev1.Pod, ns *Namespace, cluster *Cluster, queue string) *rightSizing {
	spec := cluster.RightSizing[queue]
	mode := spec.Mode
	if mode == "" || mode == tesserav1.RightSizingOff {
		return nil
	}
	s := &rightSizing{queue: queue, mode: mode, container: -1,
		workload: rightsize.WorkloadKey(pod.Labels, pod.OwnerReferences, pod.Name)}
	p, err := h.Profiles.Profile(ctx, pod.Namespace, s.workload)
	switch {
	case err != nil:
		h.Log.Error(err, "pod admitted without right-sizing", "namespace", pod.Namespace, "workload", s.workload)
		s.reason = "the workload's GPUProfile could not be read; the request stands"
		return s
	case p == nil:
		s.reason = fmt.Sprintf("no GPUProfile of workload %s in namespace %s yet", s.workload, pod.Namespace)
		return s
	}
	s.profile, s.runs, s.mib, s.reason = p.Name, p.Status.Runs, p.Status.RecommendedMiB, p.Status.Reason
	if spec.Request == tesserav1.RightSizingTypical && p.Status.TypicalMiB > 0 && p.Status.TypicalMiB < s.mib {
		s.mib, s.reason = p.Status.TypicalMiB, fmt.Sprintf("a typical run's peak (the queue asks request: Typical), below the %d MiB most runs peak under; %s", p.Status.RecommendedMiB, p.Status.Reason)
	}
	if s.mib > 0 && p.Status.RecommendedLimitMiB > s.mib {
		s.limit = p.Status.RecommendedLimitMiB
		if cluster.MaxGPUMemoryMiB > 0 {
			s.limit = min(s.limit, max(cluster.MaxGPUMemoryMiB, s.mib))
		}
	}
	if p.Status.Preallocates && s.mib > 0 {
		s.mib, s.reason = 0, "a run took the whole GPU from its start (a framework that preallocates); keep its request"
	}
	if s.reason == "" {
		s.reason = "the recommender has not decided yet"
	}
	// A pod an earlier pass right-sized (the webhook runs again after other webhooks'
	// changes) keeps its slice.
	if mode == tesserav1.RightSizingAuto && s.mib > 0 && pod.Annotations[tesserav1.AnnotationRightSizedFrom] == "" {
		rewrite := ns != nil && ns.Annotations[AnnotationRewriteNvidiaGPU] == "true"
		s.container, s.from, s.kept = sliceable(pod, rewrite, s.mib, cluster.MaxGPUMemoryMiB)
	}
	return s
}

// gpuResources are the requests that give a container a GPU or a share of one.
var gpuResources = []corev1.ResourceName{tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU, tesserav1.ResourceGPUMemory}

// gpuAsks are the GPU resources a container asks, in its requests or limits (the API
// server defaults an extended resource's request to its limit).
func gpuAsks(c *corev1.Container) map[corev1.ResourceName]resource.Quantity {
	var out map[corev1.ResourceName]resource.Quantity
	for _, name := range gpuResources {
		for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			if q, ok := l[name]; ok && q.Sign() > 0 {
				if out == nil {
					out = map[corev1.ResourceName]resource.Quantity{}
				}
				if have, seen := out[name]; !seen || q.Cmp(have) > 0 {
					out[name] = q
				}
			}
		}
	}
	return out
}

// asksGPU reports whether a container of pod asks a GPU or a share of one.
func asksGPU(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if len(gpuAsks(&cs[i])) > 0 {
				return true
			}
		}
	}
	return false
}

// sliceable finds the container that Auto gives a slice of mib: the pod's only GPU
// container, asking exactly one whole GPU (nvidia.com/gpu only where the namespace
// opts into rewriting it), no framework set to take the whole GPU. Otherwise it says
// why the request is kept. largest is the largest GPU's memory (0: unknown).
func sliceable(pod *corev1.Pod, rewriteNvidia bool, mib, largest int64) (container int, from, kept string) {
	if largest > 0 && mib > largest {
		return -1, "", fmt.Sprintf("the recommended %d MiB is more than the largest GPU's %d MiB", mib, largest)
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; len(gpuAsks(c)) > 0 {
			return -1, "", fmt.Sprintf("init container %q asks a GPU; only a pod whose one container asks one GPU gets a slice", c.Name)
		}
	}
	container = -1
	for i := range pod.Spec.Containers {
		if len(gpuAsks(&pod.Spec.Containers[i])) == 0 {
			continue
		}
		if container >= 0 {
			return -1, "", fmt.Sprintf("containers %q and %q both ask GPUs; only a pod whose one container asks one GPU gets a slice",
				pod.Spec.Containers[container].Name, pod.Spec.Containers[i].Name)
		}
		container = i
	}
	if container < 0 {
		return -1, "", "no container asks a GPU"
	}
	c := &pod.Spec.Containers[container]
	asks := gpuAsks(c)
	if _, ok := asks[tesserav1.ResourceGPUMemory]; ok || len(asks) > 1 {
		return -1, "", fmt.Sprintf("container %q asks a slice (%s) or GPUs of two resources already", c.Name, tesserav1.ResourceGPUMemory)
	}
	name := tesserav1.ResourceGPU
	n, ok := asks[name]
	if !ok {
		name = tesserav1.ResourceNvidiaGPU
		n = asks[name]
	}
	switch {
	case name == tesserav1.ResourceNvidiaGPU && !rewriteNvidia:
		return -1, "", fmt.Sprintf("container %q asks %s and namespace %s does not set annotation %s: \"true\"",
			c.Name, name, pod.Namespace, AnnotationRewriteNvidiaGPU)
	case n.Cmp(resource.MustParse("1")) != 0:
		return -1, "", fmt.Sprintf("container %q asks %s %s; only a one-GPU container gets a slice", c.Name, n.String(), name)
	}
	if env, ok := preallocates(c.Env); ok {
		return -1, "", fmt.Sprintf("container %q sets %s: its framework takes the whole GPU", c.Name, env)
	}
	return container, string(name) + "=1", ""
}

// preallocates reports the environment variable, as NAME=value, by which a container
// tells its framework to take the whole GPU up front: XLA_PYTHON_CLIENT_PREALLOCATE=true
// (JAX), TF_FORCE_GPU_ALLOW_GROWTH=false (TensorFlow). Only explicit settings count; the
// GPUProfile tells frameworks that preallocate by default from their runs.
func preallocates(env []corev1.EnvVar) (string, bool) {
	for _, e := range env {
		switch {
		case e.Name == "XLA_PYTHON_CLIENT_PREALLOCATE" && (e.Value == "true" || e.Value == "1"),
			e.Name == "TF_FORCE_GPU_ALLOW_GROWTH" && e.Value == "false":
			return e.Name + "=" + e.Value, true
		}
	}
	return "", false
}

// annotation is the value of tessera.dev/gpu-memory-recommendation; "" where the
// workload has no GPUProfile.
func (s *rightSizing) annotation() string {
	if s.profile == "" {
		return ""
	}
	v := "none: " + s.reason
	if s.mib > 0 {
		v = fmt.Sprintf("%d MiB: %s", s.mib, s.reason)
	}
	if s.limit > 0 {
		v += fmt.Sprintf("; limit %d MiB", s.limit)
	}
	if s.kept != "" {
		v += "; request kept: " + s.kept
	}
	return v
}

// changesPod reports whether edit changes the pod.
func (s *rightSizing) changesPod() bool { return s.profile != "" || s.container >= 0 }

// doc is input.recommendation.
func (s *rightSizing) doc(pod *corev1.Pod) map[string]any {
	d := map[string]any{"mode": string(s.mode), "queue": s.queue, "workload": s.workload,
		"gpuMemoryMiB": s.mib, "gpuMemoryLimitMiB": s.limit, "runs": int64(s.runs), "reason": s.reason}
	setString(d, "profile", s.profile)
	if s.container >= 0 {
		d["container"] = pod.Spec.Containers[s.container].Name
		d["from"] = s.from
	}
	setString(d, "kept", s.kept)
	return d
}

// edit right-sizes obj, the pod decoded into maps: the recommendation annotation and,
// in Auto, the container's slice in place of its GPU (BuildPatch then adds the slice
// device), the request it replaced (tessera.dev/right-sized-from), and a termination
// message that falls back to the log, so that a CUDA out-of-memory error reaches the
// recommender.
func (s *rightSizing) edit(obj map[string]any) {
	if a := s.annotation(); a != "" {
		set(obj, []string{"metadata", "annotations", tesserav1.AnnotationGPUMemoryRecommendation}, a)
	}
	if s.container < 0 {
		return
	}
	cs, _ := lookupPath(obj, "spec.containers").([]any)
	if s.container >= len(cs) {
		return
	}
	c, _ := cs[s.container].(map[string]any)
	if c == nil {
		return
	}
	name, _ := c["name"].(string)
	set(obj, []string{"metadata", "annotations", tesserav1.AnnotationRightSizedFrom}, name+": "+s.from)
	if s.limit > 0 {
		// The recommended limit, unless the user set one.
		annotations, _ := lookupPath(obj, "metadata.annotations").(map[string]any)
		_, pod := annotations[tesserav1.AnnotationGPUMemoryLimit]
		_, own := annotations[tesserav1.AnnotationGPUMemoryLimitPrefix+name]
		if !pod && !own {
			set(obj, []string{"metadata", "annotations", tesserav1.AnnotationGPUMemoryLimitPrefix + name}, strconv.FormatInt(s.limit, 10))
		}
	}
	if p, _ := c["terminationMessagePolicy"].(string); p == "" || p == string(corev1.TerminationMessageReadFile) {
		c["terminationMessagePolicy"] = string(corev1.TerminationMessageFallbackToLogsOnError)
	}
	mib := strconv.FormatInt(s.mib, 10)
	for _, list := range []string{"requests", "limits"} {
		l, _ := lookupPath(c, "resources."+list).(map[string]any)
		delete(l, string(tesserav1.ResourceGPU))
		delete(l, string(tesserav1.ResourceNvidiaGPU))
		set(c, []string{"resources", list, string(tesserav1.ResourceGPUMemory)}, mib)
	}
}

// editRaw is the pod raw as edit leaves it.
func (s *rightSizing) editRaw(raw []byte) ([]byte, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("decode the pod to right-size it: %w", err)
	}
	s.edit(obj)
	return json.Marshal(obj)
}

// guessQueue is the queue the default queue policy gives pod: its tessera.dev/queue
// label, its namespace's annotation, Volcano's or Kueue's queue name, else the default
// queue. The handler checks the guess against the queue the policies decided.
func guessQueue(pod *corev1.Pod, ns *Namespace) string {
	if q := pod.Labels[tesserav1.LabelQueue]; q != "" {
		return q
	}
	if ns != nil && ns.Annotations[tesserav1.AnnotationQueue] != "" {
		return ns.Annotations[tesserav1.AnnotationQueue]
	}
	for _, k := range []string{tesserav1.VolcanoQueueName, tesserav1.KueueQueueName} {
		if q := cmp.Or(pod.Labels[k], pod.Annotations[k]); q != "" {
			return q
		}
	}
	return tesserav1.DefaultQueue
}
