package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// workers is the concurrency of the bench's own creates and of the ceiling's binds: enough
// binds in flight that the API server, not the client, sets the ceiling.
const workers = 256

type bench struct {
	env      *testenv.Env
	cfg      *rest.Config
	pb       *rest.Config // cfg, speaking protobuf
	cs       *kubernetes.Clientset
	timeout  time.Duration
	out      string // the report's path; logs go next to it
	nodeList []string
	// published are how many of nodeList have their GPUs published as ResourceSlices.
	published int
	// ts says how Tessera's scheduler is run.
	ts tesseraRun
	// rssMiB is the peak RSS of the last scheduler run as its own process.
	rssMiB float64
	// rounds is how many times each throughput case runs every arm.
	rounds int
	// watched adds the watched ceiling to the throughput cases.
	watched bool
	// apiServerProfile, when positive, is how long the API server is profiled from
	// each measurement's first bind.
	apiServerProfile time.Duration
}

// tesseraRun is how Tessera's scheduler is run.
type tesseraRun struct {
	// bin is the tessera binary; empty: the scheduler runs in this process.
	bin string
	// flags are more flags for the tessera process.
	flags []string
	// cpuProfile, when set, is where a scheduler run in this process writes its CPU
	// profile (one file per measurement: <cpuProfile>-<namespace>).
	cpuProfile string
}

func newBench(env *testenv.Env, timeout time.Duration, out string) (*bench, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	// The bench's own requests and watches speak protobuf, as kubelets, controllers and
	// schedulers do: a JSON watch would make the API server encode every bound pod a
	// second time for the bench alone, which the ceiling (whose only watch is the
	// bench's) would not pay but every scheduler with its own protobuf watch would.
	pb := rest.CopyConfig(cfg)
	pb.ContentType = k8sruntime.ContentTypeProtobuf
	pb.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, err
	}
	return &bench{env: env, cfg: cfg, pb: pb, cs: cs, timeout: timeout, out: out}, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(n int, f func(int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	return first
}

// Every bench node has gpusPerNode A100-80GB GPUs of gpuMemoryMiB each.
const (
	gpusPerNode  = 8
	gpuMemoryMiB = 81920
)

// nodes creates nodes up to n, each with 8 A100-80GB GPUs, 128 CPUs and ready.
func (b *bench) nodes(ctx context.Context, n int) error {
	have := len(b.nodeList)
	if n <= have {
		return nil
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("128"), corev1.ResourceMemory: resource.MustParse("1Ti"), corev1.ResourcePods: resource.MustParse("110"),
		tesserav1.ResourceGPU: *resource.NewQuantity(gpusPerNode, resource.DecimalSI), tesserav1.ResourceGPUMemory: *resource.NewQuantity(gpusPerNode*gpuMemoryMiB, resource.DecimalSI),
	}
	names := make([]string, n-have)
	err := parallel(n-have, func(i int) error {
		name := fmt.Sprintf("node-%05d", have+i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{tesserav1.LabelGPUModel: "A100-80GB"}}}
		node, err := b.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		node.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
		if node, err = b.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		node.Spec.Taints = nil // the API server taints new nodes not-ready; no kubelet will clear it
		if _, err := b.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		names[i] = name
		return nil
	})
	b.nodeList = append(b.nodeList, names...)
	return err
}

// runner starts one scheduler under test over the namespace's pending pods.
type runner struct {
	schedulerName string
	start         func(ctx context.Context, ns string) (stop func(), err error)
}

// measure creates the pods (gangs of size gang, asking for a GPU as gpu says), starts
// the runner and returns the pods bound per second between the first and the last bind
// the watch reports; the pods are deleted afterwards so the nodes are empty for the
// next measurement.
func (b *bench) measure(ctx context.Context, ns string, pods, gang int, gpu gpuAsk, r runner) (_ float64, err error) {
	if err := b.createPods(ctx, ns, r.schedulerName, pods, gang, gpu); err != nil {
		return 0, err
	}
	defer b.deletePodsAfter(ctx, ns, &err)
	first, last, err := b.watchBinds(ctx, ns, pods, r)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ns, err)
	}
	return float64(pods-1) / last.Sub(first).Seconds(), nil
}

// gpuAsk is how a bench pod asks for its GPU.
type gpuAsk int

const (
	// gpuExtended: one tessera.dev/gpu, the extended resource.
	gpuExtended gpuAsk = iota
	// gpuNone: no GPU.
	gpuNone
	// gpuClaim: a ResourceClaim of one whole GPU of the DeviceClass gpu.tessera.dev,
	// named after the pod and created just before it.
	gpuClaim
)

// podRequests are a bench pod's container requests (and limits): 1 CPU, 1Gi and, for
// gpuExtended, one tessera.dev/gpu.
func podRequests(gpu gpuAsk) corev1.ResourceList {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	if gpu == gpuExtended {
		req[tesserav1.ResourceGPU] = resource.MustParse("1")
	}
	return req
}

// createPod creates the pod name of ns for schedulerName, and before it its claim when
// gpu is gpuClaim; labels may be nil.
func (b *bench) createPod(ctx context.Context, ns, name, schedulerName string, gpu gpuAsk, labels map[string]string) error {
	req := podRequests(gpu)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{SchedulerName: schedulerName,
			Containers: []corev1.Container{{Name: "main", Image: "x", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}}},
	}
	if gpu == gpuClaim {
		if _, err := b.cs.ResourceV1().ResourceClaims(ns).Create(ctx, apitest.GPUClaim(name, ns, 1, ""), metav1.CreateOptions{}); err != nil {
			return err
		}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	_, err := b.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	return err
}

func (b *bench) createPods(ctx context.Context, ns, schedulerName string, pods, gang int, gpu gpuAsk) error {
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if gang > 1 {
		err := parallel(pods/gang, func(i int) error {
			pg := &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("g%05d", i), Namespace: ns}, Spec: tesserav1.PodGroupSpec{MinMember: int32(gang)}}
			return b.env.Client.Create(ctx, pg)
		})
		if err != nil {
			return err
		}
	}
	return parallel(pods, func(i int) error {
		var labels map[string]string
		if gang > 1 {
			labels = map[string]string{tesserav1.LabelPodGroup: fmt.Sprintf("g%05d", i/gang)}
		}
		return b.createPod(ctx, ns, fmt.Sprintf("p%05d", i), schedulerName, gpu, labels)
	})
}

// watchBinds starts r and waits until every pod of ns is bound, counting binds from
// an informer's watch (which re-establishes a watch the server closes).
func (b *bench) watchBinds(ctx context.Context, ns string, pods int, r runner) (first, last time.Time, err error) {
	var mu sync.Mutex
	bound := map[string]bool{}
	done := make(chan struct{})
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if bound[p.Name] {
			return
		}
		now := time.Now()
		if len(bound) == 0 {
			first = now
			go b.profileAPIServer(ctx, ns)
		}
		bound[p.Name], last = true, now
		switch {
		case len(bound) == pods:
			close(done)
		case len(bound)%1000 == 0:
			fmt.Fprintf(os.Stderr, "%s: %d/%d bound\n", ns, len(bound), pods)
		}
	}
	stop, err := b.startWatched(ctx, ns, r, seen)
	if err != nil {
		return first, last, err
	}
	defer stop()
	select {
	case <-done:
	case <-time.After(b.timeout):
		mu.Lock()
		defer mu.Unlock()
		return first, last, fmt.Errorf("%d of %d pods bound after %s%s", len(bound), pods, b.timeout, b.whyPending(ctx, ns))
	}
	mu.Lock()
	defer mu.Unlock()
	return first, last, nil
}

// startWatched starts an informer that calls seen with every pod of ns added or
// updated and, once it has synced, starts r; stop stops r, then the informer.
func (b *bench) startWatched(ctx context.Context, ns string, r runner, seen func(obj any)) (stop func(), err error) {
	factory := informers.NewSharedInformerFactoryWithOptions(b.cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	factory.Start(wctx.Done())
	factory.WaitForCacheSync(wctx.Done())
	stopRunner, err := r.start(ctx, ns)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		stopRunner()
		cancel()
	}, nil
}

func (b *bench) deletePods(ctx context.Context, ns string) error {
	zero := int64(0)
	// One DeleteCollection of tens of thousands of pods can time out part way, so it is
	// repeated until the namespace is empty: a pod left bound would hold its GPU through
	// the next measurement.
	for range 20 {
		_ = b.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		for range 100 {
			l, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil && len(l.Items) == 0 {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return fmt.Errorf("the pods of namespace %s are still there after deleting them for 200s", ns)
}

// deletePodsAfter deletes the pods of ns, then their ResourceClaims, when a
// measurement ends, and reports a failure to do so in *err unless the measurement
// failed already.
func (b *bench) deletePodsAfter(ctx context.Context, ns string, err *error) {
	derr := b.deletePods(ctx, ns)
	if derr == nil {
		derr = b.deleteClaims(ctx, ns)
	}
	if derr != nil && *err == nil {
		*err = derr
	}
}

// ceiling binds the pods round-robin over the nodes, with no scheduling work.
func (b *bench) ceiling() runner { return b.ceilingBinds(false) }

// watchedCeiling is the ceiling of a scheduler that keeps a cache and assigns GPUs:
// the ceiling's binds, each writing the annotations Tessera's bind writes (the GPU
// assignment and the pod's UID), sent on a connection of their own on which an
// informer watches every pod of the cluster, as a scheduler process does.
func (b *bench) watchedCeiling() runner { return b.ceilingBinds(true) }

func (b *bench) ceilingBinds(watched bool) runner {
	return runner{schedulerName: "unscheduled", start: func(ctx context.Context, ns string) (func(), error) {
		cs, stop := b.cs, func() {}
		if watched {
			var err error
			if cs, stop, err = b.podCache(ctx); err != nil {
				return nil, err
			}
		}
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			stop()
			return nil, err
		}
		go func() {
			_ = parallel(len(list.Items), func(i int) error {
				p := &list.Items[i]
				node := b.nodeList[i%len(b.nodeList)]
				binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, UID: p.UID},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				if watched {
					a := tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: p.Spec.Containers[0].Name,
						UUIDs: []string{framework.DerivedGPUUUID(node, i/len(b.nodeList)%gpusPerNode)}}}}
					binding.Annotations = map[string]string{tesserav1.AnnotationGPUAssign: a.Encode(), tesserav1.AnnotationBoundPodUID: string(p.UID)}
				}
				return cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{})
			})
		}()
		return stop, nil
	}}
}

// podCache opens a connection of its own to the API server, as a scheduler process
// has, with an informer over every pod of the cluster on it, synced; it returns the
// clientset of that connection and what stops the informer.
func (b *bench) podCache(ctx context.Context) (*kubernetes.Clientset, func(), error) {
	cfg := rest.CopyConfig(b.pb)
	cfg.Dial = (&net.Dialer{}).DialContext // a config with its own dialer gets its own transport
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(cs, 0)
	factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return cs, func() { cancel(); factory.Shutdown() }, nil
}

// tessera runs Tessera's scheduler as its own process (ts.bin), or else in this
// process, as `tessera scheduler` runs it.
func (b *bench) tessera() runner {
	if b.ts.bin != "" {
		return b.tesseraProcess(b.ts.bin)
	}
	return runner{schedulerName: tesserav1.SchedulerName, start: func(ctx context.Context, ns string) (func(), error) {
		sc, err := scheduler.Profile("tessera")
		if err != nil {
			return nil, err
		}
		mgr, _, err := daemon.NewManager(b.cfg, b.env.Scheme, daemon.Config{Scheduler: sc, Serving: controller.Serving{MetricsAddr: "0", ProbeAddr: "0"}, Log: logr.Discard()})
		if err != nil {
			return nil, err
		}
		stopProfile, err := b.startCPUProfile(ns)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := mgr.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "tessera scheduler:", err)
			}
		}()
		return func() { cancel(); <-done; stopProfile() }, nil
	}}
}

// kubeScheduler runs the kube-scheduler binary against the API server, with client
// QPS and burst of 5000 (its default QPS of 50 would cap it).
func (b *bench) kubeScheduler(bin string) runner {
	return runner{schedulerName: corev1.DefaultSchedulerName, start: func(ctx context.Context, ns string) (func(), error) {
		dir, err := os.MkdirTemp("", "kube-scheduler-config")
		if err != nil {
			return nil, err
		}
		kubeconfig := filepath.Join(dir, "kubeconfig")
		if err := b.env.WriteKubeconfig(kubeconfig); err != nil {
			return nil, err
		}
		cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q, qps: 5000, burst: 5000}
leaderElection: {leaderElect: false}
`, kubeconfig)
		cfgPath := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		stop, err := b.process(ctx, "kube-scheduler", ns, bin, "--config="+cfgPath, "--bind-address=127.0.0.1", "--secure-port=0", "--cert-dir={dir}", "--v=0")
		if err != nil {
			return nil, err
		}
		return func() {
			stop()
			_ = os.RemoveAll(dir)
		}, nil
	}}
}

// tesseraProcess runs `tessera scheduler` from bin against the API server, without
// leader election, with client QPS and burst of 5000 like kube-scheduler's.
func (b *bench) tesseraProcess(bin string) runner {
	return runner{schedulerName: tesserav1.SchedulerName, start: func(ctx context.Context, ns string) (func(), error) {
		args := append([]string{"scheduler", "--kubeconfig={kubeconfig}", "--leader-elect=false",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--kube-api-qps=5000", "--kube-api-burst=5000"}, b.ts.flags...)
		return b.process(ctx, "tessera-scheduler", ns, bin, args...)
	}}
}

// heap schedules pods without GPUs on the nodes with Tessera's scheduler in this
// process and returns the live heap afterwards, in MiB.
func (b *bench) heap(ctx context.Context, pods int) (float64, error) {
	const ns = "heap"
	if err := b.createPods(ctx, ns, tesserav1.SchedulerName, pods, 1, gpuNone); err != nil {
		return 0, err
	}
	bin := b.ts.bin
	b.ts.bin = ""
	r := b.tessera()
	b.ts.bin = bin
	var mib float64
	inner := r.start
	r.start = func(ctx context.Context, ns string) (func(), error) {
		stop, err := inner(ctx, ns)
		if err != nil {
			return nil, err
		}
		return func() {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mib = float64(ms.HeapInuse) / (1 << 20)
			stop()
		}, nil
	}
	if _, _, err := b.watchBinds(ctx, ns, pods, r); err != nil {
		return 0, err
	}
	return mib, nil
}

// profileAPIServer writes a CPU profile of the API server over the next
// apiServerProfile to <out's directory>/kube-apiserver-<ns>.pprof, when asked for.
func (b *bench) profileAPIServer(ctx context.Context, ns string) {
	if b.apiServerProfile <= 0 {
		return
	}
	raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(b.apiServerProfile/time.Second))).DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(filepath.Join(filepath.Dir(b.out), "kube-apiserver-"+ns+".pprof"), raw, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: API server profile: %v\n", ns, err)
	}
}

// startCPUProfile starts profiling this process into <cpuProfile>-<ns> when a profile
// was asked for, and returns what stops it.
func (b *bench) startCPUProfile(ns string) (func(), error) {
	if b.ts.cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(b.ts.cpuProfile + "-" + ns)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// whyPending summarizes the FailedScheduling events of ns, most frequent message first,
// for a run whose pods did not all bind.
func (b *bench) whyPending(ctx context.Context, ns string) string {
	list, err := b.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
	if err != nil || len(list.Items) == 0 {
		return "; no FailedScheduling events"
	}
	count := map[string]int{}
	for _, e := range list.Items {
		count[e.Message]++
	}
	msgs := slices.SortedFunc(maps.Keys(count), func(a, b string) int { return count[b] - count[a] })
	var sb strings.Builder
	for _, m := range msgs[:min(3, len(msgs))] {
		fmt.Fprintf(&sb, "; %d events: %s", count[m], m)
	}
	return sb.String()
}
