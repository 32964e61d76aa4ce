package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// churnResult is one scheduler's figures under churn.
type churnResult struct {
	// P50 and P99 are the creation-to-bind latencies of the pods created during the
	// churn (creation: just before the create call; bind: when the watch shows it), in
	// seconds; a pod still unbound at the end counts as the whole churn duration.
	P50, P99 float64
	// PodsPerS are the churn pods bound per second of churn.
	PodsPerS float64
	// Unbound are the churn pods not bound when the churn and its grace period ended.
	Unbound int
}

// churn fills the nodes with fill one-GPU pods for r, then for dur creates pods at
// rate per second while deleting as many bound ones (jobs that complete), and measures
// how long the new pods wait to be bound.
func (b *bench) churn(ctx context.Context, ns string, r runner, fill int, rate float64, dur time.Duration) (res churnResult, err error) {
	if err := b.createPods(ctx, ns, r.schedulerName, fill, 1, false); err != nil {
		return res, err
	}
	defer b.deletePodsAfter(ctx, ns, &err)
	var (
		mu      sync.Mutex
		created = map[string]time.Time{}
		bindAt  = map[string]time.Time{}
		live    []string // bound pods not deleted yet
		filled  = make(chan struct{})
	)
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, ok := bindAt[p.Name]; ok {
			return
		}
		bindAt[p.Name] = now
		live = append(live, p.Name)
		switch n := len(bindAt); {
		case n == fill:
			close(filled)
		case n < fill && n%5000 == 0:
			fmt.Fprintf(os.Stderr, "%s: %d/%d bound\n", ns, n, fill)
		}
	}
	stop, err := b.startWatched(ctx, ns, r, seen)
	if err != nil {
		return res, err
	}
	defer stop()
	select {
	case <-filled:
	case <-time.After(b.timeout):
		return res, fmt.Errorf("%s: the fill did not bind within %s", ns, b.timeout)
	}
	fmt.Fprintf(os.Stderr, "%s: %d pods bound; churning %.0f pods/s for %s\n", ns, fill, rate, dur)
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), tesserav1.ResourceGPU: resource.MustParse("1")}
	rng := rand.New(rand.NewPCG(1, 2))
	zero := int64(0)
	var errs atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	start := time.Now()
	var names []string
	for i := 0; time.Since(start) < dur; i++ {
		<-tick.C
		name := fmt.Sprintf("c%06d", i)
		names = append(names, name)
		mu.Lock()
		created[name] = time.Now()
		var victim string
		if len(live) > 0 {
			k := rng.IntN(len(live))
			victim = live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		}
		mu.Unlock()
		wg.Go(func() {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: corev1.PodSpec{SchedulerName: r.schedulerName,
					Containers: []corev1.Container{{Name: "main", Image: "x", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}}},
			}
			if _, err := b.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				errs.Add(1)
			}
			if victim != "" {
				if err := b.cs.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
					errs.Add(1)
				}
			}
		})
		if i > 0 && i%int(rate*30) == 0 {
			mu.Lock()
			fmt.Fprintf(os.Stderr, "%s: %d churn pods created, %d bound pods\n", ns, i, len(live))
			mu.Unlock()
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	wg.Wait()
	// Grace for the last pods: up to 30 s for every churn pod to be bound.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		all := true
		for _, n := range names {
			if _, ok := bindAt[n]; !ok {
				all = false
				break
			}
		}
		mu.Unlock()
		if all {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	lat := make([]float64, 0, len(names))
	inWindow := 0
	for _, n := range names {
		at, ok := bindAt[n]
		if !ok {
			res.Unbound++
			lat = append(lat, elapsed.Seconds())
			continue
		}
		lat = append(lat, at.Sub(created[n]).Seconds())
		if at.Sub(start) <= elapsed {
			inWindow++
		}
	}
	slices.Sort(lat)
	res.P50, res.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	res.PodsPerS = float64(inWindow) / elapsed.Seconds()
	if n := errs.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "%s: %d creates or deletes failed\n", ns, n)
	}
	return res, nil
}

// quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// ceilingWatch binds every pod of the namespace that names no scheduler of the bench,
// round-robin over the nodes, as soon as the watch shows it: the API server's bind rate
// and latency with no scheduling work, also for pods created while it runs.
func (b *bench) ceilingWatch() runner {
	return runner{schedulerName: "unscheduled", start: func(ctx context.Context, ns string) (func(), error) {
		ctx, cancel := context.WithCancel(ctx)
		queue := make(chan *corev1.Pod, 100000)
		var once sync.Map
		enqueue := func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				if _, dup := once.LoadOrStore(p.Name, true); !dup {
					queue <- p
				}
			}
		}
		factory := informers.NewSharedInformerFactoryWithOptions(b.cs, 0, informers.WithNamespace(ns))
		inf := factory.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue}); err != nil {
			cancel()
			return nil, err
		}
		factory.Start(ctx.Done())
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case p := <-queue:
						node := b.nodeList[int(next.Add(1))%len(b.nodeList)]
						binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, UID: p.UID},
							Target: corev1.ObjectReference{Kind: "Node", Name: node}}
						_ = b.cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{})
					}
				}
			})
		}
		return func() { cancel(); wg.Wait() }, nil
	}}
}
