package integration

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/gitops/lint"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/volcano"
)

// dryRun applies u server-side with dryRun=All, as `kubectl apply --server-side
// --dry-run=server` does: the API server decodes it strictly (an unknown field is an
// error), defaults it, and runs the built-in validation or the CRD's schema and CEL
// rules, storing nothing. The namespace of a namespaced object ("default" when it
// names none, as kubectl fills it in) is created first.
func dryRun(t *testing.T, e *testenv.Env, u *unstructured.Unstructured) error {
	t.Helper()
	ctx := testenv.Context(t, time.Minute)
	mapping, err := e.Client.RESTMapper().RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
	if err != nil {
		return err
	}
	if mapping.Scope.Name() == "namespace" {
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
			u.SetNamespace(ns)
		}
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	return e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("tessera-dry-run-test"), client.ForceOwnership, client.DryRunAll)
}

// TestDryRunRejects: the dry run is not a formality: the API server refuses what
// convert volcano must never write (a Job without containers, a field of no schema, a
// Queue weight of 0).
func TestDryRunRejects(t *testing.T) {
	e := requireEnv(t)
	for doc, want := range map[string]string{
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: dry-run}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: []\n":                                       "spec.template.spec.containers: Required value",
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: dry-run}\nspec:\n  minAvailable: 2\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: i}]\n": ".spec.minAvailable: field not declared in schema",
		"apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: 0}\n":                                                                                                           "spec.weight in body should be greater than or equal to 1",
	} {
		if err := dryRun(t, e, decode(t, doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error naming %q, for:\n%s", err, want, doc)
		}
	}
}

// TestDryRunConvertVolcano: every object convert volcano writes, from the fixtures
// (volcano/testdata: queues with every Queue field in a hierarchy, PodGroups,
// single- and multi-task Jobs with policies, TTL, dependsOn, plugins and volumes,
// batch Jobs scheduled by Volcano), with and without --rewrite-nvidia-gpu, passes a
// server-side dry run on the API server with Tessera's CRDs. The objects go through
// YAML as convert writes them.
func TestDryRunConvertVolcano(t *testing.T) {
	e := requireEnv(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kinds := dryRunConversions(t, e, root, volcano.Options{}, volcano.Options{RewriteNvidiaGPU: true})
	for _, k := range []string{"Queue", "PodGroup", "Job", "ConfigMap"} {
		if kinds[k] == 0 {
			t.Errorf("the fixtures convert to no %s; %v", k, kinds)
		}
	}
}

// dryRunConversions converts every fixture of volcano/testdata with each of opts and
// dry-runs every object, through YAML as convert writes it; it counts them by kind.
func dryRunConversions(t *testing.T, e *testenv.Env, root string, opts ...volcano.Options) map[string]int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "volcano", "testdata", "*.yaml"))
	if len(files) < 2 {
		t.Fatalf("fixtures: %v", files)
	}
	kinds := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, err := volcano.Read(b, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range opts {
			out, _, err := volcano.Convert(in, o)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, obj := range out {
				y, err := yaml.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				u := decode(t, string(y))
				kinds[u.GetKind()]++
				if err := dryRun(t, e, u); err != nil {
					t.Errorf("%s (%+v): %s %s: %v\n%s", filepath.Base(f), o, u.GetKind(), u.GetName(), err, y)
				}
			}
		}
	}
	return kinds
}

// TestDryRunGitOpsRepository: every object of the shipped GitOps repository (gitops/,
// test fixtures under testdata aside) passes a server-side dry run: each kustomization
// built as gitops lint and preview build it (kustomize's API), and the manifests
// outside kustomizations (flux/) as Flux reads them. Flux's kinds are checked against
// Flux's CRDs when they are on this machine (the end-to-end binaries' cache, or the Go
// module cache) and skipped otherwise; Argo CD's kinds (Application, ApplicationSet)
// are skipped, as no Argo CD CRD ships with anything the tests build. Every other
// kind must be known to the API server.
func TestDryRunGitOpsRepository(t *testing.T) {
	e := requireEnv(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if dirs := fluxCRDs(root); len(dirs) > 0 {
		if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: dirs, ErrorIfPathMissing: true}); err != nil {
			t.Fatalf("install Flux's CRDs from %v: %v", dirs, err)
		}
		t.Logf("Flux's CRDs from %v", dirs)
	} else {
		t.Log("Flux's CRDs are not on this machine (make e2e-binaries puts them there): Flux's kinds are skipped")
	}
	objs := gitopsObjects(t, filepath.Join(root, "gitops"))
	checked, skipped := 0, map[string]int{}
	for _, o := range objs {
		u, src := o.obj, o.source
		err := dryRun(t, e, u)
		switch group := u.GroupVersionKind().Group; {
		case meta.IsNoMatchError(err) && (group == "argoproj.io" || strings.HasSuffix(group, ".toolkit.fluxcd.io")):
			skipped[u.GetKind()+" ("+u.GetAPIVersion()+")"]++
		case err != nil:
			t.Errorf("%s: %s %s: %v", src, u.GetKind(), u.GetName(), err)
		default:
			checked++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(skipped)) {
		t.Logf("skipped %d %s: no CRD of the kind on this API server", skipped[k], k)
	}
	if checked < 10 {
		t.Errorf("only %d objects checked", checked)
	}
}

// sourced is an object and where it comes from.
type sourced struct {
	obj    *unstructured.Unstructured
	source string
}

// gitopsObjects are the objects of every kustomization under dir, built, and of the
// manifests outside kustomization directories; directories named testdata hold test
// fixtures, not the repository's objects.
func gitopsObjects(t *testing.T, dir string) []sourced {
	t.Helper()
	var kusts, loose []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
				if _, err := os.Stat(filepath.Join(path, name)); err == nil {
					kusts = append(kusts, path)
				}
			}
			return nil
		}
		if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
			loose = append(loose, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []sourced
	for _, k := range kusts {
		b, err := lint.Build(k)
		if err != nil {
			t.Errorf("kustomize build %s: %v", k, err)
			continue
		}
		for _, u := range decodeAll(t, k, b) {
			out = append(out, sourced{u, "kustomize build " + k})
		}
	}
	for _, f := range loose {
		inKustomization := slices.ContainsFunc(kusts, func(k string) bool { return strings.HasPrefix(f, k+string(filepath.Separator)) })
		if inKustomization {
			continue // applied through its kustomization
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range decodeAll(t, f, b) {
			out = append(out, sourced{u, f})
		}
	}
	if len(kusts) < 2 || len(out) < 10 {
		t.Fatalf("kustomizations %v and %d objects in %s", kusts, len(out), dir)
	}
	return out
}

// decodeAll reads every object of multi-document YAML.
func decodeAll(t *testing.T, name string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// fluxCRDs are the directories of Flux's CRDs on this machine: the end-to-end
// binaries' cache (hack/e2e-binaries.sh), else the source and kustomize controllers
// in the Go module cache; nil when neither has them.
func fluxCRDs(root string) []string {
	if out, err := exec.Command(filepath.Join(root, "hack", "e2e-binaries.sh"), "--cached-only").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if dir, ok := strings.CutPrefix(line, "FLUX_CRDS="); ok {
				return []string{dir}
			}
		}
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, m := range []string{"source-controller", "kustomize-controller"} {
		found, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(modcache)), "github.com", "fluxcd", m+"@v*", "config", "crd", "bases"))
		if len(found) == 0 {
			return nil
		}
		slices.Sort(found)
		dirs = append(dirs, found[len(found)-1])
	}
	return dirs
}
