package webhooks

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/internal/apitest"
)

// BenchmarkAdmission drives the mutating handler over HTTP (decode, input, default
// policy set, patch, validation of the patched pod, encode) with one GPU pod, as a pod
// create passes through Tessera's webhooks, and reports the 99th percentile.
func BenchmarkAdmission(b *testing.B) {
	mut, _ := handlers(b)
	mut.ValidateOnMutate = map[string]bool{KindPod: true}
	benchAdmission(b, mut, apitest.MakePod("bench", "team").NvidiaGPU(2).Obj())
}

// BenchmarkAdmissionRightSized is BenchmarkAdmission for a one-GPU pod of a queue in
// right-sizing mode Auto whose workload has a recommendation: the profile lookup, the
// pod right-sized before the policies decide, the patch with its slice.
func BenchmarkAdmissionRightSized(b *testing.B) {
	benchAdmission(b, rightSizingHandler(b), jobPod("auto", "train", 1).Obj())
}

func benchAdmission(b *testing.B, mut *Handler, pod *corev1.Pod) {
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: reviewTypeMeta, Request: request(b, admissionv1.Create, pod)})
	if err != nil {
		b.Fatal(err)
	}
	serve := func(h http.Handler) {
		rec := httptest.NewRecorder()
		req, err := http.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		serve(mut)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(percentileMillis(durations, 0.99), "p99-ms")
}

func percentileMillis(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return float64(s[i]) / float64(time.Millisecond)
}
