package webhooks_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// BenchmarkPodCreateOverhead measures end-to-end pod creates through the real API
// server, side by side: the same GPU pod into a namespace the webhooks exclude
// (tessera-system, by the shipped namespaceSelector) and into one they serve (mutating
// + validating, over TLS). The webhooks run as deployed: the `tessera webhook` binary
// in its own process, with the shipped webhook configurations. Creates alternate so
// both see the same server state. It reports both p99s and their difference, the
// webhooks' p99 overhead.
func BenchmarkPodCreateOverhead(b *testing.B) {
	e, _, err := apiServerForWebhooks()
	if err != nil {
		testenv.SkipOrFail(b, err)
	}
	b.Cleanup(func() { _ = e.Stop() })
	metricsAddr := startWebhookProcess(b, e)
	ctx := context.Background()
	for _, ns := range []*corev1.Namespace{
		apitest.MakeNamespace("tessera-system").Obj(),
		apitest.MakeNamespace("bench-served").Annotation(tesserav1.AnnotationQueue, "bench").Obj(),
	} {
		if err := e.Client.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Client.Create(ctx, apitest.MakeQueue("bench").Obj()); err != nil {
		b.Fatal(err)
	}
	create := func(ns string) time.Duration {
		pod := gpuPod(ns, "", "1").Obj()
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
	// Warm up connections and the webhook's cluster cache (it must know the queue).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := e.Client.Create(ctx, gpuPod("bench-served", "", "1").Obj()); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Pod CREATE reviews the webhook process answered, over both webhooks and all results.
	reviews := func() float64 {
		return scrapeSum(b, metricsAddr, "tessera_admission_requests_total", `kind="Pod"`, `operation="CREATE"`)
	}
	before := reviews()
	var without, with []time.Duration
	// This process is only the load generator: its own collections would land in
	// either arm's tail and compete for the CPUs the API server and the webhook share,
	// so they are held back (up to 2 GiB of heap) while creates are timed.
	runtime.GC()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(2 << 30))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
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
	b.ReportMetric((reviews()-before)/float64(len(with)), "webhook-calls/create")
	b.ReportMetric(scrapeSum(b, metricsAddr, "go_memstats_heap_inuse_bytes")/(1<<20), "webhook-heap-MiB")
}

// startWebhookProcess runs `tessera webhook` against e, serving on e's webhook port
// with e's certificates (as cert-manager would provide them), until the benchmark
// ends; it returns the process's metrics address.
func startWebhookProcess(b *testing.B, e *testenv.Env) string {
	b.Helper()
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		b.Fatal(err)
	}
	metricsAddr := freeLocalAddr(b)
	cmd := exec.Command(testenv.BuildTessera(b), "webhook", "--cert-manager",
		"--kubeconfig", kubeconfig, "--cert-dir", e.Webhook.LocalServingCertDir,
		"--port", strconv.Itoa(e.Webhook.LocalServingPort),
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0")
	logs, err := os.Create(filepath.Join(dir, "webhook.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), deployedEnv(b)...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if b.Failed() {
			out, _ := os.ReadFile(logs.Name())
			b.Logf("tessera webhook:\n%s", out)
		}
		_ = logs.Close()
	})
	if err := waitServing(e, time.Now().Add(60*time.Second)); err != nil {
		b.Fatal(err)
	}
	return metricsAddr
}

// deployedEnv returns the literal environment variables (the Go runtime's GC
// settings) of the webhook container in the kustomize base, so the
// process runs as shipped.
func deployedEnv(b *testing.B) []string {
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	docs, err := readYAML(filepath.Join(root, "deploy", "kustomize", "base", "webhook", "deployment.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var env []string
	for _, d := range docs {
		if !strings.Contains(d, "kind: Deployment") {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(d), &dep); err != nil {
			b.Fatal(err)
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, v := range c.Env {
				if v.ValueFrom == nil {
					env = append(env, v.Name+"="+v.Value)
				}
			}
		}
	}
	if len(env) == 0 {
		b.Fatal("deploy/kustomize/base/webhook/deployment.yaml sets no literal environment for the webhook")
	}
	return env
}

func freeLocalAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// scrapeSum sums the samples of metric whose labels include every one of labels
// (`name="value"`) on the metrics endpoint at addr.
func scrapeSum(b *testing.B, addr, metric string, labels ...string) float64 {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var n float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, _, _ := strings.Cut(line, "{"); name != metric && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		if slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(line, l) }) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			b.Fatal(fmt.Errorf("metrics line %q: %w", line, err))
		}
		n += v
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
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
