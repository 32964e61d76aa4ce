package lint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/gitops/lint"
)

// writeQueues writes a kustomization of n Queues in one file, each with a parent
// among the first ten, a deserved share and a capability.
func writeQueues(t testing.TB, n int) string {
	dir := t.TempDir()
	var b strings.Builder
	for i := range n {
		parent := ""
		if i >= 10 {
			parent = fmt.Sprintf("  parent: q%d\n", i%10)
		}
		fmt.Fprintf(&b, "---\napiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q%d\nspec:\n  weight: %d\n%s  deserved:\n    tessera.dev/gpu: \"1\"\n  capability:\n    tessera.dev/gpu: \"2\"\n", i, 1+i%4, parent)
	}
	for name, content := range map[string]string{"kustomization.yaml": "resources:\n  - queues.yaml\n", "queues.yaml": b.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// BenchmarkLint20kQueues lints a repository of 20,000 Queues.
func BenchmarkLint20kQueues(b *testing.B) {
	dir := writeQueues(b, 20_000)
	for b.Loop() {
		findings, err := lint.Lint(context.Background(), dir, lint.Options{})
		if err != nil || len(findings) > 0 {
			b.Fatal(err, findings)
		}
	}
}

// TestLintManyQueuesIsLinear: 4,000 Queues (81 s before the linter stopped running
// kustomize's quadratic build on plain kustomizations) lint in a few seconds.
func TestLintManyQueuesIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("lints 4,000 Queues")
	}
	dir := writeQueues(t, 4_000)
	start := time.Now()
	findings, err := lint.Lint(context.Background(), dir, lint.Options{})
	if err != nil || len(findings) > 0 {
		t.Fatal(err, findings)
	}
	if d := time.Since(start); d > 60*time.Second { // generous: CI machines are shared; the quadratic build took 81 s
		t.Errorf("4,000 Queues took %v", d)
	}
}
