package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/e2e"
)

// The namespaces of the example GitOps repository: queue train-prod at production-high,
// queue train-dev at batch-normal.
const (
	prod = "pretraining"
	dev  = "research"
)

// LabelWorkload marks everything the driver creates, for its clean-up.
const LabelWorkload = "faults.tessera.dev/workload"

// gpusPerNode is the simulated node model's GPUs (dgxa100-80gb).
const gpusPerNode = 8

// workload submits a mixed load: gangs of whole GPUs, single GPUs, memory shares as
// extended resources and as DRA claims, and pods that may not move (bare pods marked
// safe-to-evict=false); at most about 60% of the cluster's GPUs asked at a time.
type workload struct {
	c      client.Client
	rng    *rand.Rand
	mu     sync.Mutex
	serial atomic.Int64
	quiet  atomic.Bool
	logf   func(string, ...any)
}

// install creates the claim templates the workload's claim pods use.
func (w *workload) install(ctx context.Context) error {
	for _, ns := range []string{prod, dev} {
		for name, claim := range map[string]*resourcev1.ResourceClaim{
			"gpu-share": apitest.GPUClaim("", ns, 0, "10Gi"),
			"gpu-whole": apitest.GPUClaim("", ns, 1, ""),
		} {
			t := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claim.Spec}}
			if err := w.c.Create(ctx, t); client.IgnoreAlreadyExists(err) != nil {
				return err
			}
		}
	}
	return nil
}

// name is a fresh object name.
func (w *workload) name(kind string) string {
	return fmt.Sprintf("%s-%d", kind, w.serial.Add(1))
}

// intn draws from the workload's seeded source.
func (w *workload) intn(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

// run submits one workload every 2 seconds while the cluster has room and the driver
// does not keep it quiet, until ctx ends.
func (w *workload) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		if w.quiet.Load() {
			continue
		}
		asked, capacity, pending, err := load(ctx, w.c)
		if err != nil || pending > 4 || asked > capacity*6/10 {
			continue
		}
		if err := w.submitRandom(ctx); err != nil {
			w.logf("workload: %v", err)
		}
	}
}

// submitRandom creates one of the mix's workloads.
func (w *workload) submitRandom(ctx context.Context) error {
	ns := []string{prod, dev}[w.intn(2)]
	runtime := time.Duration(8+w.intn(15)) * time.Second
	switch r := w.intn(100); {
	case r < 35:
		pods := int32(2 + w.intn(2))
		return w.create(ctx, gang(ns, w.name("gang"), pods, 2, runtime))
	case r < 55:
		return w.create(ctx, withLabel(e2e.Job(ns, w.name("single"), 1, 1, 0, runtime)))
	case r < 70:
		return w.create(ctx, withLabel(e2e.Job(ns, w.name("share"), int32(1+w.intn(2)), 0, 10240, runtime)))
	case r < 90:
		template := []string{"gpu-share", "gpu-whole"}[w.intn(2)]
		return w.create(ctx, claimJob(ns, w.name("claim"), int32(1+w.intn(2)), template, runtime))
	default:
		return w.create(ctx, unmovable(ns, w.name("pinned"), runtime))
	}
}

// create creates o, retrying while the API server or the webhook is down (as a user or
// a controller would), for up to a minute.
func (w *workload) create(ctx context.Context, o client.Object) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := w.c.Create(ctx, o)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		o.SetResourceVersion("")
		time.Sleep(500 * time.Millisecond)
	}
}

func withLabel[T client.Object](o T) T {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelWorkload] = "true"
	o.SetLabels(labels)
	if j, ok := client.Object(o).(*batchv1.Job); ok {
		if j.Spec.Template.Labels == nil {
			j.Spec.Template.Labels = map[string]string{}
		}
		j.Spec.Template.Labels[LabelWorkload] = "true"
	}
	return o
}

// gang is a Job of pods pods of gpus whole GPUs each, bound all or none.
func gang(ns, name string, pods int32, gpus int64, runtime time.Duration) *batchv1.Job {
	j := withLabel(e2e.Job(ns, name, pods, gpus, 0, runtime))
	j.Annotations = map[string]string{tesserav1.AnnotationMinAvailable: strconv.Itoa(int(pods))}
	return j
}

// claimJob is a Job whose pods each claim a GPU or a share through template.
func claimJob(ns, name string, pods int32, template string, runtime time.Duration) *batchv1.Job {
	j := withLabel(e2e.Job(ns, name, pods, 0, 0, runtime))
	pod := &j.Spec.Template.Spec
	pod.SchedulerName = tesserav1.SchedulerName
	pod.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}}
	c := &pod.Containers[0]
	delete(c.Resources.Requests, tesserav1.ResourceNvidiaGPU)
	delete(c.Resources.Limits, tesserav1.ResourceNvidiaGPU)
	c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return j
}

// unmovable is a bare pod of one GPU that may not be evicted to remove its node.
func unmovable(ns, name string, runtime time.Duration) *corev1.Pod {
	p := barePod(ns, name, 1, 0, runtime)
	p.Annotations[autoscale.AnnotationSafeToEvict] = "false"
	return p
}

// probe is a small bare pod (a 1 GiB share of a GPU) the driver makes after a fault, so
// that the scheduler has work to bind; no controller stands between it and the
// scheduler.
func probe(name string) *corev1.Pod {
	p := barePod(prod, name, 0, 1024, 2*time.Second)
	p.Labels["faults.tessera.dev/probe"] = "true"
	return p
}

// barePod is a pod of e2e.Job's template, with the workload's label.
func barePod(ns, name string, gpus, memoryMiB int64, runtime time.Duration) *corev1.Pod {
	tmpl := e2e.Job(ns, name, 1, gpus, memoryMiB, runtime).Spec.Template
	p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	p.Namespace, p.Name = ns, name
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	return withLabel(p)
}

// load is the GPUs asked by pods not finished, the cluster's GPUs and the pending pods.
func load(ctx context.Context, c client.Client) (asked, capacity, pending int, err error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return 0, 0, 0, err
	}
	capacity = len(nodes.Items) * gpusPerNode
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{LabelWorkload: "true"}); err != nil {
		return 0, 0, 0, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if finished(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			pending++
		}
		asked += podGPUs(p)
	}
	return asked, capacity, pending, nil
}

// podGPUs is the whole GPUs a pod asks (a share or a claim counts one).
func podGPUs(p *corev1.Pod) int {
	n := 0
	for _, c := range p.Spec.Containers {
		for _, r := range []corev1.ResourceName{tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU} {
			if q, ok := c.Resources.Requests[r]; ok {
				n += int(q.Value())
			}
		}
		if _, ok := c.Resources.Requests[tesserav1.ResourceGPUMemory]; ok {
			n++
		}
	}
	return n + len(p.Spec.ResourceClaims)
}

// finished reports whether a pod ended (or is going).
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// quantityMiB is q in MiB.
func quantityMiB(q resource.Quantity) int64 { return q.Value() >> 20 }
