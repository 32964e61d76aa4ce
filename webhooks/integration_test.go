package webhooks_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The API server and the webhook serving it are shared by this package's integration
// tests and started on first use.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
	stopMgr context.CancelFunc
	served  *webhooks.Webhooks
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	if stopMgr != nil {
		stopMgr()
	}
	if env != nil {
		_ = env.Stop()
	}
	os.Exit(code)
}

// webhookEnv returns an API server that calls this package's webhooks over TLS, with
// the webhook configurations and priority classes of the kustomize base (rendered from the chart).
func webhookEnv(t testing.TB) *testenv.Env {
	t.Helper()
	envOnce.Do(func() { env, envErr = startWebhookEnv() })
	if envErr != nil {
		testenv.SkipOrFail(t, envErr)
	}
	return env
}

func startWebhookEnv() (*testenv.Env, error) {
	e, classes, err := apiServerForWebhooks()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*testenv.Env, error) { _ = e.Stop(); return nil, err }
	wo := e.Webhook
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopMgr = cancel
	wh, err := webhooks.Setup(ctx, mgr, webhooks.Options{Metrics: true})
	if err != nil {
		return fail(err)
	}
	served = wh
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "webhook manager:", err)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	if err := waitServing(e, deadline); err != nil {
		return fail(err)
	}
	// The webhook's informers must have seen the classes before tests expect them.
	for {
		served.Cluster.Invalidate()
		c, err := served.Cluster.Cluster(ctx)
		if err == nil && len(c.PriorityClasses) >= classes {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("the webhook never saw the priority classes: %v", err))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return e, nil
}

// apiServerForWebhooks starts an API server with the webhook configurations shipped in
// the kustomize base, pointed at the local serving port of e.Webhook, and the base's
// priority classes; it returns how many classes it created.
func apiServerForWebhooks() (*testenv.Env, int, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, 0, err
	}
	docs, err := readYAML(filepath.Join(root, "deploy", "kustomize", "base", "webhook", "webhooks.yaml"))
	if err != nil {
		return nil, 0, err
	}
	var opts testenv.Options
	for _, d := range docs {
		switch {
		case strings.Contains(d, "kind: MutatingWebhookConfiguration"):
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict([]byte(d), &c); err != nil {
				return nil, 0, err
			}
			opts.Webhooks = append(opts.Webhooks, &c)
		case strings.Contains(d, "kind: ValidatingWebhookConfiguration"):
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict([]byte(d), &c); err != nil {
				return nil, 0, err
			}
			opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, &c)
		}
	}
	e, err := testenv.New(opts)
	if err != nil {
		return nil, 0, err
	}
	classes, err := readYAML(filepath.Join(root, "deploy", "kustomize", "base", "priorityclasses.yaml"))
	for _, d := range classes {
		if err != nil {
			break
		}
		var pc schedulingv1.PriorityClass
		if err = yaml.UnmarshalStrict([]byte(d), &pc); err == nil {
			err = e.Client.Create(context.Background(), &pc)
		}
	}
	if err != nil {
		_ = e.Stop()
		return nil, 0, err
	}
	return e, len(classes), nil
}

// waitServing waits until the webhook server of e accepts TLS connections.
func waitServing(e *testenv.Env, deadline time.Time) error {
	addr := net.JoinHostPort(e.Webhook.LocalServingHost, strconv.Itoa(e.Webhook.LocalServingPort))
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server on %s did not come up: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readYAML(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range strings.Split(string(b), "\n---") {
		if strings.Contains(d, "kind:") {
			out = append(out, d)
		}
	}
	return out, nil
}

// eventually retries f until it succeeds or 20s pass (the webhook's informers see new
// Queues shortly after they are created).
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func namespace(t *testing.T, c client.Client, name string, annotations map[string]string) {
	t.Helper()
	ns := apitest.MakeNamespace(name)
	for k, v := range annotations {
		ns.Annotation(k, v)
	}
	if err := c.Create(testenv.Context(t, 10*time.Second), ns.Obj()); err != nil {
		t.Fatal(err)
	}
}

func queue(t *testing.T, c client.Client, name string, gpus string) {
	t.Helper()
	q := apitest.MakeQueue(name).Capability(tesserav1.ResourceNvidiaGPU, gpus).Obj()
	q.Spec.AllowedPriorityClasses = []string{"batch-normal", "offline-low"}
	if err := c.Create(testenv.Context(t, 10*time.Second), q); err != nil {
		t.Fatal(err)
	}
}

// gpuPod is a pod that limits gpus nvidia.com/gpu (the API server defaults the request);
// without a name it is named bench-<suffix>.
func gpuPod(ns, name string, gpus string) *apitest.PodWrapper {
	return apitest.MakePod(name, ns).GenerateName("bench-").Limit(tesserav1.ResourceNvidiaGPU, gpus)
}

func TestPodInAnnotatedNamespaceGetsDefaults(t *testing.T) {
	e := webhookEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	queue(t, e.Client, "team-a-queue", "8")
	namespace(t, e.Client, "team-a", map[string]string{tesserav1.AnnotationQueue: "team-a-queue"})
	var pod *corev1.Pod
	eventually(t, "create GPU pod", func() error {
		pod = gpuPod("team-a", "trainer", "1").Obj()
		return e.Client.Create(ctx, pod)
	})
	if got := pod.Labels[tesserav1.LabelQueue]; got != "team-a-queue" {
		t.Errorf("label %s = %q, want team-a-queue", tesserav1.LabelQueue, got)
	}
	if pod.Spec.SchedulerName != tesserav1.SchedulerName {
		t.Errorf("schedulerName = %q, want tessera", pod.Spec.SchedulerName)
	}
	if pod.Spec.PriorityClassName != "batch-normal" || pod.Spec.Priority == nil || *pod.Spec.Priority != 50 {
		t.Errorf("priorityClassName %q priority %v, want batch-normal / 50", pod.Spec.PriorityClassName, pod.Spec.Priority)
	}
}

func TestGangLargerThanQueueCapabilityDenied(t *testing.T) {
	e := webhookEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	queue(t, e.Client, "small", "8")
	namespace(t, e.Client, "team-b", nil)
	// Wait until the webhook knows the queue: a one-GPU pod in it is admitted.
	eventually(t, "queue small known to the webhook", func() error {
		return e.Client.Create(ctx, gpuPod("team-b", "probe", "1").Queue("small").Obj())
	})
	pod := gpuPod("team-b", "", "4").Queue("small").Obj()
	job := apitest.MakeJob("gang", "team-b").Queue("small").Parallelism(4).Template(pod).RestartPolicy(corev1.RestartPolicyNever).Obj()
	err := e.Client.Create(ctx, job)
	if err == nil {
		t.Fatal("a gang of 4 x 4 GPUs was admitted into a queue capped at 8 GPUs")
	}
	for _, want := range []string{`queue "small"`, "gang of 4 pod(s) needs 16 nvidia.com/gpu", "capability of 8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("denial %q does not contain %q", err, want)
		}
	}
}

const noDebugPolicy = `package tessera.nodebug

deny contains "pods labelled debug=true are not allowed in shared namespaces" if {
	input.workload.labels.debug == "true"
}

test_denies_debug if count(deny) == 1 with input as {"workload": {"labels": {"debug": "true"}}}

test_allows_others if count(deny) == 0 with input as {"workload": {"labels": {}}}
`

func TestBadAdmissionPolicyRejectedAndPreviousServes(t *testing.T) {
	e := webhookEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	namespace(t, e.Client, "team-c", nil)
	ap := &tesserav1.AdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-debug"},
		Spec:       tesserav1.AdmissionPolicySpec{Rego: noDebugPolicy, Targets: []tesserav1.AdmissionTarget{"Pod"}},
	}
	if err := e.Client.Create(ctx, ap); err != nil {
		t.Fatal(err)
	}
	eventually(t, "AdmissionPolicy status", func() error {
		var got tesserav1.AdmissionPolicy
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ap), &got); err != nil {
			return err
		}
		if !got.Status.Compiled || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v", got.Status)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == tesserav1.ConditionReady && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("no Ready=True condition: %+v", got.Status.Conditions)
	})
	debugPod := func() error {
		err := e.Client.Create(ctx, gpuPod("team-c", "", "1").Label("debug", "true").Obj())
		if err == nil {
			return errors.New("debug pod admitted")
		}
		if !strings.Contains(err.Error(), "nodebug") && !strings.Contains(err.Error(), "no-debug") {
			return fmt.Errorf("denied for another reason: %w", err)
		}
		return nil
	}
	eventually(t, "policy no-debug serving", debugPod)

	// A broken version is rejected with the compiler's file:row message ...
	var cur tesserav1.AdmissionPolicy
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ap), &cur); err != nil {
		t.Fatal(err)
	}
	gen := cur.Generation
	cur.Spec.Rego = "package tessera.nodebug\n\ndeny contains msg if {\n\tmsg := input.workload.labels.debug +\n}\n"
	err := e.Client.Update(ctx, &cur)
	if err == nil || !strings.Contains(err.Error(), "admissionpolicy/no-debug.rego:") {
		t.Fatalf("broken policy: got %v, want a rejection naming admissionpolicy/no-debug.rego:ROW", err)
	}
	t.Logf("rejection: %v", err)
	// ... so is one whose own tests fail ...
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ap), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Rego = strings.Replace(noDebugPolicy, `count(deny) == 1`, `count(deny) == 2`, 1)
	err = e.Client.Update(ctx, &cur)
	if err == nil || !strings.Contains(err.Error(), "test data.tessera.nodebug.test_denies_debug failed") {
		t.Fatalf("policy with a failing test: got %v, want its test named", err)
	}
	// ... and the previous version still applies.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ap), &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Generation != gen || cur.Spec.Rego != noDebugPolicy {
		t.Fatal("the rejected policy was stored")
	}
	if err := debugPod(); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, gpuPod("team-c", "", "1").Label("debug", "false").Obj()); err != nil {
		t.Fatalf("a pod the policy allows was denied: %v", err)
	}
}

// A pod asking one whole GPU, created in a queue that right-sizes automatically, whose
// workload has a recommendation, is admitted with a slice of that size.
func TestPodRightSizedIntoSlice(t *testing.T) {
	e := webhookEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	q := apitest.MakeQueue("right-sized").Obj()
	q.Spec.AllowedPriorityClasses = []string{"batch-normal"}
	q.Spec.GPURightSizing = &tesserav1.GPURightSizing{Mode: tesserav1.RightSizingAuto}
	if err := e.Client.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	namespace(t, e.Client, "team-rs", map[string]string{tesserav1.AnnotationQueue: q.Name})
	profile := &tesserav1.GPUProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "team-rs", Name: "finetune"},
		Spec: tesserav1.GPUProfileSpec{Workload: "finetune"}}
	if err := e.Client.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	profile.Status = tesserav1.GPUProfileStatus{Runs: 12, MaxPeakMiB: 18120, GPUMemoryMiB: 81920, RecommendedMiB: 20480,
		Reason: "p95 of 12 runs' peaks (17612 MiB) + 15%, rounded up"}
	if err := e.Client.Status().Update(ctx, profile); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	eventually(t, "a one-GPU pod right-sized", func() error {
		pod = apitest.MakePod("", "team-rs").GenerateName("finetune-").Label(tesserav1.LabelWorkload, "finetune").
			Limit(tesserav1.ResourceGPU, "1").Obj()
		if err := e.Client.Create(ctx, pod); err != nil {
			return err
		}
		if pod.Annotations[tesserav1.AnnotationRightSizedFrom] == "" {
			return fmt.Errorf("pod %s admitted as it was: annotations %v", pod.Name, pod.Annotations)
		}
		return nil
	})
	c := pod.Spec.Containers[0]
	for what, l := range map[string]corev1.ResourceList{"requests": c.Resources.Requests, "limits": c.Resources.Limits} {
		mem, slice := l[tesserav1.ResourceGPUMemory], l[tesserav1.ResourceGPUSlice]
		if _, whole := l[tesserav1.ResourceGPU]; whole || mem.Value() != 20480 || slice.Value() != 1 {
			t.Errorf("%s %v, want %s 20480 and %s 1 in place of %s", what, l, tesserav1.ResourceGPUMemory, tesserav1.ResourceGPUSlice, tesserav1.ResourceGPU)
		}
	}
	if got, want := pod.Annotations[tesserav1.AnnotationRightSizedFrom], apitest.Container+": tessera.dev/gpu=1"; got != want {
		t.Errorf("annotation %s = %q, want %q", tesserav1.AnnotationRightSizedFrom, got, want)
	}
	if got := pod.Annotations[tesserav1.AnnotationGPUMemoryRecommendation]; !strings.HasPrefix(got, "20480 MiB: p95 of 12 runs") {
		t.Errorf("annotation %s = %q", tesserav1.AnnotationGPUMemoryRecommendation, got)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy %q, want %s", c.TerminationMessagePolicy, corev1.TerminationMessageFallbackToLogsOnError)
	}
	if pod.Labels[tesserav1.LabelQueue] != q.Name || pod.Spec.SchedulerName != tesserav1.SchedulerName {
		t.Errorf("queue %q, scheduler %q", pod.Labels[tesserav1.LabelQueue], pod.Spec.SchedulerName)
	}
}
