package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/test/testenv"
)

// Flux's kinds the harness creates and reads.
var (
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

// startFlux runs the git server and Flux's source- and kustomize-controller.
func (c *Cluster) startFlux(ctx context.Context, _ string) error {
	git, err := startGitServer(filepath.Join(c.Dir, "git"))
	if err != nil {
		return err
	}
	c.Git = git
	c.done = append(c.done, git.Stop)
	storage := "127.0.0.1:" + strconv.Itoa(freePort())
	storageDir := filepath.Join(c.Dir, "flux-storage")
	if err := os.MkdirAll(storageDir, 0o755); err != nil {
		return err
	}
	common := func(health int) []string {
		return []string{
			"--enable-leader-election=false", "--watch-all-namespaces",
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(freePort()),
			"--health-addr=127.0.0.1:" + strconv.Itoa(health),
			"--events-addr=",
		}
	}
	sourceHealth, kustomizeHealth := freePort(), freePort()
	source, err := c.run("source-controller", c.bins["SOURCE_CONTROLLER"], append(common(sourceHealth),
		"--storage-path="+storageDir, "--storage-addr="+storage, "--storage-adv-addr="+storage,
	), "KUBECONFIG="+c.Kubeconfig)
	if err != nil {
		return err
	}
	kustomize, err := c.run("kustomize-controller", c.bins["KUSTOMIZE_CONTROLLER"], common(kustomizeHealth), "KUBECONFIG="+c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, source, sourceHealth); err != nil {
		return err
	}
	return waitReady(ctx, kustomize, kustomizeHealth)
}

// Sync points Flux at path of the git repository: a GitRepository polled every few
// seconds and a Kustomization with health checks on the objects it applies.
func (c *Cluster) Sync(ctx context.Context, name, path string) error {
	repo := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"url": c.Git.URL, "interval": "5s", "ref": map[string]any{"branch": "main"}},
	}}
	repo.SetGroupVersionKind(gitRepositoryGVK)
	repo.SetNamespace("flux-system")
	repo.SetName(name)
	ks := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"interval": "10s", "retryInterval": "5s", "timeout": "1m", "prune": true, "wait": true, "path": path,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": name},
		},
	}}
	ks.SetGroupVersionKind(kustomizationGVK)
	ks.SetNamespace("flux-system")
	ks.SetName(name)
	for _, o := range []client.Object{repo, ks} {
		if err := c.Client.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// ExampleOverlay is the test's kustomization.yaml over gitops/clusters/example.
func ExampleOverlay() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "test", "e2e", "testdata", "e2e", "kustomization.yaml"))
	return string(b), err
}

// SyncExample commits gitops/clusters/example under clusters/example, with overlay
// (the content of a kustomization.yaml over it) as clusters/e2e, points Flux at
// clusters/e2e and waits until it is applied. It returns the commit.
func (c *Cluster) SyncExample(ctx context.Context, overlay string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	files, err := CopyTree(filepath.Join(root, "gitops", "clusters", "example"), "clusters/example")
	if err != nil {
		return "", err
	}
	files["clusters/e2e/kustomization.yaml"] = overlay
	rev, err := c.Git.Commit("Tessera: queues, policies and scale-down for the GPU cluster", files)
	if err != nil {
		return "", err
	}
	if err := c.Sync(ctx, "tessera", "./clusters/e2e"); err != nil {
		return "", err
	}
	return rev, c.WaitApplied(ctx, rev)
}

// WaitApplied waits until Flux's Kustomization is Ready at revision rev.
func (c *Cluster) WaitApplied(ctx context.Context, rev string) error {
	return poll(ctx, 3*time.Minute, "Flux to apply "+rev[:8], func() error {
		ready, msg, applied, err := c.KustomizationStatus(ctx, "tessera")
		if err != nil {
			return err
		}
		if ready != "True" || !strings.HasSuffix(applied, rev) {
			return fmt.Errorf("ready=%s at %q: %s", ready, applied, msg)
		}
		return nil
	})
}

// KustomizationStatus returns the Ready condition of the Kustomization: its status,
// message and the revision Flux last applied.
func (c *Cluster) KustomizationStatus(ctx context.Context, name string) (ready, message, applied string, err error) {
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, ks); err != nil {
		return "", "", "", err
	}
	applied, _, _ = unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	ready, message = condition(ks, "Ready")
	return ready, message, applied, nil
}

// condition returns the status and message of the condition typ of a custom resource,
// "" when it has none.
func condition(o *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		if m["type"] == typ {
			status, _ = m["status"].(string)
			message, _ = m["message"].(string)
		}
	}
	return status, message
}
