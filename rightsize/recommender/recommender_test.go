package recommender

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// startRecommender runs a recommender in a manager of its own until the test ends or
// stop is called.
func startRecommender(t *testing.T) (r *Recommender, stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err = Setup(mgr, Options{Registerer: prometheus.NewPedanticRegistry(), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	var once bool
	stop = func() {
		if !once {
			once = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return r, stop
}

// agent writes a GPUNode's status.pods as the node agent does.
type agent struct {
	t    *testing.T
	ctx  context.Context
	node string
	pods []tesserav1.GPUPodMemory
}

func newAgent(t *testing.T, ctx context.Context, node string) *agent {
	if err := env.Client.Create(ctx, apitest.MakeGPUNode(node).Obj()); err != nil {
		t.Fatal(err)
	}
	return &agent{t: t, ctx: ctx, node: node}
}

// ended publishes that pod ended with the given use.
func (a *agent) ended(pod *corev1.Pod, peak, first, limit int64) {
	a.t.Helper()
	at := metav1.NewTime(time.Now().Truncate(time.Second))
	a.pods = append(a.pods, tesserav1.GPUPodMemory{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Workload: "Job/train",
		PeakMiB: peak, FirstMiB: first, GPUMemoryMiB: 81920, LimitMiB: limit, EndedTime: &at})
	var gn tesserav1.GPUNode
	if err := env.Client.Get(a.ctx, client.ObjectKey{Name: a.node}, &gn); err != nil {
		a.t.Fatal(err)
	}
	gn.Status.Pods = a.pods
	if err := env.Client.Status().Update(a.ctx, &gn); err != nil {
		a.t.Fatal(err)
	}
}

// finish creates a pod of Job train that ended in phase, its container's termination
// message msg.
func finish(t *testing.T, ctx context.Context, ns, name string, phase corev1.PodPhase, msg string) *corev1.Pod {
	t.Helper()
	pod := apitest.MakePod(name, ns).ControlledBy("Job", "train").Obj()
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	exit := int32(0)
	if phase == corev1.PodFailed {
		exit = 1
	}
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: apitest.Container, Image: apitest.Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: msg}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// profile waits until the workload's GPUProfile has runs runs and returns it.
func profile(t *testing.T, ctx context.Context, ns string, runs int32) *tesserav1.GPUProfile {
	t.Helper()
	var prof tesserav1.GPUProfile
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job.train"}, &prof)
		if err == nil && prof.Status.Runs == runs {
			return &prof
		}
		if time.Now().After(deadline) {
			t.Fatalf("GPUProfile job.train: want %d runs, have %+v (%v)", runs, prof.Status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRecordsEndedPodsIntoGPUProfile(t *testing.T) {
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	ctx := testenv.Context(t, 90*time.Second)
	ns := "team-rightsize"
	if err := env.Client.Create(ctx, apitest.MakeNamespace(ns).Obj()); err != nil {
		t.Fatal(err)
	}
	gpus := newAgent(t, ctx, "gpu-rightsize")
	r, stop := startRecommender(t)

	// Three whole-GPU runs peaking at 20, 21 and 22 GiB; the second one's pod is gone.
	gpus.ended(finish(t, ctx, ns, "train-1", corev1.PodSucceeded, ""), 20480, 2048, 0)
	prof := profile(t, ctx, ns, 1)
	if prof.Spec.Workload != "Job/train" || prof.Status.RecommendedMiB != 0 || prof.Status.RecommendedLimitMiB != 0 || prof.Status.Reason != "1 of 3 runs seen" {
		t.Fatalf("after one run: %+v %+v", prof.Spec, prof.Status)
	}
	gpus.ended(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train-2", UID: "8a0c6f4e-0000-4000-8000-000000000002"}}, 21504, 2048, 0)
	gpus.ended(finish(t, ctx, ns, "train-3", corev1.PodSucceeded, ""), 22528, 2048, 0)
	prof = profile(t, ctx, ns, 3)
	rec := prof.Status.RecommendedMiB
	// p95 falls in the bucket holding 22528 MiB (upper bound < 23655), + 15%, GiB-rounded.
	if rec < 22528*115/100 || rec > 23655*115/100+1024 || rec%1024 != 0 || prof.Status.GPUMemoryMiB != 81920 ||
		prof.Status.MaxPeakMiB != 22528 || prof.Status.Reference == nil || len(prof.Status.Peaks) != 3 || len(prof.Status.RecordedPods) != 3 {
		t.Fatalf("after three runs: %+v", prof.Status)
	}
	// The limit beside it: the upper bound widened for 3 runs, never below the request,
	// at most the GPU.
	if l := prof.Status.RecommendedLimitMiB; l <= rec || l > 81920 {
		t.Fatalf("after three runs: limit %d MiB beside a request of %d", l, rec)
	}
	// A typical run's peak: the p50 (the bucket of 21504 MiB) + 15%, below the p95's.
	if typ := prof.Status.TypicalMiB; typ < 21504*115/100 || typ >= rec {
		t.Fatalf("after three runs: typical %d MiB beside a request of %d", typ, rec)
	}
	t.Logf("recommended %d MiB (typical %d), limit %d MiB: %s", rec, prof.Status.TypicalMiB, prof.Status.RecommendedLimitMiB, prof.Status.Reason)

	// The fourth run, at the recommended slice, fails with CUDA's out-of-memory message.
	gpus.ended(finish(t, ctx, ns, "train-4", corev1.PodFailed, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"), rec-300, 2048, rec)
	prof = profile(t, ctx, ns, 4)
	bumped := (rec*12/10 + 1023) / 1024 * 1024
	if prof.Status.OOMs != 1 || prof.Status.FloorMiB < rec*12/10 || prof.Status.RecommendedMiB < bumped {
		t.Fatalf("after running out of memory at %d MiB: %+v", rec, prof.Status)
	}
	if got := testutil.ToFloat64(r.Metrics.Runs.WithLabelValues(ResultOOM)); got != 1 {
		t.Fatalf("oom runs %v", got)
	}
	if got := testutil.ToFloat64(r.Metrics.Runs.WithLabelValues(ResultOK)); got != 3 {
		t.Fatalf("ok runs %v", got)
	}

	// A restarted recommender sees the same GPUNode: it records only the new pod.
	stop()
	r2, _ := startRecommender(t)
	gpus.ended(finish(t, ctx, ns, "train-5", corev1.PodSucceeded, ""), 12288, 12288/2, prof.Status.RecommendedMiB)
	profile(t, ctx, ns, 5)
	time.Sleep(500 * time.Millisecond) // a double count would show by now
	prof = profile(t, ctx, ns, 5)
	if got := testutil.ToFloat64(r2.Metrics.Runs.WithLabelValues(ResultOK)); got != 1 {
		t.Fatalf("restarted recommender recorded %v runs, want 1", got)
	}
	if prof.Status.OOMs != 0 {
		t.Fatalf("a run at the bumped slice that did not run out of memory leaves OOMs %d", prof.Status.OOMs)
	}
	if uids := strings.Join(prof.Status.RecordedPods, ","); strings.Count(uids, ",") != 4 {
		t.Fatalf("recorded pods %s", uids)
	}
}
