package recommender

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	tcontroller "github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/rightsize"
)

// Bounds of what the recommender remembers of recorded pods.
const (
	// maxRecordedPods is how many pod UIDs a GPUProfile remembers (its CRD allows 128).
	maxRecordedPods = 128
	// forgetAfter is how long the recommender remembers in memory that it recorded a
	// pod: longer than the node agent keeps an ended pod in its GPUNode.
	forgetAfter = 15 * time.Minute
)

// Options tune the recommender.
type Options struct {
	// Config is how recommendations are made; zero fields take rightsize's defaults.
	Config rightsize.Config
	// Registerer takes the metrics; nil: none are registered.
	Registerer prometheus.Registerer
	Log        logr.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Recommender records the runs of ended pods into their workloads' GPUProfiles.
type Recommender struct {
	// Nodes reads GPUNodes (an informer cache).
	Nodes client.Reader
	// API reads pods (for their termination messages) and GPUProfiles afresh.
	API client.Reader
	// Client writes GPUProfiles.
	Client  client.Client
	Metrics *Metrics
	Options

	mu       sync.Mutex
	recorded map[types.UID]time.Time // pods recorded by this process, when
}

var _ reconcile.Reconciler = (*Recommender)(nil)

// standbyRetry is how long a request waits on a replica that does not lead before it
// is tried again: recording ended runs is not urgent, and the GPUNodes of a large
// cluster come back at this rate on the standby.
const standbyRetry = 30 * time.Second

// Setup adds the recommender to mgr; it records on the elected leader only. Its
// controller runs on every replica, since a controller cannot be started again when
// its replica leads again after losing the Lease.
func Setup(mgr manager.Manager, opts Options) (*Recommender, error) {
	r := &Recommender{Nodes: mgr.GetCache(), API: mgr.GetAPIReader(), Client: mgr.GetClient(), Metrics: NewMetrics(opts.Registerer), Options: opts}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("gpuprofile-recommender").
		For(&tesserav1.GPUNode{}, builder.WithPredicates(endedPodsChanged)).
		// Several managers may run in one process (tests); names need not be unique.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), NeedLeaderElection: ptr.To(false)}).
		Complete(tcontroller.WhileLeading(tcontroller.IsLeader(mgr), standbyRetry, r))
	if err != nil {
		return nil, fmt.Errorf("GPU profile recommender: %w", err)
	}
	return r, nil
}

// endedPodsChanged passes GPUNode events whose status.pods hold an ended pod and
// changed: the agent writes its GPUNode every sample, the pods only when a peak grew
// meaningfully or a pod ended.
var endedPodsChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return hasEnded(e.Object) },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(e event.GenericEvent) bool { return hasEnded(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*tesserav1.GPUNode)
		n, ok2 := e.ObjectNew.(*tesserav1.GPUNode)
		return ok1 && ok2 && hasEnded(n) && !equality.Semantic.DeepEqual(o.Status.Pods, n.Status.Pods)
	},
}

func hasEnded(o client.Object) bool {
	gn, ok := o.(*tesserav1.GPUNode)
	return ok && slices.ContainsFunc(gn.Status.Pods, func(p tesserav1.GPUPodMemory) bool { return p.EndedTime != nil })
}

func (r *Recommender) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile records the GPUNode's ended pods not recorded yet.
func (r *Recommender) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var gn tesserav1.GPUNode
	if err := r.Nodes.Get(ctx, req.NamespacedName, &gn); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.forget()
	// The ended pods of one workload go into its profile in one write.
	byProfile := map[[2]string][]tesserav1.GPUPodMemory{}
	var keys [][2]string
	for _, p := range gn.Status.Pods {
		if p.EndedTime == nil || p.PeakMiB <= 0 || p.Workload == "" || r.seen(types.UID(p.UID)) {
			continue
		}
		k := [2]string{p.Namespace, p.Workload}
		if byProfile[k] == nil {
			keys = append(keys, k)
		}
		byProfile[k] = append(byProfile[k], p)
	}
	var errs []error
	for _, k := range keys {
		if err := r.record(ctx, k[0], k[1], byProfile[k]); err != nil {
			errs = append(errs, fmt.Errorf("GPUProfile of %s in %s: %w", k[1], k[0], err))
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// record adds the runs of pods, all of workload in namespace, to its GPUProfile.
func (r *Recommender) record(ctx context.Context, namespace, workload string, pods []tesserav1.GPUPodMemory) error {
	prof, err := r.profile(ctx, namespace, workload)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
		// The namespace is gone or going (or the profile is refused): the runs are
		// dropped rather than retried forever.
		r.Log.Info("cannot keep a GPUProfile; the runs of its ended pods are dropped", "namespace", namespace, "workload", workload,
			"pods", len(pods), "err", err.Error())
		r.markSeen(pods)
		return nil
	}
	if err != nil {
		return err
	}
	cfg := r.Config
	p := fromStatus(prof.Status)
	var last rightsize.Run
	var results []string
	var recorded []tesserav1.GPUPodMemory
	for _, pm := range pods {
		if slices.Contains(prof.Status.RecordedPods, pm.UID) {
			r.markSeen([]tesserav1.GPUPodMemory{pm})
			continue
		}
		run, err := r.run(ctx, pm)
		if err != nil {
			return err
		}
		p.Record(run, cfg)
		results = append(results, result(run))
		recorded = append(recorded, pm)
		prof.Status.RecordedPods = append(prof.Status.RecordedPods, pm.UID)
		if run.End.After(last.End) || last.End.IsZero() {
			last = run
		}
	}
	if len(recorded) == 0 {
		return nil
	}
	if n := len(prof.Status.RecordedPods); n > maxRecordedPods {
		prof.Status.RecordedPods = prof.Status.RecordedPods[n-maxRecordedPods:]
	}
	halfLife := cfg.HalfLife
	if halfLife <= 0 {
		halfLife = rightsize.DefaultConfig().HalfLife
	}
	toStatus(p, later(last.End, referenceOf(prof)), halfLife, &prof.Status)
	rec := p.Recommend(last.GPUMiB, cfg)
	prof.Status.GPUMemoryMiB, prof.Status.RecommendedMiB, prof.Status.Reason = last.GPUMiB, rec.MiB, truncate(rec.Reason, 1024)
	prof.Status.RecommendedLimitMiB, prof.Status.TypicalMiB = 0, 0
	if rec.MiB > 0 {
		// The burstable recommendation: its limit, never below the request, and its
		// request (a typical run's peak), never above it.
		b := p.RecommendBurstable(rightsize.BurstableInput{GPUMiB: last.GPUMiB, UserMiB: rec.MiB}, cfg)
		prof.Status.RecommendedLimitMiB = min(max(b.LimitMiB, rec.MiB), max(last.GPUMiB, rec.MiB))
		if b.RequestMiB > 0 {
			prof.Status.TypicalMiB = min(b.RequestMiB, rec.MiB)
		}
	}
	if err := r.Client.Status().Update(ctx, prof); err != nil {
		return err
	}
	r.markSeen(recorded)
	for _, res := range results {
		r.Metrics.Runs.WithLabelValues(res).Inc()
	}
	r.Log.Info("recorded GPU memory of ended pods", "namespace", namespace, "workload", workload, "profile", prof.Name,
		"pods", len(recorded), "runs", prof.Status.Runs, "recommendedMiB", rec.MiB, "reason", rec.Reason)
	return nil
}

// referenceOf is the time the profile's histogram stands at (zero when empty).
func referenceOf(prof *tesserav1.GPUProfile) time.Time {
	if prof.Status.Reference == nil {
		return time.Time{}
	}
	return prof.Status.Reference.Time
}

// later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// profile reads, or creates, the GPUProfile of workload in namespace: the one of
// rightsize.ProfileNames whose spec.workload is workload.
func (r *Recommender) profile(ctx context.Context, namespace, workload string) (*tesserav1.GPUProfile, error) {
	name, fallback := rightsize.ProfileNames(workload)
	for _, n := range []string{name, fallback} {
		var prof tesserav1.GPUProfile
		err := r.API.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, &prof)
		switch {
		case apierrors.IsNotFound(err):
			prof = tesserav1.GPUProfile{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: n}, Spec: tesserav1.GPUProfileSpec{Workload: workload}}
			if err := r.Client.Create(ctx, &prof); err != nil {
				return nil, err
			}
			return &prof, nil
		case err != nil:
			return nil, err
		case prof.Spec.Workload == workload:
			return &prof, nil
		}
	}
	return nil, fmt.Errorf("GPUProfiles %s and %s belong to other workloads", name, fallback)
}

// run is the pod's run: its use from the GPUNode, and whether it ran out of GPU
// memory, from its containers' termination messages when the pod is still there.
func (r *Recommender) run(ctx context.Context, pm tesserav1.GPUPodMemory) (rightsize.Run, error) {
	run := rightsize.Run{PeakMiB: pm.PeakMiB, FirstMiB: pm.FirstMiB, GPUMiB: pm.GPUMemoryMiB, LimitMiB: pm.LimitMiB, End: pm.EndedTime.Time}
	var pod corev1.Pod
	err := r.API.Get(ctx, client.ObjectKey{Namespace: pm.Namespace, Name: pm.Name}, &pod)
	if apierrors.IsNotFound(err) || err == nil && string(pod.UID) != pm.UID {
		return run, nil // deleted: ended without a failure to read
	}
	if err != nil {
		return run, err
	}
	if msg, failed := failures(&pod); failed {
		run.OOM = rightsize.OutOfMemory(msg, pm.PeakMiB, pm.LimitMiB)
	}
	return run, nil
}

// failures joins the termination messages of the pod's containers that failed (this
// run or the one before a restart); failed is false when none did and the pod did not
// fail.
func failures(pod *corev1.Pod) (msg string, failed bool) {
	failed = pod.Status.Phase == corev1.PodFailed
	var msgs []string
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && t.ExitCode != 0 {
				failed = true
				msgs = append(msgs, t.Message)
			}
		}
	}
	return strings.Join(msgs, "\n"), failed
}

// result names a run for the runs metric.
func result(run rightsize.Run) string {
	switch {
	case rightsize.Preallocated(run.FirstMiB, run.PeakMiB, run.GPUMiB):
		return ResultPreallocated
	case run.OOM:
		return ResultOOM
	default:
		return ResultOK
	}
}

func (r *Recommender) seen(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.recorded[uid]
	return ok
}

func (r *Recommender) markSeen(pods []tesserav1.GPUPodMemory) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recorded == nil {
		r.recorded = map[types.UID]time.Time{}
	}
	for _, p := range pods {
		r.recorded[types.UID(p.UID)] = r.now()
	}
}

// forget drops the pods recorded longer ago than forgetAfter: their GPUNode entries
// are gone.
func (r *Recommender) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, at := range r.recorded {
		if r.now().Sub(at) > forgetAfter {
			delete(r.recorded, uid)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
