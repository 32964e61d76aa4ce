package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// Options shape the cluster.
type Options struct {
	// Nodes is how many Machines the MachineDeployment starts with (default 10).
	Nodes int
	// MinNodes is the MachineDeployment's min size for autoscalers (default 2).
	MinNodes int
	// GPUs is the simulated node model of every node (tessera-node-agent --fake-gpus).
	GPUs string
	// Dir holds the logs, certificates and state; empty: a new temporary directory.
	Dir string
	// Logf reports progress.
	Logf func(format string, args ...any)
	// Faults builds Tessera's binaries with their fault points (-tags faults), each
	// process serving them on an address FailpointAddr returns.
	Faults bool
	// Replicas of the scheduler and of the autoscaler (default 1). Above one they elect
	// a leader through a Lease of LeaseDuration (default 15s); the second replica of
	// each is named tessera-scheduler-2, tessera-autoscaler-2.
	Replicas      int
	LeaseDuration time.Duration
	// SchedulerConfig is the scheduler's --config file; empty: its default profile.
	SchedulerConfig string
}

// The names of the objects the harness creates.
const (
	Namespace        = "tessera-system"
	ClusterNamespace = "fleet"
	ClusterName      = "gpu"
	DeploymentName   = "gpu-a100"
	webhookSecret    = "tessera-webhook-tls"
)

// Cluster is a running control plane with Tessera, Cluster API, Flux, JobSet, KubeRay
// and Prometheus.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Client     client.Client
	// Procs are the running components by name: kube-controller-manager, kwok,
	// capi-manager, source-controller, kustomize-controller, jobset-controller,
	// kuberay-operator, prometheus, and tessera-scheduler, tessera-webhook,
	// tessera-autoscaler, agent-<node>.
	Procs map[string]*Process
	// Prometheus is the server's base URL; Git the repository Flux syncs.
	Prometheus string
	Git        *GitServer

	opts    Options
	env     *testenv.Env
	bins    Binaries
	tessera string // the control-plane binary (cmd/tessera)
	agent   string // the node agent's binary (cmd/tessera-node-agent)
	logDir  string
	cancel  context.CancelFunc
	done    []func()

	// mpsBin holds the agents' stand-in MPS control program; toolkitConfig is the NVIDIA
	// container toolkit configuration they check (dra.go).
	mpsBin, toolkitConfig string

	mu         sync.Mutex
	agentPorts map[string]int
	failpoints map[string]string // process name: its fault points' address
	metrics    map[string]string // Tessera's control-plane processes: their metrics address
}

// Start brings the whole cluster up; Stop tears it down.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Nodes == 0 {
		opts.Nodes = 10
	}
	if opts.MinNodes == 0 {
		opts.MinNodes = 2
	}
	if opts.GPUs == "" {
		opts.GPUs = "dgxa100-80gb"
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	bins, err := loadBinaries(root)
	if err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		if opts.Dir, err = os.MkdirTemp("", "tessera-e2e-"); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	c = &Cluster{
		Dir: opts.Dir, Procs: map[string]*Process{}, opts: opts, bins: bins, cancel: cancel,
		logDir: filepath.Join(opts.Dir, "logs"), agentPorts: map[string]int{}, failpoints: map[string]string{}, metrics: map[string]string{},
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for _, step := range []struct {
		what string
		run  func(context.Context, string) error
	}{
		{"etcd and kube-apiserver", c.startAPIServer},
		{"kube-controller-manager and kwok", c.startNodeComponents},
		{"Prometheus", c.startPrometheus},
		{"Tessera's webhook, scheduler and autoscaler", c.startTessera},
		{"the JobSet controller and the KubeRay operator", c.startWorkloadControllers},
		{"Cluster API and the fake infrastructure provider", c.startClusterAPI},
		{"Flux and the git server", c.startFlux},
	} {
		began := time.Now()
		if err := step.run(ctx, root); err != nil {
			return c, fmt.Errorf("%s: %w (logs in %s)", step.what, err, c.logDir)
		}
		opts.Logf("started %s in %s", step.what, time.Since(began).Round(100*time.Millisecond))
	}
	return c, nil
}

// Stop ends every component, newest first, and the API server last.
func (c *Cluster) Stop() {
	c.cancel()
	for i := len(c.done) - 1; i >= 0; i-- {
		c.done[i]()
	}
	c.done = nil
}

// Logs returns the last lines of every component's log, for a failed run.
func (c *Cluster) Logs(lines int) string {
	var out string
	for _, name := range slices.Sorted(maps.Keys(c.Procs)) {
		out += fmt.Sprintf("----- %s (%s)\n%s\n", name, c.Procs[name].log, c.Procs[name].Tail(lines))
	}
	return out
}

// FailpointAddr is the address where the process name (a Tessera component started
// with Options.Faults) serves its fault points; "" for any other.
func (c *Cluster) FailpointAddr(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failpoints[name]
}

// MetricsAddr is where Tessera's control-plane process name (tessera-scheduler, ...)
// serves its metrics; "" for any other.
func (c *Cluster) MetricsAddr(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metrics[name]
}

// Process is the running component name (see Procs), or nil.
func (c *Cluster) Process(name string) *Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Procs[name]
}

// ProcessNames are the components started so far, sorted.
func (c *Cluster) ProcessNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.Procs))
}

// Env is the control plane's API server and etcd (to restart them).
func (c *Cluster) Env() *testenv.Env { return c.env }

// run starts a component and registers its stop. A Tessera component of a cluster with
// Options.Faults serves its fault points on an address of its own.
func (c *Cluster) run(name, bin string, args []string, env ...string) (*Process, error) {
	if c.opts.Faults && (bin == c.tessera || bin == c.agent) {
		addr := "127.0.0.1:" + strconv.Itoa(freePort())
		env = append(env, "TESSERA_FAILPOINTS_ADDR="+addr)
		c.mu.Lock()
		c.failpoints[name] = addr
		c.mu.Unlock()
	}
	p, err := startProcess(c.logDir, name, bin, args, env...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.Procs[name] = p
	c.mu.Unlock()
	c.done = append(c.done, func() { p.Stop(10 * time.Second) })
	return p, nil
}

func (c *Cluster) startAPIServer(ctx context.Context, root string) error {
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return err
	}
	assets := filepath.Join(c.Dir, "assets")
	crds := filepath.Join(c.Dir, "crds")
	for _, d := range []string{assets, crds} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for name, bin := range map[string]string{"kube-apiserver": c.bins["KUBE_APISERVER"], "etcd": c.bins["ETCD"]} {
		_ = os.Remove(filepath.Join(assets, name))
		if err := os.Symlink(bin, filepath.Join(assets, name)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(crds, "fakeinfra.yaml"), []byte(fakeInfraCRDs), 0o644); err != nil {
		return err
	}
	capiCRDs, err := hackOutput(root, "capi-crds.sh", "--all")
	if err != nil {
		return err
	}
	// The Workload API is served (feature gate GenericWorkload, scheduling.k8s.io/v1alpha3),
	// and JobSet's and KubeRay's CRDs installed, so that the scheduler watches their gangs.
	env, err := testenv.New(testenv.Options{Assets: assets, WorkloadAPI: true,
		ExtraCRDDirs: []string{capiCRDs, c.bins["FLUX_CRDS"], c.bins["WORKLOAD_CRDS"], crds}})
	if err != nil {
		return err
	}
	c.env, c.Client = env, env.Client
	c.done = append(c.done, func() { _ = env.Stop() })
	if err := clusterv1.AddToScheme(env.Scheme); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := env.WriteKubeconfig(c.Kubeconfig); err != nil {
		return err
	}
	for _, ns := range []string{Namespace, ClusterNamespace, "flux-system"} {
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// startNodeComponents runs kube-controller-manager (Jobs create pods, evicted pods come
// back, the default ServiceAccount exists, Ready nodes lose the not-ready taint, pods'
// ResourceClaimTemplates become ResourceClaims, released when the pods end) and kwok
// (fake nodes stay Ready; their pods run, and complete after tessera.dev/fake-runtime).
func (c *Cluster) startNodeComponents(ctx context.Context, _ string) error {
	if _, err := c.run("kube-controller-manager", c.bins["KUBE_CONTROLLER_MANAGER"], []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--authentication-skip-lookup",
		"--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(freePort()),
		"--controllers=job,replicaset,garbagecollector,serviceaccount,namespace,nodelifecycle,podgc,disruption,resourceclaim-controller",
		"--node-monitor-grace-period=60s",
		"--concurrent-job-syncs=10",
	}); err != nil {
		return err
	}
	stages := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := writeKwokStages(stages); err != nil {
		return err
	}
	if _, err := c.run("kwok", c.bins["KWOK"], []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--config=" + stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=10.0.0.1",
		"--server-address=127.0.0.1:" + strconv.Itoa(freePort()),
	}); err != nil {
		return err
	}
	// The default ServiceAccount shows kube-controller-manager is working.
	return poll(ctx, time.Minute, "the default ServiceAccount", func() error {
		return c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
	})
}

// startTessera runs the webhook (its certificate from its own rotator, the API server
// reaching it on https://localhost), the scheduler and the autoscaler, and creates the
// DeviceClasses the node agents' DRA devices are claimed through.
func (c *Cluster) startTessera(ctx context.Context, root string) error {
	dir, err := os.MkdirTemp(c.Dir, "bin-")
	if err != nil {
		return err
	}
	var tags []string
	if c.opts.Faults {
		tags = append(tags, "faults")
	}
	if c.tessera, err = testenv.BuildTesseraTo(dir, tags...); err != nil {
		return err
	}
	if c.agent, err = testenv.BuildNodeAgentTo(dir, tags...); err != nil {
		return err
	}
	if c.mpsBin, c.toolkitConfig, err = writeAgentSupport(filepath.Join(c.Dir, "agent")); err != nil {
		return err
	}
	if err := c.installDeviceClasses(ctx, root); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: webhookSecret}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	webhookPort := freePort()
	webhooks, err := c.env.DecodeFiles(filepath.Join(root, "deploy", "kustomize", "base", "webhook", "webhooks.yaml"))
	if err != nil {
		return err
	}
	if err := c.installWebhooks(ctx, webhooks, fmt.Sprintf("https://localhost:%d", webhookPort), nil); err != nil {
		return err
	}
	certDir := filepath.Join(c.Dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return err
	}
	testenv.MountSecret(ctx, c.Client, client.ObjectKey{Namespace: Namespace, Name: webhookSecret}, certDir)
	kc := "--kubeconfig=" + c.Kubeconfig
	// The components all run as the kubeconfig's user here; the webhook lets the
	// scheduler's identity write the scheduling state, so it is told who that is.
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Client.Create(ctx, review); err != nil {
		return fmt.Errorf("who is the kubeconfig's user: %w", err)
	}
	type component struct {
		name string
		args []string
	}
	components := []component{
		{"tessera-webhook", []string{"webhook", kc, "--namespace=" + Namespace, "--port=" + strconv.Itoa(webhookPort),
			"--cert-dir=" + certDir, "--cert-extra-dns-names=localhost", "--scheduler-user=" + review.Status.UserInfo.Username}},
	}
	scheduler := []string{"scheduler", kc, "--period=1s"}
	if c.opts.SchedulerConfig != "" {
		scheduler = append(scheduler, "--config="+c.opts.SchedulerConfig)
	}
	autoscaler := []string{"autoscaler", kc, "--period=2s", "--revalidate-after=4s", "--step-timeout=2m"}
	for i := range max(c.opts.Replicas, 1) {
		suffix, election := "", []string{"--leader-elect=false"}
		if i > 0 {
			suffix = "-" + strconv.Itoa(i+1)
		}
		if c.opts.Replicas > 1 {
			election = []string{"--leader-elect=true", "--leader-election-namespace=" + Namespace,
				"--leader-elect-lease-duration=" + cmp.Or(c.opts.LeaseDuration, 15*time.Second).String()}
		}
		components = append(components,
			component{"tessera-scheduler" + suffix, append(slices.Clone(scheduler), election...)},
			component{"tessera-autoscaler" + suffix, append(slices.Clone(autoscaler), election...)})
	}
	for _, comp := range components {
		metrics, probe := freePort(), freePort()
		args := append(comp.args, "--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metrics), "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe))
		// A pod's UID, the same across the process's restarts as across a container's.
		p, err := c.run(comp.name, c.tessera, args, "POD_UID="+comp.name)
		if err != nil {
			return err
		}
		if err := c.addScrapeTarget(comp.name, metrics); err != nil {
			return err
		}
		c.mu.Lock()
		c.metrics[comp.name] = "127.0.0.1:" + strconv.Itoa(metrics)
		c.mu.Unlock()
		if err := waitReady(ctx, p, probe); err != nil {
			return err
		}
	}
	return nil
}

// installWebhooks creates the webhook configurations objs with the API server calling
// base+path (https://localhost:port/...) instead of their Service, checking the server's
// certificate against caBundle when it is set (else the configurations' own).
func (c *Cluster) installWebhooks(ctx context.Context, objs []client.Object, base string, caBundle []byte) error {
	toURL := func(cc *admissionregistrationv1.WebhookClientConfig) {
		url := base + *cc.Service.Path
		cc.Service, cc.URL = nil, &url
		if caBundle != nil {
			cc.CABundle = caBundle
		}
	}
	for _, o := range objs {
		switch w := o.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for i := range w.Webhooks {
				toURL(&w.Webhooks[i].ClientConfig)
			}
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for i := range w.Webhooks {
				toURL(&w.Webhooks[i].ClientConfig)
			}
		}
		if err := c.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("create %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// startClusterAPI runs Cluster API's core manager and the test's infrastructure
// provider, and creates the Cluster (its kubeconfig Secret pointing at this same API
// server) and a MachineDeployment of opts.Nodes Machines.
func (c *Cluster) startClusterAPI(ctx context.Context, _ string) error {
	certDir := filepath.Join(c.Dir, "capi-webhook-certs")
	if err := writeSelfSignedCert(certDir, "localhost"); err != nil {
		return err
	}
	if _, err := c.run("capi-manager", c.bins["CAPI_MANAGER"], []string{
		"--leader-elect=false",
		"--webhook-cert-dir=" + certDir, "--webhook-port=" + strconv.Itoa(freePort()),
		"--diagnostics-address=127.0.0.1:" + strconv.Itoa(freePort()), "--insecure-diagnostics",
		"--health-addr=127.0.0.1:" + strconv.Itoa(freePort()),
	}, "KUBECONFIG="+c.Kubeconfig); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(c.logDir, "fake-infrastructure.log"))
	if err != nil {
		return err
	}
	c.done = append(c.done, func() { logFile.Close() })
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(logFile, time.Now().Format(time.RFC3339), prefix, args) }, funcr.Options{})
	ctrl.SetLogger(log)
	mgr, err := ctrl.NewManager(c.env.Config, ctrl.Options{Scheme: c.env.Scheme, Logger: log, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	fm := &unstructured.Unstructured{}
	fm.SetGroupVersionKind(fakeMachineGVK)
	// One test process starts a cluster per test, each with this controller; its
	// metrics are off, so the same name in every cluster names nothing twice.
	unchecked := controller.Options{SkipNameValidation: ptr.To(true)}
	if err := ctrl.NewControllerManagedBy(mgr).Named("fakemachine").For(fm).WithOptions(unchecked).
		Complete(&fakeInfra{client: mgr.GetClient(), agents: c}); err != nil {
		return err
	}
	mctx, stop := context.WithCancel(ctx)
	mgrDone := make(chan struct{})
	go func() {
		defer close(mgrDone)
		if err := mgr.Start(mctx); err != nil {
			c.opts.Logf("fake infrastructure provider: %v", err)
		}
	}()
	c.done = append(c.done, func() { stop(); <-mgrDone })
	kubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	for _, o := range clusterObjects(kubeconfig, int32(c.opts.Nodes), c.opts.MinNodes) {
		if err := c.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return poll(ctx, 3*time.Minute, fmt.Sprintf("%d Machines with Nodes", c.opts.Nodes), func() error {
		var ms clusterv1.MachineList
		if err := c.Client.List(ctx, &ms, client.InNamespace(ClusterNamespace)); err != nil {
			return err
		}
		ready := 0
		for _, m := range ms.Items {
			if m.Status.NodeRef.IsDefined() {
				ready++
			}
		}
		if ready < c.opts.Nodes {
			return fmt.Errorf("%d of %d Machines have a Node", ready, c.opts.Nodes)
		}
		return nil
	})
}

// StartAgent runs the node agent of a fake node on simulated GPUs, its node's DRA driver
// (idempotent).
func (c *Cluster) StartAgent(node string) error {
	name := "agent-" + node
	c.mu.Lock()
	p, ok := c.Procs[name]
	c.mu.Unlock()
	if ok {
		if exited, _ := p.Exited(); !exited {
			return nil
		}
		return p.Start()
	}
	port := freePort()
	draArgs, env, err := c.agentDRA(node)
	if err != nil {
		return err
	}
	if _, err := c.run(name, c.agent, append([]string{"--node-name=" + node, "--kubeconfig=" + c.Kubeconfig,
		"--fake-gpus=" + c.opts.GPUs, "--device-plugin-dir=", "--sample-interval=5s",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(port)}, draArgs...), env...); err != nil {
		return err
	}
	c.mu.Lock()
	c.agentPorts[node] = port
	c.mu.Unlock()
	return c.writeAgentTargets()
}

// StopAgent stops the node agent of a node that is going away.
func (c *Cluster) StopAgent(node string) {
	c.mu.Lock()
	p, ok := c.Procs["agent-"+node]
	delete(c.agentPorts, node)
	c.mu.Unlock()
	if ok {
		p.Stop(5 * time.Second)
	}
	_ = c.writeAgentTargets()
}

// waitReady waits until the process answers on 127.0.0.1:port/readyz, failing at once
// when it exits.
func waitReady(ctx context.Context, p *Process, port int) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	return poll(ctx, 2*time.Minute, p.Name+" ready", func() error {
		if exited, err := p.Exited(); exited {
			return giveUp{fmt.Errorf("%s exited (%v): %s", p.Name, err, p.Tail(3))}
		}
		return httpOK(url)
	})
}

// giveUp is an error of a poll's check that ends the poll at once.
type giveUp struct{ error }

// poll calls check every half second until it succeeds, timeout passes or it gives up,
// then returns its last error.
func poll(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	return pollEvery(ctx, 500*time.Millisecond, timeout, what, check)
}

// pollEvery is poll with its own interval.
func pollEvery(ctx context.Context, interval, timeout time.Duration, what string, check func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		last = check()
		if errors.As(last, &giveUp{}) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, errors.Join(err, last))
	}
	return nil
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
