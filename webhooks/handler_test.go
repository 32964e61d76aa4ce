package webhooks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

func patchOf(t *testing.T, resp *admissionv1.AdmissionResponse) map[string]any {
	t.Helper()
	out := map[string]any{}
	if len(resp.Patch) == 0 {
		return out
	}
	var ops []gomodulesjsonpatch.Operation
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		out[op.Operation+" "+op.Path] = op.Value
	}
	return out
}

func TestMutatingHandler(t *testing.T) {
	mut, _ := handlers(t)
	shortJob := makeJob("j", 5, apitest.MakePod("t", "team").NvidiaGPU(2).Queue("train").Label("tessera.dev/runtime", "short").Obj()).Obj()
	cases := []struct {
		name string
		obj  runtime.Object
		want map[string]any // op+path -> value; exactly these
	}{
		{"gpu pod in annotated namespace", apitest.MakePod("a", "team").NvidiaGPU(1).Obj(), map[string]any{
			"add /metadata/labels":        map[string]any{"tessera.dev/queue": "train"},
			"add /spec/schedulerName":     "tessera",
			"add /spec/priorityClassName": "batch-normal",
			"add /spec/priority":          float64(50),
		}},
		{"queue default priority", apitest.MakePod("b", "team").NvidiaGPU(1).Queue("prod").Obj(), map[string]any{
			"add /spec/schedulerName":     "tessera",
			"add /spec/priorityClassName": "production-high",
			"add /spec/priority":          float64(100),
		}},
		{"cpu pod in plain namespace untouched", apitest.MakePod("c", "plain").RequestAndLimit(corev1.ResourceCPU, "1").Obj(), map[string]any{}},
		{"cpu pod in annotated namespace gets queue, keeps scheduler", apitest.MakePod("d", "team").RequestAndLimit(corev1.ResourceCPU, "1").Obj(), map[string]any{
			"add /metadata/labels":        map[string]any{"tessera.dev/queue": "train"},
			"add /spec/priorityClassName": "batch-normal",
			"add /spec/priority":          float64(50),
		}},
		{"nvidia gpu rewritten in opted-in namespace", apitest.MakePod("e", "rewrite").NvidiaGPU(2).Obj(), map[string]any{
			"add /metadata/labels":        map[string]any{"tessera.dev/queue": "default"},
			"add /spec/schedulerName":     "tessera",
			"add /spec/priorityClassName": "batch-normal",
			"add /spec/priority":          float64(50),
			"remove /spec/containers/0/resources/requests/nvidia.com~1gpu": nil,
			"add /spec/containers/0/resources/requests/tessera.dev~1gpu":   "2",
			"remove /spec/containers/0/resources/limits/nvidia.com~1gpu":   nil,
			"add /spec/containers/0/resources/limits/tessera.dev~1gpu":     "2",
		}},
		{"short job gets 80% gang", shortJob, map[string]any{
			"add /metadata/annotations":                 map[string]any{"tessera.dev/min-available": "4"},
			"add /spec/template/spec/schedulerName":     "tessera",
			"add /spec/template/spec/priorityClassName": "batch-normal",
		}},
		{"pod group defaults", apitest.MakePodGroup("pg", "team").Annotation(AnnotationReplicas, "3").Obj(), map[string]any{
			"add /spec/queue":             "train",
			"add /spec/priorityClassName": "batch-normal",
			"add /spec/minMember":         float64(3),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, admissionv1.Create, tc.obj)
			resp := mut.Admit(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			got := patchOf(t, resp)
			if len(got) != len(tc.want) {
				t.Fatalf("patch %v\nwant %v", got, tc.want)
			}
			for k, v := range tc.want {
				gv, ok := got[k]
				if !ok {
					t.Fatalf("patch lacks %q: %v", k, got)
				}
				if gj, _ := json.Marshal(gv); string(gj) != mustJSON(v) {
					t.Fatalf("%s = %s, want %s", k, gj, mustJSON(v))
				}
			}
			// Idempotent: deciding on the patched object yields no patch.
			if len(resp.Patch) > 0 {
				p, err := jsonpatch.DecodePatch(resp.Patch)
				if err != nil {
					t.Fatal(err)
				}
				patched, err := p.Apply(req.Object.Raw)
				if err != nil {
					t.Fatalf("patch does not apply: %v", err)
				}
				req.Object.Raw = patched
				if again := mut.Admit(context.Background(), req); len(again.Patch) != 0 {
					t.Fatalf("second pass patched again: %s", again.Patch)
				}
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestValidatingHandler(t *testing.T) {
	_, val := handlers(t)
	pod := func(gpus int64) *corev1.Pod { return apitest.MakePod("t", "team").NvidiaGPU(gpus).Queue("train").Obj() }
	bigJob := makeJob("big", 5, pod(4)).Annotation(tesserav1.AnnotationMinAvailable, "5").Obj()
	badMin := makeJob("badmin", 2, pod(1)).Annotation(tesserav1.AnnotationMinAvailable, "3").Obj()
	cases := []struct {
		name    string
		obj     runtime.Object
		allowed bool
		msgs    []string
		warns   []string
	}{
		{"gpu pod within capability", apitest.MakePod("a", "team").NvidiaGPU(1).Queue("train").Obj(), true, nil, nil},
		{"unknown queue", apitest.MakePod("b", "team").NvidiaGPU(1).Queue("nope").Obj(), false, []string{`queue "nope" does not exist`, "prod, quick, train"}, nil},
		{"gang over capability", bigJob, false, []string{`queue "train"`, "gang of 5 pod(s) needs 20 nvidia.com/gpu", "capability of 16"}, nil},
		{"minAvailable over replicas", badMin, false, []string{"minAvailable 3 is larger than the 2 replicas"}, nil},
		{"gpu memory over largest gpu", apitest.MakePod("c", "team").GPUMemory(90000).Queue("train").Obj(), false, []string{"90000 MiB", "81920 MiB"}, nil},
		{"gpu request without limit warns", apitest.MakePod("d", "team").Request(tesserav1.ResourceGPUMemory, "1024").Queue("train").Obj(), true, nil, []string{"without a limit"}},
		{"queue deserved over capability", apitest.MakeQueue("x").Deserved(tesserav1.ResourceGPU, "10").Capability(tesserav1.ResourceGPU, "2").Obj(), false, []string{"spec.deserved[tessera.dev/gpu] = 10 exceeds spec.capability[tessera.dev/gpu] = 2"}, []string{"queues together deserve 14 tessera.dev/gpu but the cluster has 8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := val.Admit(context.Background(), request(t, admissionv1.Create, tc.obj))
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if len(resp.Patch) != 0 {
				t.Fatal("validating handler returned a patch")
			}
			if resp.AuditAnnotations[AuditPolicyVersion] != val.Evaluator.Version() {
				t.Fatalf("audit annotations %v lack the policy version %s", resp.AuditAnnotations, val.Evaluator.Version())
			}
			for _, m := range tc.msgs {
				if resp.Result == nil || !strings.Contains(resp.Result.Message, m) {
					t.Fatalf("message %v lacks %q", resp.Result, m)
				}
			}
			all := strings.Join(resp.Warnings, "\n")
			for _, w := range tc.warns {
				if !strings.Contains(all, w) {
					t.Fatalf("warnings %q lack %q", all, w)
				}
			}
			if tc.warns == nil && len(resp.Warnings) > 0 {
				t.Fatalf("unexpected warnings %v", resp.Warnings)
			}
		})
	}
}

func TestAdmissionMetrics(t *testing.T) {
	mut, val := handlers(t)
	m := NewMetrics(prometheus.NewRegistry())
	mut.Metrics, val.Metrics = m, m
	ctx := context.Background()
	mut.Admit(ctx, request(t, admissionv1.Create, apitest.MakePod("a", "team").NvidiaGPU(1).Obj()))
	val.Admit(ctx, request(t, admissionv1.Create, apitest.MakePod("b", "team").NvidiaGPU(1).Queue("nope").Obj()))
	val.Admit(ctx, request(t, admissionv1.Delete, apitest.MakePod("c", "team").Obj()))
	bad := request(t, admissionv1.Create, apitest.MakePod("d", "team").Obj())
	bad.Object.Raw = []byte(`{"spec": 5}`)
	val.Admit(ctx, bad)
	for _, c := range []struct {
		op, result string
	}{{"CREATE", ResultPatched}, {"CREATE", ResultDenied}, {"DELETE", ResultAllowed}, {"CREATE", ResultError}} {
		if got := testutil.ToFloat64(m.Requests().WithLabelValues(c.op, KindPod, c.result)); got != 1 {
			t.Errorf("tessera_admission_requests_total{operation=%s,kind=Pod,result=%s} = %v, want 1", c.op, c.result, got)
		}
	}
}

// The mutating handler validates pods itself, on the pod as its own patch leaves it:
// denials come back without a patch, warnings with it.
func TestMutatingHandlerValidatesPods(t *testing.T) {
	mut, _ := handlers(t)
	mut.ValidateOnMutate = map[string]bool{KindPod: true}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		allowed bool
		patched bool
		msg     string
		warn    string
	}{
		{"defaulted and valid", apitest.MakePod("a", "team").NvidiaGPU(1).Obj(), true, true, "", ""},
		{"unknown queue denied", apitest.MakePod("b", "team").NvidiaGPU(1).Queue("nope").Obj(), false, false, `queue "nope" does not exist`, ""},
		{"slice over the largest GPU denied", apitest.MakePod("c", "team").GPUMemory(90000).Queue("train").Obj(), false, false, "81920 MiB", ""},
		{"request without limit warned and patched", apitest.MakePod("d", "team").Request(tesserav1.ResourceGPUMemory, "1024").Queue("train").Obj(), true, true, "", "without a limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := mut.Admit(context.Background(), request(t, admissionv1.Create, tc.pod))
			if resp.Allowed != tc.allowed || (len(resp.Patch) > 0) != tc.patched {
				t.Fatalf("allowed=%v patched=%v, want %v %v (%v)", resp.Allowed, len(resp.Patch) > 0, tc.allowed, tc.patched, resp.Result)
			}
			if tc.msg != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tc.msg)) {
				t.Fatalf("result %v lacks %q", resp.Result, tc.msg)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(resp.Warnings, "\n"), tc.warn) {
				t.Fatalf("warnings %v lack %q", resp.Warnings, tc.warn)
			}
		})
	}
}

// Validating inside the mutating call (one evaluation of every rule) decides pods as the
// validating handler does on the pod the mutating handler's patch produces.
func TestValidateOnMutateMatchesValidatingHandler(t *testing.T) {
	mut, val := handlers(t)
	fused := &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: mut.Evaluator, Cluster: mut.Cluster}
	pods := []*corev1.Pod{
		apitest.MakePod("a", "team").NvidiaGPU(1).Obj(),
		apitest.MakePod("b", "team").NvidiaGPU(1).Queue("nope").Obj(),
		apitest.MakePod("c", "team").NvidiaGPU(1).Queue("prod").Obj(),
		apitest.MakePod("d", "team").GPUMemory(90000).Queue("train").Obj(),
		apitest.MakePod("e", "team").Request(tesserav1.ResourceGPUMemory, "1024").Queue("train").Obj(),
		apitest.MakePod("f", "team").Request(tesserav1.ResourceGPUMemory, "1024").Obj(),
		apitest.MakePod("g", "rewrite").NvidiaGPU(2).Obj(),
		apitest.MakePod("h", "rewrite").NvidiaGPU(64).Obj(),
		apitest.MakePod("i", "team").NvidiaGPU(64).Queue("train").Obj(),
		apitest.MakePod("j", "plain").RequestAndLimit(corev1.ResourceCPU, "1").Obj(),
	}
	for _, pod := range pods {
		t.Run(pod.Namespace+"/"+pod.Name, func(t *testing.T) {
			req := request(t, admissionv1.Create, pod)
			got := fused.Admit(context.Background(), req)
			// The two-call path: mutate, apply the patch, validate the result.
			m := mut.Admit(context.Background(), req)
			patched := *req
			if len(m.Patch) > 0 {
				p, err := jsonpatch.DecodePatch(m.Patch)
				if err != nil {
					t.Fatal(err)
				}
				if patched.Object.Raw, err = p.Apply(req.Object.Raw); err != nil {
					t.Fatal(err)
				}
			}
			want := val.Admit(context.Background(), &patched)
			if got.Allowed != want.Allowed {
				t.Fatalf("fused allowed=%v, two calls allowed=%v (%v / %v)", got.Allowed, want.Allowed, got.Result, want.Result)
			}
			if !want.Allowed && got.Result.Message != want.Result.Message {
				t.Fatalf("denial messages differ:\n fused:     %s\n two calls: %s", got.Result.Message, want.Result.Message)
			}
			if strings.Join(got.Warnings, "\n") != strings.Join(want.Warnings, "\n") {
				t.Fatalf("warnings differ: %q vs %q", got.Warnings, want.Warnings)
			}
			if got.Allowed && string(got.Patch) != string(m.Patch) {
				t.Fatalf("patches differ: %s vs %s", got.Patch, m.Patch)
			}
		})
	}
}
