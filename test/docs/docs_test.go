package docs

// Blocks marked "<!-- runnable: cluster -->" need a live cluster (kubectl, tessera
// explain, tessera autoscaler plan): no test of this package starts an API server, so
// they run in test/e2e (TestGuidePages), against the cluster of `make dev-cluster`.
// Blocks that need Helm or a Volcano cluster are left unmarked. Every other command of
// docs/migrating-from-volcano.md is marked and runs here.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/internal/doctest"
)

// pages are the task pages whose runnable blocks run, from the repository root.
var pages = []string{"docs/getting-started.md", "docs/migrating-from-volcano.md"}

// placed matches a line of simulate --manifests that puts a pod of the example's
// converted Volcano Job on one of its nodes.
var placed = regexp.MustCompile(`(?m)^pretraining/llm-pretrain-(master|worker)-\d+\s+gpu-a100-[01]\s+\S+\s+scheduled\s*$`)

func TestRunnableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tessera binary")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "tessera"), "./cmd/tessera")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tessera: %v\n%s", err, out)
	}
	example, err := os.ReadFile(filepath.Join("testdata", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		t.Run(filepath.Base(page), func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(root, page))
			if err != nil {
				t.Fatal(err)
			}
			all, err := doctest.Blocks(text)
			if err != nil {
				t.Fatalf("%s: %v", page, err)
			}
			blocks := doctest.Of(all, doctest.Offline)
			if page == "docs/migrating-from-volcano.md" && len(blocks) < 4 {
				t.Fatalf("%s: %d runnable blocks; the page's commands that need no cluster should be marked <!-- %s -->", page, len(blocks), doctest.Offline)
			}
			// The blocks of a page share one directory, as a reader's shell would, with
			// the example dump where a checkout of the repository has it.
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "test", "docs", "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "test", "docs", "testdata", "cluster.yaml"), example, 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir, "KUBECONFIG="+filepath.Join(dir, "no-cluster"))
			var last string
			for _, b := range blocks {
				last = run(t, page, b, dir, env)
			}
			if page == "docs/migrating-from-volcano.md" {
				if n := len(placed.FindAllString(last, -1)); n < 3 {
					t.Fatalf("%s:%d: the last block should show the converted Job's 3 pods placed on a node, found %d:\n%s", page, blocks[len(blocks)-1].Line, n, last)
				}
			}
		})
	}
}

// run runs one block with bash -e -o pipefail and returns its output; a block that
// exits non-zero fails the test with the page's line number.
func run(t *testing.T, page string, b doctest.Block, dir string, env []string) string {
	t.Helper()
	start := time.Now()
	out, err := doctest.Run(context.Background(), b, dir, env, 60*time.Second)
	t.Logf("%s:%d: %s (%s)", page, b.Line, b.FirstLine(), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s:%d: the runnable block failed: %v\n--- block\n%s--- output\n%s", page, b.Line, err, b.Code, out)
	}
	return out
}
