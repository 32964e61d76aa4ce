package webhooks

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
)

// podBuilder makes test pods: makePod("a").gpu(2).queue("q").obj().
type podBuilder struct{ p *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}}
}

func (b *podBuilder) res(name corev1.ResourceName, q string, withLimit bool) *podBuilder {
	c := &b.p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests, c.Resources.Limits = corev1.ResourceList{}, corev1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(q)
	if withLimit {
		c.Resources.Limits[name] = resource.MustParse(q)
	}
	return b
}
func (b *podBuilder) gpu(n string) *podBuilder { return b.res(tesserav1.ResourceNvidiaGPU, n, true) }
func (b *podBuilder) label(k, v string) *podBuilder {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[k] = v
	return b
}
func (b *podBuilder) queue(q string) *podBuilder { return b.label(tesserav1.LabelQueue, q) }
func (b *podBuilder) obj() *corev1.Pod           { return b.p }

func makeJob(name string, parallelism int32, pod *corev1.Pod) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace, Labels: pod.Labels},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(parallelism),
			Template:    corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec},
		},
	}
}

func gvk(kind string) metav1.GroupVersionKind {
	switch kind {
	case KindJob:
		return metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: kind}
	case KindPod:
		return metav1.GroupVersionKind{Version: "v1", Kind: kind}
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

func testQueues() []tesserav1.Queue {
	q := func(name string, capGPU string, ann map[string]string) tesserav1.Queue {
		out := tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
		if capGPU != "" {
			out.Spec.Capability = corev1.ResourceList{tesserav1.ResourceNvidiaGPU: resource.MustParse(capGPU), tesserav1.ResourceGPU: resource.MustParse(capGPU)}
			out.Spec.Deserved = corev1.ResourceList{tesserav1.ResourceGPU: resource.MustParse("4")}
		}
		return out
	}
	return []tesserav1.Queue{
		q("train", "16", nil),
		q("prod", "", map[string]string{AnnotationPriorityClass: "production-high"}),
		q("quick", "", map[string]string{AnnotationRuntime: "short"}),
	}
}

func testClasses() []schedulingv1.PriorityClass {
	pc := func(n string, v int32) schedulingv1.PriorityClass {
		return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: n}, Value: v}
	}
	return []schedulingv1.PriorityClass{pc("production-high", 100), pc("batch-normal", 50), pc("offline-low", 0)}
}

func testNodes() []tesserav1.GPUNode {
	n := tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for i := range 8 {
		n.Status.Devices = append(n.Status.Devices, tesserav1.GPUDevice{Index: int32(i), MemoryMiB: 81920, Healthy: true})
	}
	return []tesserav1.GPUNode{n}
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

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

var reviewTypeMeta = metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}
