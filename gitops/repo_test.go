package gitops_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/gitops/lint"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// clusterFiles lists a cluster directory's manifests (kustomization files aside).
func clusterFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") && d.Name() != "kustomization.yaml" {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	return files
}

// TestClustersApplyWithServerSideDryRun: every cluster directory decodes strictly, its
// AdmissionPolicies compile and pass their own tests beside the built-in policies, its
// namespaces name queues it defines, and the real API server accepts every object
// (CRD schemas and CEL rules) in a server-side dry run.
func TestClustersApplyWithServerSideDryRun(t *testing.T) {
	if env == nil {
		testenv.SkipOrFail(t, os.ErrNotExist)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dirs, err := filepath.Glob("clusters/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no clusters: %v", err)
	}
	for _, dir := range dirs {
		objs, err := env.DecodeFiles(clusterFiles(t, dir)...)
		if err != nil {
			t.Fatal(err)
		}
		queues := map[string]bool{}
		var policies []tesserav1.AdmissionPolicy
		for _, o := range objs {
			switch x := o.(type) {
			case *tesserav1.Queue:
				queues[x.Name] = true
			case *tesserav1.AdmissionPolicy:
				policies = append(policies, *x)
			}
		}
		if _, err := webhooks.NewLocal(ctx, policies, nil); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
		for _, o := range objs {
			if ns, ok := o.(*corev1.Namespace); ok {
				if q := ns.Annotations[tesserav1.AnnotationQueue]; q != "" && !queues[q] {
					t.Errorf("%s: namespace %s names queue %q, which the cluster does not define", dir, ns.Name, q)
				}
			}
			if err := env.Client.Create(ctx, o, client.DryRunAll); err != nil {
				t.Errorf("%s: %T %s: %v", dir, o, o.GetName(), err)
			}
		}
	}
}

// TestSyncManifestsPointAtClusters: the Flux Kustomization and the Argo CD
// Application apply a cluster directory that exists, and Flux health-checks objects
// that cluster defines.
func TestSyncManifestsPointAtClusters(t *testing.T) {
	read := func(path string) []map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, m)
		}
		return out
	}
	exists := func(path string) {
		if _, err := os.Stat(filepath.Join("..", path)); err != nil {
			t.Errorf("sync path %s: %v", path, err)
		}
	}
	for _, m := range read("flux/sources.yaml") {
		if m["kind"] != "Kustomization" {
			continue
		}
		spec := m["spec"].(map[string]any)
		path := strings.TrimPrefix(spec["path"].(string), "./")
		exists(path)
		defined := map[string]bool{}
		for _, f := range clusterFiles(t, filepath.Join("..", path)) {
			for _, o := range read(f) {
				defined[o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string)] = true
			}
		}
		for _, hc := range spec["healthChecks"].([]any) {
			c := hc.(map[string]any)
			if key := c["kind"].(string) + "/" + c["name"].(string); !defined[key] {
				t.Errorf("Flux health check on %s, which %s does not define", key, path)
			}
		}
	}
	for _, m := range read("argocd/application.yaml") {
		exists(m["spec"].(map[string]any)["source"].(map[string]any)["path"].(string))
	}
}

// TestArgoCDMakesEachApplicationOnce: what gitops/argocd applies names every Application
// once, counting those its ApplicationSets generate for the directories of clusters/;
// an Application listed beside an ApplicationSet that also makes it has two owners.
func TestArgoCDMakesEachApplicationOnce(t *testing.T) {
	built, err := lint.Build("argocd")
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := filepath.Glob("clusters/*")
	if err != nil || len(clusters) == 0 {
		t.Fatalf("no cluster directories under clusters/ (%v)", err)
	}
	made := map[string][]string{}
	for _, doc := range strings.Split(string(built), "\n---\n") {
		var m struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				Template struct{ Metadata struct{ Name string } }
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		switch m.Kind {
		case "Application":
			made[m.Metadata.Name] = append(made[m.Metadata.Name], "Application "+m.Metadata.Name)
		case "ApplicationSet":
			for _, dir := range clusters {
				name := strings.ReplaceAll(m.Spec.Template.Metadata.Name, "{{.path.basename}}", filepath.Base(dir))
				made[name] = append(made[name], "ApplicationSet "+m.Metadata.Name)
			}
		}
	}
	if len(made) == 0 {
		t.Fatal("gitops/argocd makes no Application")
	}
	for name, by := range made {
		if len(by) > 1 {
			t.Errorf("Application %s is made %d times: %v", name, len(by), by)
		}
	}
}
