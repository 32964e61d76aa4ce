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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
)

// churnResult is one scheduler's figures for pods that arrive while it runs (under
// churn, or after dra5k's burst).
type churnResult struct {
	// P50 and P99 are the creation-to-bind latencies of the pods created while it runs
	// (creation: just before the create call; bind: when the watch shows it), in
	// seconds; a pod still unbound at the end counts as the whole time of arrivals.
	P50, P99 float64
	// PodsPerS are the arriving pods bound per second of arrivals.
	PodsPerS float64
	// Unbound are the arriving pods not bound when the arrivals and their grace period ended.
	Unbound int
}

// churn fills the nodes with fill one-GPU pods for r, then for dur creates pods at
// rate per second while deleting as many bound ones (jobs that complete), and measures
// how long the new pods wait to be bound.
func (b *bench) churn(ctx context.Context, ns string, r runner, fill int, rate float64, dur time.Duration) (res churnResult, err error) {
	if err := b.createPods(ctx, ns, r.schedulerName, fill, 1, gpuExtended); err != nil {
		return res, err
	}
	defer b.deletePodsAfter(ctx, ns, &err)
	var (
		mu     sync.Mutex
		bindAt = map[string]time.Time{}
		live   []string // bound pods not deleted yet
		filled = make(chan struct{})
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
	zero := int64(0)
	rng := rand.New(rand.NewPCG(1, 2))
	// Each pod created deletes a bound one picked at random (a job that completes).
	deleteOne := func() func(context.Context) error {
		if len(live) == 0 {
			return nil
		}
		k := rng.IntN(len(live))
		victim := live[k]
		live[k] = live[len(live)-1]
		live = live[:len(live)-1]
		return func(ctx context.Context) error {
			return b.cs.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	return b.arrivals(ctx, ns, r.schedulerName, gpuExtended, rate, dur, &mu, bindAt, deleteOne), nil
}

// arrivals creates pods c000000, c000001, ... in ns at rate per second for dur, each
// from its own goroutine, waits up to 30 s for them all to be bound and returns their
// creation-to-bind latencies (creation: just before the create call). The caller's
// watch records binds in bindAt under mu. With each pod, then, when not nil, is called
// under mu and returns what to do after the create (or nil).
func (b *bench) arrivals(ctx context.Context, ns, schedulerName string, gpu gpuAsk, rate float64, dur time.Duration,
	mu *sync.Mutex, bindAt map[string]time.Time, then func() func(context.Context) error) (res churnResult) {
	var (
		errs    atomic.Int64
		wg      sync.WaitGroup
		names   []string
		created = map[string]time.Time{}
	)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	start := time.Now()
	for i := 0; time.Since(start) < dur; i++ {
		<-tick.C
		name := fmt.Sprintf("c%06d", i)
		names = append(names, name)
		mu.Lock()
		created[name] = time.Now()
		var after func(context.Context) error
		if then != nil {
			after = then()
		}
		mu.Unlock()
		wg.Go(func() {
			if err := b.createPod(ctx, ns, name, schedulerName, gpu, nil); err != nil {
				errs.Add(1)
			}
			if after != nil {
				if err := after(ctx); err != nil {
					errs.Add(1)
				}
			}
		})
		if i > 0 && i%int(rate*30) == 0 {
			fmt.Fprintf(os.Stderr, "%s: %d pods created at %.0f/s\n", ns, i, rate)
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	wg.Wait()
	// Grace for the last pods: up to 30 s for every pod created to be bound.
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
	return res
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
// and latency with no scheduling work, also for pods created while it runs. With claims
// it first allocates each pod's ResourceClaims as a scheduler does (delete protection,
// then allocation and reservation), a GPU of the node each, in turn.
func (b *bench) ceilingWatch(claims bool) runner {
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
						n := int(next.Add(1))
						node := b.nodeList[n%len(b.nodeList)]
						if claims {
							if err := b.allocateClaims(ctx, p, node, n/len(b.nodeList)%gpusPerNode); err != nil {
								fmt.Fprintf(os.Stderr, "%s: %v\n", ns, err)
								continue
							}
						}
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
