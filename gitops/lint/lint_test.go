package lint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/gitops/lint"
)

// TestShippedClustersAreClean: the repository operators fork lints clean, the Argo
// CD and Flux directories beside the clusters too, and every kustomization of it
// builds on its own (argocd/ once merged a ConfigMap that no base of it provides).
func TestShippedClustersAreClean(t *testing.T) {
	for _, dir := range []string{"../clusters", ".."} {
		findings, err := lint.Lint(context.Background(), dir, lint.Options{ClusterGPUs: 80})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			t.Errorf("%s: %s", dir, f)
		}
	}
	for _, dir := range []string{"../argocd", "../clusters/example"} {
		if _, err := lint.Build(dir); err != nil {
			t.Errorf("kustomize build %s: %v", dir, err)
		}
	}
}

const queues = `apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata:
  name: prod
spec:
  weight: 2
  deserved:
    tessera.dev/gpu: "15"
  capability:
    tessera.dev/gpu: "20"
`

// TestBadRepositories: each broken repository gets a finding at the right file:line.
func TestBadRepositories(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		opts     lint.Options
		line     int
		want     string
	}{
		{"schema: weight below its minimum", strings.Replace(queues, "weight: 2", "weight: -1", 1), lint.Options{}, 6, "spec.weight"},
		{"negative deserved", strings.Replace(queues, `"15"`, `"-5"`, 1), lint.Options{}, 8, "spec.deserved[tessera.dev/gpu] is -5"},
		{"deserved above capability", strings.Replace(queues, `"15"`, `"25"`, 1), lint.Options{}, 8, "deserved must not exceed capability"},
		{"parent queue missing", queues + "  parent: research\n", lint.Options{}, 11, `Queue "research"`},
		{"queue is its own parent (CEL rule)", queues + "  parent: prod\n", lint.Options{}, 1, "spec.parent must name another queue"},
		{"namespace names a missing queue", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  annotations:\n    tessera.dev/queue: nope\n", lint.Options{}, 6, `Queue "nope"`},
		{"namespace names a missing priority class", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  annotations:\n    tessera.dev/priority-class: urgent\n", lint.Options{}, 6, `PriorityClass "urgent"`},
		{"podgroup minMember 0", "apiVersion: tessera.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: g\n  namespace: a\nspec:\n  minMember: 0\n", lint.Options{}, 7, "spec.minMember"},
		{"policy does not compile", "apiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata:\n  name: p\nspec:\n  targets: [Pod]\n  rego: |\n    package tessera.p\n    deny contains msg if {\n", lint.Options{}, 10, "AdmissionPolicy p"},
		{"policy test fails", "apiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata:\n  name: p\nspec:\n  targets: [Pod]\n  rego: |\n    package tessera.p\n    deny contains \"no\" if { false }\n    test_denies if { count(deny) == 1 }\n", lint.Options{}, 10, "test_denies"},
		{"namespaceSelector operator without values (CEL rule)", queues + "  namespaceSelector:\n    matchExpressions: [{key: team, operator: In}]\n", lint.Options{}, 11, "operator must be In or NotIn with values"},
		{"namespaceSelector key not a label key", queues + "  namespaceSelector:\n    matchLabels: {\"bad key\": a}\n", lint.Options{}, 11, "spec.namespaceSelector is not a valid label selector"},
		{"allowed priority class missing", queues + "  allowedPriorityClasses: [batch-normal]\n", lint.Options{}, 11, `PriorityClass "batch-normal"`},
		{"allowed priority class twice", queues + "  allowedPriorityClasses: [system-cluster-critical, system-cluster-critical]\n", lint.Options{}, 11, "lists \"system-cluster-critical\" twice"},
		{"queue default class not allowed", strings.Replace(queues, "  name: prod\n", "  name: prod\n  annotations:\n    tessera.dev/priority-class: system-node-critical\n", 1) + "  allowedPriorityClasses: [system-cluster-critical]\n", lint.Options{}, 6, "is not in spec.allowedPriorityClasses [system-cluster-critical]"},
		{"deserved beyond the cluster", queues, lint.Options{ClusterGPUs: 8}, 4, "more than the cluster's 8"},
		{"missing kind", "apiVersion: v1\nmetadata:\n  name: x\n", lint.Options{}, 1, "apiVersion and kind are required"},
		{"missing resource", "", lint.Options{}, 3, "resource gone.yaml"},
	} {
		dir := t.TempDir()
		write := func(name, content string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("kustomization.yaml", "resources:\n  - objects.yaml\n  - gone.yaml\n")
		write("objects.yaml", tc.manifest)
		findings, err := lint.Lint(context.Background(), dir, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		found := false
		for _, f := range findings {
			file := "objects.yaml"
			if strings.HasPrefix(tc.want, "resource ") {
				file = "kustomization.yaml"
			}
			if strings.Contains(f.Message, tc.want) && f.File == filepath.Join(dir, file) && f.Line == tc.line {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want objects.yaml:%d containing %q, got %v", tc.name, tc.line, tc.want, findings)
		}
	}
}

// TestUnusableInput: a directory without kustomizations is an error, not a finding.
func TestUnusableInput(t *testing.T) {
	if _, err := lint.Lint(context.Background(), t.TempDir(), lint.Options{}); err == nil || !strings.Contains(err.Error(), "no kustomization file (kustomization.yaml, kustomization.yml, Kustomization) and no manifests found") {
		t.Fatalf("got %v", err)
	}
}

// TestKustomizeBuildFails: a kustomization whose files all exist but that kustomize
// cannot build (the same Queue in two files, with a name prefix) is a finding on its
// kustomization.yaml.
func TestKustomizeBuildFails(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"kustomization.yaml": "namePrefix: x-\nresources:\n  - a.yaml\n  - b.yaml\n",
		"a.yaml":             queues,
		"b.yaml":             queues,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	findings, err := lint.Lint(context.Background(), dir, lint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.File == filepath.Join(dir, "kustomization.yaml") && strings.HasPrefix(f.Message, "kustomize build:") && strings.Contains(f.Message, "prod") {
			return
		}
	}
	t.Errorf("want a kustomize build finding naming Queue prod, got %v", findings)
}

// TestKustomizeMessage: kustomize's errors name objects as people do, without Go
// struct dumps (a generator merging into a ConfigMap the kustomization lacks).
func TestKustomizeMessage(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"kustomization.yaml": "namespace: argocd\nconfigMapGenerator:\n  - name: argocd-cm\n    behavior: merge\n    literals: [a=b]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	findings, err := lint.Lint(context.Background(), dir, lint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || !strings.Contains(findings[0].Message, "ConfigMap argocd-cm does not exist") || strings.Contains(findings[0].Message, "resid.") || strings.Contains(findings[0].Message, "0x") {
		t.Errorf("findings %v", findings)
	}
}
