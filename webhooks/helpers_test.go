package webhooks

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
)

// makeJob is a Job of pod's namespace and labels whose pod template is pod.
func makeJob(name string, parallelism int32, pod *corev1.Pod) *apitest.JobWrapper {
	w := apitest.MakeJob(name, pod.Namespace).Parallelism(parallelism).Template(pod)
	for k, v := range pod.Labels {
		w.Label(k, v)
	}
	return w
}

// customResources are the group, version and resource of each of CustomWorkloads
// the webhook configurations send.
var customResources = map[string]metav1.GroupVersionResource{
	KindJobSet:          {Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
	KindRayCluster:      {Group: "ray.io", Version: "v1", Resource: "rayclusters"},
	KindRayJob:          {Group: "ray.io", Version: "v1", Resource: "rayjobs"},
	KindLeaderWorkerSet: {Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
	KindPyTorchJob:      {Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"},
	KindMPIJob:          {Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"},
}

func gvk(kind string) metav1.GroupVersionKind {
	switch kind {
	case KindJob:
		return metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: kind}
	case KindPod:
		return metav1.GroupVersionKind{Version: "v1", Kind: kind}
	}
	if r, ok := customResources[kind]; ok {
		return metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: kind}
	}
	return metav1.GroupVersionKind{Group: "tessera.dev", Version: "v1alpha1", Kind: kind}
}

func request(t testing.TB, op admissionv1.Operation, obj runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m := obj.(metav1.Object)
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	return &admissionv1.AdmissionRequest{
		UID: types.UID("uid-" + m.GetName()), Kind: gvk(kind), Operation: op,
		Namespace: m.GetNamespace(), Name: m.GetName(), Object: runtime.RawExtension{Raw: raw},
	}
}

// testQueues allow every test class; the default queue, as the chart ships it, the two
// lower ones.
func testQueues() []tesserav1.Queue {
	queues := []tesserav1.Queue{
		*apitest.MakeQueue("train").Capability(tesserav1.ResourceNvidiaGPU, "16").Capability(tesserav1.ResourceGPU, "16").
			Deserved(tesserav1.ResourceGPU, "4").Obj(),
		*apitest.MakeQueue("prod").Annotation(AnnotationPriorityClass, "production-high").Obj(),
		*apitest.MakeQueue("quick").Annotation(AnnotationRuntime, "short").Obj(),
		*apitest.MakeQueue(tesserav1.DefaultQueue).Obj(),
	}
	for i := range queues {
		queues[i].Spec.AllowedPriorityClasses = []string{"batch-normal", "offline-low", "production-high"}
	}
	queues[3].Spec.AllowedPriorityClasses = []string{"batch-normal", "offline-low"}
	return queues
}

func testClasses() []schedulingv1.PriorityClass {
	return []schedulingv1.PriorityClass{*apitest.MakePriorityClass("production-high", 100).Obj(),
		*apitest.MakePriorityClass("batch-normal", 50).Obj(), *apitest.MakePriorityClass("offline-low", 0).Obj()}
}

func testNodes() []tesserav1.GPUNode {
	return []tesserav1.GPUNode{*apitest.MakeGPUNode("n1").GPUs(8, "A100-80GB", 81920).Obj()}
}

func testCluster(t testing.TB) *StaticCluster {
	t.Helper()
	c, err := NewStaticCluster(testQueues(), testNodes(), testClasses(),
		&Namespace{Name: "team", Annotations: map[string]string{"tessera.dev/queue": "train"}},
		&Namespace{Name: "rewrite", Annotations: map[string]string{"tessera.dev/rewrite-nvidia-gpu": "true"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func defaultEngine(t testing.TB) *policy.Engine {
	t.Helper()
	set, err := rego.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	e := policy.NewEngine(time.Second, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Load(ctx, set); err != nil {
		t.Fatal(err)
	}
	return e
}

func handlers(t testing.TB) (mutating, validating *Handler) {
	e, c := defaultEngine(t), testCluster(t)
	return &Handler{Mutating: true, Evaluator: e, Cluster: c}, &Handler{Evaluator: e, Cluster: c}
}

var reviewTypeMeta = metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}
