package lint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/gitops/lint"
	"github.com/tessera-gpu/tessera/internal/yamlerr"
	"github.com/tessera-gpu/tessera/internal/yamlerr/yamlerrtest"
)

// writeTree writes files (path relative to dir: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// within runs f and fails the test if it takes longer than d (the input would
// otherwise hang or exhaust memory).
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took > d {
		t.Errorf("took %v, more than %v", took, d)
	}
}

// TestUnusableRepositories: input that cannot be checked is an error naming the files
// and the limit, returned quickly.
func TestUnusableRepositories(t *testing.T) {
	const q = "apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q\nspec:\n  weight: 1\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		lint  string // directory linted, relative
		want  []string
		limit bool // errors.Is(err, yamlerr.ErrLimit)
	}{
		{"cycle through a directory outside DIR", map[string]string{
			".git/HEAD":            "",
			"a/kustomization.yaml": "resources:\n  - ../b\n",
			"b/kustomization.yaml": "resources:\n  - ../a\n",
		}, "a", []string{"kustomization cycle: ", "a/kustomization.yaml lists ../b → ", "b/kustomization.yaml lists ../a → ", "a/kustomization.yaml;"}, false},
		{"cycle inside DIR", map[string]string{
			"a/kustomization.yaml": "resources:\n  - ../b\n",
			"b/kustomization.yaml": "resources:\n  - ../a\n",
		}, ".", []string{"kustomization cycle: ", "a/kustomization.yaml", "b/kustomization.yaml"}, false},
		{"self-include", map[string]string{
			"kustomization.yaml": "resources:\n  - q.yaml\n  - .\n",
			"q.yaml":             q,
		}, ".", []string{"kustomization cycle: ", "kustomization.yaml lists . → ", "kustomization.yaml;"}, false},
		{"self-include through a different spelling", map[string]string{
			"a/kustomization.yaml": "resources:\n  - ../a/\n",
		}, "a", []string{"kustomization cycle: "}, false},
		{"nesting deeper than MaxDepth", nest(lint.MaxDepth + 1), "k0", []string{fmt.Sprintf("kustomizations nest more than %d deep", lint.MaxDepth), "k0/kustomization.yaml", "…"}, false},
		{"YAML bomb in a resource", map[string]string{
			"kustomization.yaml": "resources:\n  - bomb.yaml\n",
			"bomb.yaml":          yamlerrtest.Bomb(9),
		}, ".", []string{"bomb.yaml:", "YAML aliases expand to more than 1000000 nodes"}, true},
		{"YAML bomb in a kustomization", map[string]string{
			"kustomization.yaml": "resources:\n  - q.yaml\n" + strings.Replace(yamlerrtest.Bomb(9), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n", "x:\n", 1),
			"q.yaml":             q,
		}, ".", []string{"kustomization.yaml:", "YAML aliases expand"}, true},
		{"YAML bomb in a kustomization that kustomize builds", map[string]string{
			"kustomization.yaml": "namePrefix: x-\nresources:\n  - bomb.yaml\n",
			"bomb.yaml":          yamlerrtest.Bomb(9),
		}, ".", []string{"bomb.yaml:", "YAML aliases expand to more than 1000000 nodes"}, true},
		{"file larger than the limit", map[string]string{
			"kustomization.yaml": "resources:\n  - big.yaml\n",
			"big.yaml":           "# " + strings.Repeat("x", yamlerr.MaxFileBytes) + "\n",
		}, ".", []string{"big.yaml: larger than 32 MiB"}, true},
		{"more objects than MaxObjects", map[string]string{
			"kustomization.yaml": "resources:\n  - many.yaml\n",
			"many.yaml":          strings.Repeat("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", lint.MaxObjects+1),
		}, ".", []string{"kustomization.yaml: more than 100000 objects"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			within(t, 5*time.Second, func() {
				_, err := lint.Lint(context.Background(), filepath.Join(dir, tc.lint), lint.Options{})
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if errors.Is(err, yamlerr.ErrLimit) != tc.limit {
					t.Errorf("errors.Is(ErrLimit) = %v, want %v", !tc.limit, tc.limit)
				}
			})
		})
	}
}

// nest is a chain of n kustomizations, k0 listing k1 listing k2 ...
func nest(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("k%d/kustomization.yaml", i)] = fmt.Sprintf("resources:\n  - ../k%d\n", i+1)
	}
	files[fmt.Sprintf("k%d/kustomization.yaml", n)] = "resources: []\n"
	return files
}

// TestBuildRefusesBombs: kustomize (preview's reader) never sees a YAML bomb or a
// cycle, and never fetches a remote file.
func TestBuildRefusesBombs(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"kustomization.yaml":   "resources:\n  - bomb.yaml\n",
		"bomb.yaml":            yamlerrtest.Bomb(9),
		"c/kustomization.yaml": "resources:\n  - .\n",
		"p/kustomization.yaml": "resources:\n  - pipe.yaml\n",
		"r/kustomization.yaml": "configMapGenerator:\n  - name: x\n    files: [https://example.com/x]\n",
	})
	within(t, 5*time.Second, func() {
		if _, err := lint.Build(dir); !errors.Is(err, yamlerr.ErrLimit) || !strings.Contains(err.Error(), "bomb.yaml") {
			t.Errorf("bomb: got %v", err)
		}
		if _, err := lint.Build(filepath.Join(dir, "c")); err == nil || !strings.Contains(err.Error(), "kustomization cycle") {
			t.Errorf("cycle: got %v", err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, "p", "pipe.yaml"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := lint.Build(filepath.Join(dir, "p")); err == nil || !strings.Contains(err.Error(), "pipe.yaml: not a regular file") {
			t.Errorf("pipe: got %v", err)
		}
		if _, err := lint.Build(filepath.Join(dir, "r")); err == nil || !strings.Contains(err.Error(), "r/kustomization.yaml:3: configMapGenerator names https://example.com/x, a remote location") {
			t.Errorf("remote: got %v", err)
		}
	})
}

// TestRepositoryFindings: what a valid-looking repository gets wrong about its files is
// a finding on the kustomization's line; what kustomize and kubectl accept passes.
func TestRepositoryFindings(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		lint  string
		want  string // "" for clean
		file  string
		line  int
	}{
		{"file outside the kustomization's directory", map[string]string{
			"repo/app/kustomization.yaml": "resources:\n  - ../../../../../../../../etc/passwd\n",
		}, "repo/app", "kustomize refuses files outside the kustomization's directory", "repo/app/kustomization.yaml", 2},
		{"file in the parent directory", map[string]string{
			"app/kustomization.yaml": "resources:\n  - ../cm.yaml\n",
			"cm.yaml":                cm,
		}, "app", "is not in or below", "app/kustomization.yaml", 2},
		{"symbolic link out of the directory", map[string]string{
			"app/kustomization.yaml": "resources:\n  - link.yaml\n",
			"cm.yaml":                cm,
		}, "app", "is not in or below", "app/kustomization.yaml", 2},
		{"a pipe", map[string]string{
			"kustomization.yaml": "resources:\n  - pipe\n",
		}, ".", "resource pipe is not a regular file", "kustomization.yaml", 2},
		{"directory outside the repository", map[string]string{
			"repo/.git/HEAD":              "",
			"repo/app/kustomization.yaml": "resources:\n  - ../../base\n",
			"base/kustomization.yaml":     "resources: []\n",
		}, "repo/app", "outside the repository", "repo/app/kustomization.yaml", 2},
		{"remote base", map[string]string{
			"kustomization.yaml": "resources:\n  - https://github.com/org/repo//base?ref=v1\n",
		}, ".", "is remote", "kustomization.yaml", 2},
		{"remote patch", map[string]string{
			"kustomization.yaml": "resources:\n  - cm.yaml\npatches:\n  - path: https://example.com/patch.yaml\ncommonAnnotations:\n  docs: https://example.com/docs\n",
			"cm.yaml":            cm,
		}, ".", "patches names https://example.com/patch.yaml, a remote location", "kustomization.yaml", 4},
		{"included twice", map[string]string{
			"kustomization.yaml":   "resources:\n  - a\n  - b\n",
			"a/kustomization.yaml": "resources:\n  - ../c\n",
			"b/kustomization.yaml": "resources:\n  - ../c\n",
			"c/kustomization.yaml": "resources:\n  - cm.yaml\n",
			"c/cm.yaml":            cm,
		}, ".", "is included twice", "b/kustomization.yaml", 2},
		{"the same object twice", map[string]string{
			"kustomization.yaml": "resources:\n  - a.yaml\n  - b.yaml\n",
			"a.yaml":             cm,
			"b.yaml":             "# again\n" + cm,
		}, ".", "ConfigMap c is defined twice", "b.yaml", 5},
		{"no name", map[string]string{
			"kustomization.yaml": "resources:\n  - a.yaml\n",
			"a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n",
		}, ".", "metadata.name is required", "a.yaml", 3},
		{"not YAML, line in the file", map[string]string{
			"kustomization.yaml": "resources:\n  - a.yaml\n",
			"a.yaml":             cm + "---\n" + cm + "  x: [\n",
		}, ".", "not YAML", "a.yaml", 10},
		{"trailing separator and comment-only documents", map[string]string{
			"kustomization.yaml": "resources:\n  - a.yaml\n",
			"a.yaml":             "# header\n---\n" + cm + "---\n# only a comment\n---\n",
		}, ".", "", "", 0},
		{"a v1 List", map[string]string{
			"kustomization.yaml": "resources:\n  - a.yaml\n",
			"a.yaml":             "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: team\n    annotations:\n      tessera.dev/queue: nope\n",
		}, ".", `Queue "nope"`, "a.yaml", 9},
		{"a directory without kustomization, as Flux reads it", map[string]string{
			"queues/q.yaml":    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  annotations:\n    tessera.dev/queue: nope\n",
			"values/v.yaml":    "replicas: 3\n",
			".github/ci.yaml":  "kind: broken\n",
			"queues/README.md": "kind: not yaml\n",
		}, ".", `Queue "nope"`, "queues/q.yaml", 6},
		{"kustomization.yml", map[string]string{
			"kustomization.yml": "resources:\n  - gone.yaml\n",
		}, ".", "resource gone.yaml", "kustomization.yml", 2},
		{"Kustomization", map[string]string{
			"Kustomization": "resources:\n  - gone.yaml\n",
		}, ".", "resource gone.yaml", "Kustomization", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			if tc.name == "a pipe" {
				if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
					t.Skip(err)
				}
			}
			if tc.name == "symbolic link out of the directory" {
				if err := os.Symlink(filepath.Join(dir, "cm.yaml"), filepath.Join(dir, "app/link.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			var findings []lint.Finding
			within(t, 5*time.Second, func() {
				var err error
				if findings, err = lint.Lint(context.Background(), filepath.Join(dir, tc.lint), lint.Options{}); err != nil {
					t.Fatal(err)
				}
			})
			if tc.want == "" {
				for _, f := range findings {
					t.Error(f)
				}
				return
			}
			for _, f := range findings {
				if strings.Contains(f.Message, tc.want) && f.File == filepath.Join(dir, tc.file) && f.Line == tc.line {
					return
				}
			}
			t.Errorf("want %s:%d containing %q, got %v", tc.file, tc.line, tc.want, findings)
		})
	}
}

// TestClusterGPUsNegative: a negative cluster size cannot be checked against.
func TestClusterGPUsNegative(t *testing.T) {
	if _, err := lint.Lint(context.Background(), "../clusters", lint.Options{ClusterGPUs: -5}); err == nil {
		t.Error("ClusterGPUs -5 accepted")
	}
}
