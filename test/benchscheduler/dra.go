package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// draSizes size the case dra5k.
type draSizes struct {
	nodes, pods int
	// rate and dur are the arrivals after the burst: pods created at rate per second
	// for dur, whose creation-to-bind latency is measured.
	rate float64
	dur  time.Duration
}

// draResult is one arm of dra5k: the burst's bind rate and the arrivals' latency.
type draResult struct {
	podsPerS float64
	arrivals churnResult
}

// draCase measures pods that each use one ResourceClaim of one whole GPU, on nodes
// whose GPUs are published as ResourceSlices: the ceiling (the claims allocated and the
// pods bound round-robin), Tessera, Tessera with the same pods asking the extended
// resource instead (its rate with claims against this one), and kube-scheduler (when
// bin is set), one after another; and the ceiling of the pods with the extended
// resource, which bounds what claims can keep of the extended resource's rate. Each arm creates every pod pending, starts the
// scheduler, measures the burst's binds per second, then creates pods at d.rate for
// d.dur and measures their creation-to-bind latency.
func (b *bench) draCase(ctx context.Context, name string, d draSizes, kubeScheduler string) (Case, error) {
	c := Case{Name: name, Pods: d.pods, ArrivalSeconds: d.dur.Seconds(), ArrivalPodsPerS: d.rate}
	if err := b.nodes(ctx, d.nodes); err != nil {
		return c, err
	}
	if err := b.publishGPUs(ctx); err != nil {
		return c, err
	}
	c.Nodes = len(b.nodeList)
	type arm struct {
		name     string
		r        runner
		gpu      gpuAsk
		rate     *float64
		p50, p99 *float64
		unbound  *int     // nil: not reported
		rss      *float64 // nil: not its own process
	}
	arms := []arm{
		{"ceiling", b.ceilingWatch(true), gpuClaim, &c.CeilingPodsPerS, &c.CeilingP50BindSeconds, &c.CeilingP99BindSeconds, nil, nil},
		{"tessera", b.tessera(), gpuClaim, &c.TesseraPodsPerS, &c.TesseraP50BindSeconds, &c.TesseraP99BindSeconds, &c.TesseraUnbound, &c.TesseraRSSMiB},
		{"ceiling-extended", b.ceilingWatch(false), gpuExtended, &c.CeilingExtendedPodsPerS, &c.CeilingExtendedP50BindSeconds, &c.CeilingExtendedP99BindSeconds, nil, nil},
		{"tessera-extended", b.tessera(), gpuExtended, &c.TesseraExtendedPodsPerS, &c.TesseraExtendedP50BindSeconds, &c.TesseraExtendedP99BindSeconds, nil, nil},
	}
	if kubeScheduler != "" {
		arms = append(arms, arm{"kube", b.kubeScheduler(kubeScheduler), gpuClaim, &c.KubeSchedulerPodsPerS,
			&c.KubeSchedulerP50BindSeconds, &c.KubeSchedulerP99BindSeconds, &c.KubeSchedulerUnbound, &c.KubeSchedulerRSSMiB})
	}
	for _, a := range arms {
		b.rssMiB = 0
		res, err := b.burstThenArrivals(ctx, name+"-"+a.name, a.r, a.gpu, d)
		if err != nil {
			return c, err
		}
		*a.rate, *a.p50, *a.p99 = res.podsPerS, res.arrivals.P50, res.arrivals.P99
		if a.unbound != nil {
			*a.unbound = res.arrivals.Unbound
		}
		if a.rss != nil {
			*a.rss = b.rssMiB
		}
		fmt.Fprintf(os.Stderr, "%s-%s: %.0f pods/s; arrivals p50/p99 %.3f/%.3f s, %d unbound\n",
			name, a.name, res.podsPerS, res.arrivals.P50, res.arrivals.P99, res.arrivals.Unbound)
	}
	c.OfCeiling = c.TesseraPodsPerS / c.CeilingPodsPerS
	c.ClaimsOfExtended = c.TesseraPodsPerS / c.TesseraExtendedPodsPerS
	c.CeilingClaimsOfExtended = c.CeilingPodsPerS / c.CeilingExtendedPodsPerS
	if c.KubeSchedulerPodsPerS > 0 {
		c.VsKubeScheduler = c.TesseraPodsPerS / c.KubeSchedulerPodsPerS
	}
	fmt.Printf("%-8s claims: tessera %7.0f pods/s (p99 %.3f s)   kube-scheduler %7.0f pods/s (p99 %.3f s)   ceiling %7.0f pods/s (p99 %.3f s)   tessera/kube %.2fx   tessera/ceiling %.0f%%\n",
		name, c.TesseraPodsPerS, c.TesseraP99BindSeconds, c.KubeSchedulerPodsPerS, c.KubeSchedulerP99BindSeconds, c.CeilingPodsPerS, c.CeilingP99BindSeconds, c.VsKubeScheduler, 100*c.OfCeiling)
	fmt.Printf("%-8s extended resource: tessera %7.0f pods/s (p99 %.3f s)   ceiling %7.0f pods/s   claims/extended: tessera %.0f%%, ceiling %.0f%%   RSS tessera %.0f MiB, kube-scheduler %.0f MiB\n",
		name, c.TesseraExtendedPodsPerS, c.TesseraExtendedP99BindSeconds, c.CeilingExtendedPodsPerS, 100*c.ClaimsOfExtended, 100*c.CeilingClaimsOfExtended, c.TesseraRSSMiB, c.KubeSchedulerRSSMiB)
	return c, nil
}

// publishGPUs creates Tessera's DeviceClasses and, for every node that has none yet,
// the ResourceSlice the node agent publishes: its GPUs as whole devices, which
// kube-scheduler allocates as well.
func (b *bench) publishGPUs(ctx context.Context) error {
	for _, c := range apitest.DeviceClasses() {
		if _, err := b.cs.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("DeviceClass %s: %w", c.Name, err)
		}
	}
	nodes := b.nodeList[b.published:]
	err := parallel(len(nodes), func(i int) error {
		node := nodes[i]
		s := apitest.GPUSlice(node, gpusPerNode, gpuMemoryMiB, 0, false, func(i int) string { return framework.DerivedGPUUUID(node, i) })
		_, err := b.cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("ResourceSlices: %w", err)
	}
	b.published = len(b.nodeList)
	return nil
}

// burstThenArrivals creates d.pods pods pending in ns, each asking a GPU as gpu says,
// starts r and measures the binds per second from the first bind to the last; then,
// with r still running, creates pods at d.rate for d.dur and measures how long they
// wait. The pods and their claims are deleted afterwards.
func (b *bench) burstThenArrivals(ctx context.Context, ns string, r runner, gpu gpuAsk, d draSizes) (res draResult, err error) {
	if err := b.createPods(ctx, ns, r.schedulerName, d.pods, 1, gpu); err != nil {
		return res, err
	}
	defer b.deletePodsAfter(ctx, ns, &err)
	var (
		mu          sync.Mutex
		bindAt      = map[string]time.Time{}
		first, last time.Time
		burst       int
		done        = make(chan struct{})
	)
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, ok := bindAt[p.Name]; ok {
			return
		}
		bindAt[p.Name] = now
		if !strings.HasPrefix(p.Name, "p") { // an arrival
			return
		}
		if burst == 0 {
			first = now
			go b.profileAPIServer(ctx, ns)
		}
		burst++
		last = now
		switch {
		case burst == d.pods:
			close(done)
		case burst%1000 == 0:
			fmt.Fprintf(os.Stderr, "%s: %d/%d bound\n", ns, burst, d.pods)
		}
	}
	stop, err := b.startWatched(ctx, ns, r, seen)
	if err != nil {
		return res, err
	}
	defer stop()
	select {
	case <-done:
	case <-time.After(b.timeout):
		mu.Lock()
		defer mu.Unlock()
		return res, fmt.Errorf("%s: %d of %d pods bound after %s%s", ns, burst, d.pods, b.timeout, b.whyPending(ctx, ns))
	}
	mu.Lock()
	res.podsPerS = float64(d.pods-1) / last.Sub(first).Seconds()
	mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s: %d pods bound at %.0f/s; creating %.0f pods/s for %s\n", ns, d.pods, res.podsPerS, d.rate, d.dur)
	res.arrivals = b.arrivals(ctx, ns, r.schedulerName, gpu, d.rate, d.dur, &mu, bindAt, nil)
	return res, nil
}

// allocateClaims allocates pod's ResourceClaims on node as a scheduler does before it
// binds: the delete protection first, then the allocation of GPU gpu (the next for each
// further claim) and the pod's reservation.
func (b *bench) allocateClaims(ctx context.Context, pod *corev1.Pod, node string, gpu int) error {
	claims := b.cs.ResourceV1().ResourceClaims(pod.Namespace)
	protect := []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, resourcev1.Finalizer))
	for i, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName == nil {
			return fmt.Errorf("pod %s: claim %s comes from a template, which the bench does not create", pod.Name, pc.Name)
		}
		name := *pc.ResourceClaimName
		if _, err := claims.Patch(ctx, name, types.MergePatchType, protect, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("protect ResourceClaim %s: %w", name, err)
		}
		now := metav1.Now()
		status := resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{
				Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
					Request: "gpu", Driver: tesserav1.DRADriver, Pool: node, Device: fmt.Sprintf("gpu-%d", (gpu+i)%gpusPerNode)}}},
				NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
					{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
				AllocationTimestamp: &now,
			},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
		}
		patch, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return err
		}
		if _, err := claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("allocate ResourceClaim %s: %w", name, err)
		}
	}
	return nil
}

// deleteClaims deletes the ResourceClaims of ns, lifting the delete protection that
// the scheduler put on them (their pods are gone and no scheduler runs to release them).
func (b *bench) deleteClaims(ctx context.Context, ns string) error {
	claims := b.cs.ResourceV1().ResourceClaims(ns)
	list, err := claims.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) == 0 {
		return err
	}
	unprotect := []byte(`{"metadata":{"finalizers":null}}`)
	err = parallel(len(list.Items), func(i int) error {
		c := &list.Items[i]
		if len(c.Finalizers) > 0 {
			if _, err := claims.Patch(ctx, c.Name, types.MergePatchType, unprotect, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("lift the delete protection of ResourceClaim %s/%s: %w", ns, c.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	zero := int64(0)
	for range 20 {
		_ = claims.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if l, err := claims.List(ctx, metav1.ListOptions{Limit: 1}); err == nil && len(l.Items) == 0 {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the ResourceClaims of namespace %s are still there after deleting them for 20s", ns)
}
