package webhooks

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/policy"
)

func seedReviews(t testing.TB) [][]byte {
	var out [][]byte
	for _, obj := range []runtime.Object{
		apitest.MakePod("a", "team").NvidiaGPU(1).Queue("train").Obj(),
		makeJob("j", 4, apitest.MakePod("t", "team").NvidiaGPU(2).Obj()).Obj(),
	} {
		b, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: reviewTypeMeta,
			Request:  request(t, admissionv1.Create, obj),
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","kind":{"kind":"Pod"}}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","kind":{"kind":"Pod"}}} {}`),
		[]byte(`[]`), []byte(`null`), []byte(``),
	)
}

// FuzzDecodeReview: any body either decodes into a review the handlers can use, or
// is an error; never a panic.
func FuzzDecodeReview(f *testing.F) {
	for _, s := range seedReviews(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeReview(body)
		if err != nil {
			return
		}
		if r.Request == nil || r.Request.UID == "" || r.Request.Kind.Kind == "" {
			t.Fatalf("decoded a review the handlers cannot use: %+v", r)
		}
	})
}

// FuzzBuildInput: any object of any kind either becomes an input the policy engine
// accepts (convertible to Rego) or is an error; never a panic.
func FuzzBuildInput(f *testing.F) {
	kinds := []string{KindPod, KindJob, KindPodGroup, KindQueue, "ConfigMap", KindJobSet, KindRayCluster, KindLeaderWorkerSet, KindPyTorchJob}
	f.Add(uint8(0), []byte(`{"metadata":{"name":"a","labels":{"tessera.dev/queue":"q"},"annotations":{"tessera.dev/min-available":"3"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"2","cpu":"500m"},"limits":{"nvidia.com/gpu":"2"}}}],"initContainers":[{"name":"i","resources":{"limits":{"memory":"1Gi"}}}]}}`))
	f.Add(uint8(1), []byte(`{"metadata":{"name":"j"},"spec":{"parallelism":4,"template":{"metadata":{"labels":{"tessera.dev/queue":"q"}},"spec":{"containers":[{"name":"c","resources":{"limits":{"tessera.dev/gpu-memory":"4096"}}}]}}}}`))
	f.Add(uint8(2), []byte(`{"metadata":{"name":"pg","annotations":{"tessera.dev/replicas":"8"}},"spec":{"minMember":2,"minResources":{"tessera.dev/gpu":"16"}}}`))
	f.Add(uint8(3), []byte(`{"metadata":{"name":"q"},"spec":{"deserved":{"tessera.dev/gpu":"4"},"capability":{"tessera.dev/gpu":"1e3"}}}`))
	f.Add(uint8(4), []byte(`{}`))
	f.Add(uint8(0), []byte(`{"spec":{"containers":[{"resources":{"requests":{"cpu":"-1"}}}]}}`))
	f.Add(uint8(0), []byte(`null`))
	f.Add(uint8(5), []byte(`{"metadata":{"name":"js"},"spec":{"replicatedJobs":[{"replicas":2,"template":{"spec":{"parallelism":4,"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}}}},{"template":5}]}}`))
	f.Add(uint8(6), []byte(`{"spec":{"headGroupSpec":{"template":{}},"workerGroupSpecs":[{"replicas":-3,"minReplicas":1e30,"numOfHosts":2.5,"template":{"spec":{"containers":[{"name":"c"}]}}}]}}`))
	f.Add(uint8(7), []byte(`{"spec":{"replicas":3,"leaderWorkerTemplate":{"size":0,"workerTemplate":{"metadata":{"labels":{"tessera.dev/queue":"q"}}}}}}`))
	f.Add(uint8(8), []byte(`{"spec":{"pytorchReplicaSpecs":{"Master":{"template":{"spec":{"schedulerName":"volcano"}}},"Worker":null}}}`))
	f.Fuzz(func(t *testing.T, k uint8, raw []byte) {
		req := &admissionv1.AdmissionRequest{
			UID: "u", Kind: gvk(kinds[int(k)%len(kinds)]), Operation: admissionv1.Create,
			Namespace: "ns", Object: runtime.RawExtension{Raw: raw},
		}
		doc, err := BuildInput(req, &Namespace{Name: "ns", Annotations: map[string]string{"a": "b"}})
		if err != nil {
			return
		}
		if _, err := policy.NewShared(doc); err != nil {
			t.Fatalf("input is not a valid Rego document: %v", err)
		}
		if _, ok := doc["workload"].(map[string]any); !ok {
			t.Fatal("input has no workload object")
		}
	})
}
