package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Env is a running API server with Tessera's CRDs.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	// Webhook holds the serving options when Options.Webhooks was set.
	Webhook *envtest.WebhookInstallOptions
	env     *envtest.Environment
	// stopped are the command lines of control-plane processes Kill ended; revived
	// those Revive started again.
	stopped map[string][]string
	revived []*exec.Cmd
}

// Options tunes the environment.
type Options struct {
	// ExtraCRDDirs are installed besides deploy/crds (for example Cluster API's CRDs).
	ExtraCRDDirs []string
	// WithoutCRDs leaves deploy/crds out, for a test that installs them as a user does
	// (with the Helm chart).
	WithoutCRDs bool
	// Assets is the directory holding kube-apiserver and etcd; empty: Assets().
	Assets string
	// Webhooks are installed and pointed at a local server the test starts.
	Webhooks []*admissionregistrationv1.MutatingWebhookConfiguration
	// ValidatingWebhooks are installed like Webhooks.
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	// WorkloadCRDs installs the CRDs of the workload controllers whose gangs the
	// scheduler finds (JobSet, KubeRay, LeaderWorkerSet, Kubeflow's operators, the
	// coscheduling PodGroup), as hack/workload-crds.sh copies them.
	WorkloadCRDs bool
	// WorkloadAPI serves the Kubernetes Workload API (scheduling.k8s.io/v1alpha3
	// PodGroups, pods' spec.schedulingGroup): feature gate GenericWorkload.
	WorkloadAPI bool
}

// RepoRoot returns the repository root (the directory holding go.mod of the main module).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module github.com/tessera-gpu/tessera\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/tessera-gpu/tessera above the working directory")
		}
		dir = parent
	}
}

// WorkloadCRDDir is the directory of the workload controllers' CRDs that
// hack/workload-crds.sh copies (from the Go module cache; downloaded the first time).
func WorkloadCRDDir(root string) (string, error) {
	out, err := exec.Command(filepath.Join(root, "hack", "workload-crds.sh")).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	if err != nil {
		return "", fmt.Errorf("workload CRDs (hack/workload-crds.sh): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Assets returns the directory holding kube-apiserver and etcd, or an error that tells
// how to build them.
func Assets(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command(filepath.Join(root, "hack", "k8s-binaries.sh"), "--cached-only").Output()
	if err != nil {
		return "", fmt.Errorf("kube-apiserver and etcd are not built yet: run `make k8s-binaries` (or `make test`, which builds them)")
	}
	return strings.TrimSpace(string(out)), nil
}

// New starts the API server and installs the CRDs.
func New(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := opts.Assets
	if assets == "" {
		if assets, err = Assets(root); err != nil {
			return nil, err
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := tesserav1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	var crdDirs []string
	if !opts.WithoutCRDs {
		crdDirs = append(crdDirs, filepath.Join(root, "deploy", "crds"))
	}
	crdDirs = append(crdDirs, opts.ExtraCRDDirs...)
	if opts.WorkloadCRDs {
		dir, err := WorkloadCRDDir(root)
		if err != nil {
			return nil, err
		}
		crdDirs = append(crdDirs, dir)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   opts.Webhooks,
			ValidatingWebhooks: opts.ValidatingWebhooks,
		},
	}
	// envtest waits 10s for the CRDs to be served; on a busy two-core machine the API
	// server can take longer to serve a few dozen.
	env.CRDInstallOptions.MaxTime = time.Minute
	if opts.WorkloadAPI {
		env.ControlPlane.GetAPIServer().Configure().
			Append("feature-gates", "GenericWorkload=true").Append("runtime-config", "scheduling.k8s.io/v1alpha3=true")
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	e := &Env{Config: cfg, Client: c, Scheme: scheme, env: env}
	if len(opts.Webhooks)+len(opts.ValidatingWebhooks) > 0 {
		e.Webhook = &env.WebhookInstallOptions
	}
	return e, nil
}

// Stop shuts the API server and etcd down.
func (e *Env) Stop() error {
	e.stopRevived()
	return e.env.Stop()
}

// Start starts an environment for one test and stops it when the test ends. Without
// binaries it skips, unless TESSERA_REQUIRE_K8S=1 makes that a failure.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		SkipOrFail(t, err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Logf("stop API server: %v", err)
		}
	})
	return e
}

// SkipOrFail skips the test when the API server cannot start, or fails it when
// TESSERA_REQUIRE_K8S=1.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("TESSERA_REQUIRE_K8S") == "1" {
		t.Fatalf("real API server required: %v", err)
	}
	t.Skipf("skipping: %v", err)
}

// CreateNode creates node as a kubelet would leave it: with its status (which Create
// drops) and without the not-ready taint the API server puts on a new node, which no
// kubelet lifts here. node is left as last written.
func CreateNode(ctx context.Context, c client.Client, node *corev1.Node) error {
	status := *node.Status.DeepCopy()
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("create node %s: %w", node.Name, err)
	}
	node.Status = status
	if err := c.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("status of node %s: %w", node.Name, err)
	}
	node.Spec.Taints = nil
	if err := c.Update(ctx, node); err != nil {
		return fmt.Errorf("taints of node %s: %w", node.Name, err)
	}
	return nil
}

// Context returns a context that ends with the test or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Main starts one API server for a test package, hands it to ready, runs the tests and
// exits. Without binaries the tests run with no Env (and should skip), unless
// TESSERA_REQUIRE_K8S=1 makes that a failure.
func Main(m *testing.M, opts Options, ready func(*Env)) {
	e, err := New(opts)
	if err != nil {
		MainWithout(m, err)
	}
	ready(e)
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop API server:", err)
	}
	os.Exit(code)
}

// MainWithout is the end of a TestMain whose API server cannot start, for err: it runs
// the tests with no Env (they should skip) and exits, unless TESSERA_REQUIRE_K8S=1
// makes that a failure.
func MainWithout(m *testing.M, err error) {
	if os.Getenv("TESSERA_REQUIRE_K8S") == "1" {
		fmt.Fprintln(os.Stderr, "real API server required:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "skipping API server tests:", err)
	os.Exit(m.Run())
}
