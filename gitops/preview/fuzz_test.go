package preview

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzInput feeds the fuzzer's file to both inputs of a preview: as the Queues of a
// version of the repository (Load, through kustomize) and as the cluster description
// (ReadCluster). Each returns objects or an error, never panics or hangs; what loads
// compares with itself as no change. The seeds are the example's queues, the test
// cluster and a YAML bomb.
func FuzzInput(f *testing.F) {
	for _, file := range []string{filepath.Join(example, "queues/queues.yaml"), "testdata/cluster.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n  - objects.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "objects.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if m, err := Load(dir); err == nil {
			if d := Diff(m, m); len(d) != 0 {
				t.Errorf("a version differs from itself: %v", d)
			}
		}
		_, _ = ReadCluster(file)
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("took %v", d)
		}
	})
}
