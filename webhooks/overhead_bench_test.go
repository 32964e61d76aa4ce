package webhooks_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// BenchmarkPodCreateOverhead measures end-to-end pod creates through the real API
// server, side by side: the same GPU pod into a namespace the webhooks exclude
// (tessera-system, by the shipped namespaceSelector) and into one they serve (mutating
// + validating, over TLS). Creates alternate so both see the same server state. It
// reports both p99s and their difference, the webhooks' p99 overhead.
func BenchmarkPodCreateOverhead(b *testing.B) {
	e := webhookEnv(b)
	ctx := context.Background()
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "tessera-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bench-served", Annotations: map[string]string{tesserav1.AnnotationQueue: "bench"}}},
	} {
		if err := e.Client.Create(ctx, ns); err != nil && !isAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	queueB(b, "bench")
	create := func(ns string) time.Duration {
		pod := gpuPod(ns, "", "1", nil)
		start := time.Now()
		if err := e.Client.Create(ctx, pod); err != nil {
			b.Fatalf("create pod in %s: %v", ns, err)
		}
		d := time.Since(start)
		if ns == "bench-served" && pod.Spec.SchedulerName != tesserav1.SchedulerName {
			b.Fatal("the served namespace's pod did not pass the mutating webhook")
		}
		return d
	}
	// Warm up connections and the webhook's cluster cache.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := e.Client.Create(ctx, gpuPod("bench-served", "", "1", nil)); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	calls := func() float64 {
		var n float64
		for _, kind := range []string{"Pod"} {
			for _, r := range []string{webhooks.ResultAllowed, webhooks.ResultPatched, webhooks.ResultWarned, webhooks.ResultDenied, webhooks.ResultError} {
				n += testutil.ToFloat64(served.Mutating.Metrics.Requests().WithLabelValues("CREATE", kind, r))
			}
		}
		return n
	}
	before := calls()
	var without, with []time.Duration
	b.ResetTimer()
	for b.Loop() {
		without = append(without, create("tessera-system"))
		with = append(with, create("bench-served"))
	}
	b.StopTimer()
	p99w, p99o := p99(with), p99(without)
	b.ReportMetric(p99o, "p99-without-ms")
	b.ReportMetric(p99w, "p99-with-ms")
	b.ReportMetric(p99w-p99o, "p99-overhead-ms")
	b.ReportMetric(p50(with)-p50(without), "p50-overhead-ms")
	b.ReportMetric((calls()-before)/float64(len(with)), "webhook-calls/create")
}

func queueB(b *testing.B, name string) {
	q := &tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(testenv.Context(b, 10*time.Second), q); err != nil && !isAlreadyExists(err) {
		b.Fatal(err)
	}
}

func quantile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(float64(len(s)-1)*p)]) / float64(time.Millisecond)
}

func p99(d []time.Duration) float64 { return quantile(d, 0.99) }
func p50(d []time.Duration) float64 { return quantile(d, 0.50) }
