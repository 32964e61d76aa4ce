package webhooks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
)

const recommended = "p95 of 12 runs' peaks (17612 MiB) + 15%, rounded up"

func gpuProfile(ns, name, workload string, status tesserav1.GPUProfileStatus) tesserav1.GPUProfile {
	return tesserav1.GPUProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tesserav1.GPUProfileSpec{Workload: workload}, Status: status}
}

func rightSizingQueue(name string, mode tesserav1.RightSizingMode) *rightSizingQueueWrapper {
	q := apitest.MakeQueue(name)
	q.Obj().Spec.GPURightSizing = &tesserav1.GPURightSizing{Mode: mode}
	q.Obj().Spec.AllowedPriorityClasses = []string{"batch-normal"}
	return &rightSizingQueueWrapper{q}
}

type rightSizingQueueWrapper struct{ *apitest.QueueWrapper }

// Request sets spec.gpuRightSizing.request.
func (q *rightSizingQueueWrapper) Request(r tesserav1.RightSizingRequest) *rightSizingQueueWrapper {
	q.Obj().Spec.GPURightSizing.Request = r
	return q
}

// rightSizingHandler is the mutating handler over queues auto, recommend and off (each
// taking pods of the namespace of that name by its annotation), small (Auto, capability
// 2 GPUs), and the profiles of workloads Job/train (20480 MiB recommended), Job/jax (a
// framework that preallocates), Job/new (two runs seen), in namespaces auto and
// recommend, and of Job/nvidia in namespace rewrite (which opts into rewriting
// nvidia.com/gpu and is in queue auto).
func rightSizingHandler(t testing.TB, extra ...policy.Policy) *Handler {
	t.Helper()
	queues := append(testQueues(),
		*rightSizingQueue("auto", tesserav1.RightSizingAuto).Obj(),
		*rightSizingQueue("recommend", tesserav1.RightSizingRecommend).Obj(),
		*rightSizingQueue("off", tesserav1.RightSizingOff).Obj(),
		*rightSizingQueue("typical", tesserav1.RightSizingAuto).Request(tesserav1.RightSizingTypical).Obj(),
		*rightSizingQueue("small", tesserav1.RightSizingAuto).Capability(tesserav1.ResourceGPU, "2").Obj())
	nss := []*Namespace{
		{Name: "rewrite", Annotations: map[string]string{tesserav1.AnnotationQueue: "auto", AnnotationRewriteNvidiaGPU: "true"}},
		{Name: "plain-auto", Annotations: map[string]string{tesserav1.AnnotationQueue: "auto"}},
	}
	var profiles StaticProfiles
	for _, q := range []string{"auto", "recommend", "off", "small", "typical"} {
		nss = append(nss, &Namespace{Name: q, Annotations: map[string]string{tesserav1.AnnotationQueue: q}})
		profiles = append(profiles,
			gpuProfile(q, "train", "Job/train", tesserav1.GPUProfileStatus{Runs: 12, RecommendedMiB: 20480, Reason: recommended}),
			gpuProfile(q, "jax", "Job/jax", tesserav1.GPUProfileStatus{Runs: 5, Preallocates: true,
				Reason: "a run took the whole GPU from its start (a framework that preallocates); keep its request"}),
			gpuProfile(q, "new", "Job/new", tesserav1.GPUProfileStatus{Runs: 2, Reason: "2 of 3 runs seen"}),
			gpuProfile(q, "burst", "Job/burst", tesserav1.GPUProfileStatus{Runs: 12, RecommendedMiB: 20480, TypicalMiB: 12288, RecommendedLimitMiB: 40960, Reason: recommended}))
	}
	for _, ns := range []string{"rewrite", "plain-auto"} {
		profiles = append(profiles, gpuProfile(ns, "nvidia", "Job/nvidia", tesserav1.GPUProfileStatus{Runs: 4, RecommendedMiB: 8192, Reason: "p95 of 4 runs' peaks"}))
	}
	cluster, err := NewStaticCluster(queues, testNodes(), testClasses(), nss...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := rego.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range extra {
		set = set.With(p)
	}
	e := policy.NewEngine(time.Second, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Load(ctx, set); err != nil {
		t.Fatal(err)
	}
	return &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: e, Cluster: cluster, Profiles: profiles}
}

// admit runs pod through h and returns the pod as the patch leaves it.
func admit(t *testing.T, h *Handler, op admissionv1.Operation, pod *corev1.Pod) (*corev1.Pod, *admissionv1.AdmissionResponse) {
	t.Helper()
	req := request(t, op, pod)
	resp := h.Admit(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	raw := req.Object.Raw
	if len(resp.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatal(err)
		}
		// Idempotent: the webhook called again on its own result changes nothing.
		again := *req
		again.Object.Raw = raw
		if r := h.Admit(context.Background(), &again); len(r.Patch) > 0 {
			t.Fatalf("a second pass patched again: %s", r.Patch)
		}
	}
	var out corev1.Pod
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out, resp
}

// jobPod is a pod of Job job asking gpus whole GPUs (tessera.dev/gpu).
func jobPod(ns, job string, gpus int64) *apitest.PodWrapper {
	return apitest.MakePod(job+"-0", ns).ControlledBy("Job", job).GPU(gpus)
}

func TestRightSizing(t *testing.T) {
	h := rightSizingHandler(t)
	slice := corev1.ResourceList{tesserav1.ResourceGPUMemory: resource.MustParse("20480"), tesserav1.ResourceGPUSlice: resource.MustParse("1")}
	oneGPU := corev1.ResourceList{tesserav1.ResourceGPU: resource.MustParse("1")}
	twoGPUs := corev1.ResourceList{tesserav1.ResourceGPU: resource.MustParse("2")}
	nvidiaSlice := corev1.ResourceList{tesserav1.ResourceGPUMemory: resource.MustParse("8192"), tesserav1.ResourceGPUSlice: resource.MustParse("1")}
	nvidiaGPU := corev1.ResourceList{tesserav1.ResourceNvidiaGPU: resource.MustParse("1")}
	jaxEnv := jobPod("auto", "train", 1).Obj()
	jaxEnv.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "XLA_PYTHON_CLIENT_PREALLOCATE", Value: "true"}}
	growth := jobPod("auto", "train", 1).Obj()
	growth.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "XLA_PYTHON_CLIENT_PREALLOCATE", Value: "false"}, {Name: "TF_FORCE_GPU_ALLOW_GROWTH", Value: "true"}}
	tfEnv := jobPod("auto", "train", 1).Obj()
	tfEnv.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TF_FORCE_GPU_ALLOW_GROWTH", Value: "false"}}
	sidecar := jobPod("auto", "train", 1).Obj()
	sidecar.Spec.Containers = append(sidecar.Spec.Containers, corev1.Container{Name: "log", Image: "busybox"})
	twoGPUContainers := jobPod("auto", "train", 1).Obj()
	twoGPUContainers.Spec.Containers = append(twoGPUContainers.Spec.Containers, *twoGPUContainers.Spec.Containers[0].DeepCopy())
	twoGPUContainers.Spec.Containers[1].Name = "second"
	cases := []struct {
		name       string
		pod        *corev1.Pod
		resources  corev1.ResourceList // of the first container, requests and limits
		annotation string              // tessera.dev/gpu-memory-recommendation; "" none
		from       string              // tessera.dev/right-sized-from; "" none
	}{
		{"Recommend annotates only", jobPod("recommend", "train", 1).Obj(), oneGPU, "20480 MiB: " + recommended, ""},
		{"Recommend without a recommendation", jobPod("recommend", "new", 1).Obj(), oneGPU, "none: 2 of 3 runs seen", ""},
		{"Auto slices a one-GPU container", jobPod("auto", "train", 1).Obj(), slice, "20480 MiB: " + recommended, "main: tessera.dev/gpu=1"},
		{"Auto keeps two GPUs", jobPod("auto", "train", 2).Obj(), twoGPUs,
			"20480 MiB: " + recommended + `; request kept: container "main" asks 2 tessera.dev/gpu; only a one-GPU container gets a slice`, ""},
		{"Auto keeps a preallocating profile's GPU", jobPod("auto", "jax", 1).Obj(), oneGPU,
			"none: a run took the whole GPU from its start (a framework that preallocates); keep its request", ""},
		{"Auto keeps the GPU of a container that asks JAX to preallocate", jaxEnv, oneGPU,
			"20480 MiB: " + recommended + `; request kept: container "main" sets XLA_PYTHON_CLIENT_PREALLOCATE=true: its framework takes the whole GPU`, ""},
		{"Auto keeps the GPU of a container that tells TensorFlow not to grow", tfEnv, oneGPU,
			"20480 MiB: " + recommended + `; request kept: container "main" sets TF_FORCE_GPU_ALLOW_GROWTH=false: its framework takes the whole GPU`, ""},
		{"Auto slices a container whose frameworks grow on demand", growth, slice, "20480 MiB: " + recommended, "main: tessera.dev/gpu=1"},
		{"Auto slices beside a container without GPUs", sidecar, slice, "20480 MiB: " + recommended, "main: tessera.dev/gpu=1"},
		{"Auto keeps two GPU containers", twoGPUContainers, oneGPU,
			"20480 MiB: " + recommended + `; request kept: containers "main" and "second" both ask GPUs; only a pod whose one container asks one GPU gets a slice`, ""},
		{"Auto without a profile changes nothing", jobPod("auto", "other", 1).Obj(), oneGPU, "", ""},
		{"Off changes nothing", jobPod("off", "train", 1).Obj(), oneGPU, "", ""},
		{"a queue label wins over the namespace's", jobPod("auto", "train", 1).Queue("off").Obj(), oneGPU, "", ""},
		{"nvidia.com/gpu sliced where the namespace opts into rewriting it",
			apitest.MakePod("n-0", "rewrite").ControlledBy("Job", "nvidia").NvidiaGPU(1).Obj(), nvidiaSlice, "8192 MiB: p95 of 4 runs' peaks", "main: nvidia.com/gpu=1"},
		{"nvidia.com/gpu kept elsewhere",
			apitest.MakePod("n-0", "plain-auto").ControlledBy("Job", "nvidia").NvidiaGPU(1).Obj(), nvidiaGPU,
			`8192 MiB: p95 of 4 runs' peaks; request kept: container "main" asks nvidia.com/gpu and namespace plain-auto does not set annotation tessera.dev/rewrite-nvidia-gpu: "true"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod, _ := admit(t, h, admissionv1.Create, tc.pod)
			c := pod.Spec.Containers[0]
			for what, l := range map[string]corev1.ResourceList{"requests": c.Resources.Requests, "limits": c.Resources.Limits} {
				if !equalResources(l, tc.resources) {
					t.Errorf("%s %v, want %v", what, l, tc.resources)
				}
			}
			if got := pod.Annotations[tesserav1.AnnotationGPUMemoryRecommendation]; got != tc.annotation {
				t.Errorf("annotation %s = %q, want %q", tesserav1.AnnotationGPUMemoryRecommendation, got, tc.annotation)
			}
			if got := pod.Annotations[tesserav1.AnnotationRightSizedFrom]; got != tc.from {
				t.Errorf("annotation %s = %q, want %q", tesserav1.AnnotationRightSizedFrom, got, tc.from)
			}
			wantPolicy := corev1.TerminationMessagePolicy("")
			if tc.from != "" {
				wantPolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
			if c.TerminationMessagePolicy != wantPolicy {
				t.Errorf("terminationMessagePolicy %q, want %q", c.TerminationMessagePolicy, wantPolicy)
			}
		})
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// Running pods are never resized: UPDATEs pass untouched.
func TestRightSizingNeverOnUpdate(t *testing.T) {
	h := rightSizingHandler(t)
	pod, resp := admit(t, h, admissionv1.Update, jobPod("auto", "train", 1).Obj())
	if len(resp.Patch) > 0 || pod.Annotations[tesserav1.AnnotationGPUMemoryRecommendation] != "" {
		t.Fatalf("an UPDATE was patched: %s", resp.Patch)
	}
}

// The gang and capability checks see the slice, not the GPU it replaced.
func TestRightSizedBeforeCapabilityCheck(t *testing.T) {
	h := rightSizingHandler(t)
	gang := func(ns, job string) *corev1.Pod {
		return jobPod(ns, job, 1).Queue("small").Annotation(tesserav1.AnnotationMinAvailable, "4").Obj()
	}
	resp := h.Admit(context.Background(), request(t, admissionv1.Create, gang("small", "new")))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "gang of 4 pod(s) needs 4 tessera.dev/gpu") {
		t.Fatalf("a gang of 4 whole GPUs in a queue capped at 2: %v", resp.Result)
	}
	pod, _ := admit(t, h, admissionv1.Create, gang("small", "train"))
	if _, ok := pod.Spec.Containers[0].Resources.Requests[tesserav1.ResourceGPUMemory]; !ok {
		t.Fatalf("the right-sized gang was admitted without its slice: %v", pod.Spec.Containers[0].Resources)
	}
}

// A policy sees input.recommendation, and the pod as right-sizing left it.
func TestPoliciesSeeRecommendation(t *testing.T) {
	h := rightSizingHandler(t, policy.Policy{Name: "show", Targets: []string{KindPod}, Module: policy.Module{File: "show.rego", Source: `package tessera.show

warn contains sprintf("%s %s %s %v %v %s %s", [r.mode, r.queue, r.workload, r.gpuMemoryMiB, r.runs, object.get(r, "container", "-"), mem]) if {
	r := input.recommendation
	mem := sprintf("%v", [object.get(input.workload.podRequests, "tessera.dev/gpu-memory", 0)])
}
`}})
	for _, c := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{jobPod("auto", "train", 1).Obj(), "Auto auto Job/train 20480 12 main 20480"},
		{jobPod("recommend", "train", 1).Obj(), "Recommend recommend Job/train 20480 12 - 0"},
		{jobPod("auto", "other", 1).Obj(), "Auto auto Job/other 0 0 - 0"},
	} {
		_, resp := admit(t, h, admissionv1.Create, c.pod)
		if !strings.Contains(strings.Join(resp.Warnings, "\n"), c.want) {
			t.Errorf("pod %s/%s: warnings %q lack %q", c.pod.Namespace, c.pod.Name, resp.Warnings, c.want)
		}
	}
	_, resp := admit(t, h, admissionv1.Create, jobPod("off", "train", 1).Obj())
	if len(resp.Warnings) > 0 {
		t.Errorf("a pod of a queue that does not right-size has input.recommendation: %q", resp.Warnings)
	}
}

// Where the policies put a pod in another queue than the default queue policy would,
// the pod is right-sized by that queue's mode.
func TestRightSizingFollowsThePoliciesQueue(t *testing.T) {
	h := rightSizingHandler(t, policy.Policy{Name: "route", Order: 100, Targets: []string{KindPod}, Module: policy.Module{File: "route.rego", Source: `package tessera.route

mutate.queue := "auto" if input.workload.labels.route == "auto"
`}})
	pod, _ := admit(t, h, admissionv1.Create, jobPod("off", "train", 1).Label("route", "auto").Obj())
	if pod.Labels[tesserav1.LabelQueue] != "auto" || pod.Annotations[tesserav1.AnnotationRightSizedFrom] == "" {
		t.Fatalf("a pod the policies put in queue auto: queue %q, annotations %v, resources %v",
			pod.Labels[tesserav1.LabelQueue], pod.Annotations, pod.Spec.Containers[0].Resources)
	}
}

// TestRightSizingSetsTheLimit: Auto gives the container its recommended GPU-memory limit
// beside the recommended request, unless the pod sets a limit of its own.
func TestRightSizingSetsTheLimit(t *testing.T) {
	h := rightSizingHandler(t)
	limit := tesserav1.AnnotationGPUMemoryLimitPrefix + "main"
	pod, _ := admit(t, h, admissionv1.Create, jobPod("auto", "burst", 1).Obj())
	if got := pod.Annotations[limit]; got != "40960" {
		t.Errorf("annotation %s = %q, want 40960", limit, got)
	}
	if got, want := pod.Annotations[tesserav1.AnnotationGPUMemoryRecommendation], "20480 MiB: "+recommended+"; limit 40960 MiB"; got != want {
		t.Errorf("recommendation %q, want %q", got, want)
	}
	own := jobPod("auto", "burst", 1).Annotation(tesserav1.AnnotationGPUMemoryLimit, "30Gi").Obj()
	pod, _ = admit(t, h, admissionv1.Create, own)
	if got := pod.Annotations[limit]; got != "" || pod.Annotations[tesserav1.AnnotationGPUMemoryLimit] != "30Gi" {
		t.Errorf("the pod's own limit replaced: %s = %q, %s = %q", limit, got, tesserav1.AnnotationGPUMemoryLimit, pod.Annotations[tesserav1.AnnotationGPUMemoryLimit])
	}
	pod, _ = admit(t, h, admissionv1.Create, jobPod("auto", "train", 1).Obj())
	if got := pod.Annotations[limit]; got != "" {
		t.Errorf("a profile without a limit set %s = %q", limit, got)
	}
}

// TestRightSizingTypicalRequest: a queue asking request: Typical packs the pod on a
// typical run's peak and gives it the same limit; other queues keep the peak of most.
func TestRightSizingTypicalRequest(t *testing.T) {
	h := rightSizingHandler(t)
	limit := tesserav1.AnnotationGPUMemoryLimitPrefix + "main"
	for _, c := range []struct {
		ns   string
		want string
	}{{"typical", "12288"}, {"auto", "20480"}} {
		pod, _ := admit(t, h, admissionv1.Create, jobPod(c.ns, "burst", 1).Obj())
		got := pod.Spec.Containers[0].Resources.Requests[tesserav1.ResourceGPUMemory]
		if got.String() != c.want || pod.Annotations[limit] != "40960" {
			t.Errorf("queue %s: request %s, limit %q; want %s and 40960", c.ns, got.String(), pod.Annotations[limit], c.want)
		}
	}
	// Without a typical figure, the peak stands.
	pod, _ := admit(t, h, admissionv1.Create, jobPod("typical", "train", 1).Obj())
	if got := pod.Spec.Containers[0].Resources.Requests[tesserav1.ResourceGPUMemory]; got.String() != "20480" {
		t.Errorf("a profile without typicalMiB: request %s, want 20480", got.String())
	}
}
