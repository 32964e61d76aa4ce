package lint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/gitops/lint"
	"github.com/tessera-gpu/tessera/internal/yamlerr/yamlerrtest"
)

// FuzzLint lints a repository of one kustomization and one manifest file, both the
// fuzzer's: it returns findings or an error, never panics, hangs or runs away with
// memory. The seeds are the example cluster's files and the hostile cases of the
// tests.
func FuzzLint(f *testing.F) {
	const kust = "resources:\n  - objects.yaml\n"
	for _, dir := range []string{"queues", "namespaces", "priorityclasses", "policies", "scaledown"} {
		files, _ := filepath.Glob(filepath.Join("../clusters/example", dir, "*.yaml"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			if filepath.Base(file) == "kustomization.yaml" {
				f.Add(b, []byte(queues))
			} else {
				f.Add([]byte(kust), b)
			}
		}
	}
	for _, seed := range [][2]string{
		{kust, yamlerrtest.Bomb(9)},
		{kust + "  - .\n", queues},
		{kust + "  - ../../../../etc/passwd\n", queues},
		{"namePrefix: x-\n" + kust, queues + "---\n" + queues},
		{kust, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n"},
		{kust, "---\n# only a comment\n---\n"},
		{"resources: 7\n", ""},
		{"- a\n", ""},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, kustomization, objects []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), kustomization, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), objects, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, _ = lint.Lint(ctx, dir, lint.Options{})
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("took %v", d)
		}
	})
}
