package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/internal/doctest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// guidePages are the pages whose runnable blocks run against the cluster of `make
// dev-cluster`, in this order, and the least number of blocks needing the cluster each
// must have (so that markers cannot go missing unnoticed). The README's install section
// comes first, as a newcomer meets it; the migration pages last, since the Volcano page
// adds a queue's gang that runs until the cluster stops.
var guidePages = []struct {
	path          string
	clusterBlocks int
	// inRoot: the page's commands run from the repository root; otherwise from a new
	// directory holding the example dump where a checkout has it (as test/docs runs them).
	inRoot bool
}{
	{"README.md", 1, true},
	{"docs/getting-started.md", 8, true},
	{"docs/migrating-from-volcano.md", 1, false},
	{"docs/migrating-from-kueue.md", 1, false},
}

// blockTimeout bounds one block; the blocks bound their own waits (kubectl wait
// --timeout) well below it.
const blockTimeout = 10 * time.Minute

// TestGuidePages follows the user guide on the cluster it is written for: it starts the
// cluster of `make dev-cluster` (StartDev), builds bin/tessera as `make build` does,
// and, in a shell whose PATH starts with bin/ and whose KUBECONFIG is the cluster's (what
// the pages' unmarked setup blocks have the reader do), runs every runnable block of
// each page of guidePages in page order: those marked <!-- runnable --> (test/docs runs
// them offline too) and those marked <!-- runnable: cluster -->. A block that exits
// non-zero fails the test with the page, its line and its output.
func TestGuidePages(t *testing.T) {
	if os.Getenv("TESSERA_E2E") != "1" {
		t.Skip("set TESSERA_E2E=1 (make e2e) to run the user guide against the dev cluster")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("the user guide's commands need kubectl on PATH")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	type page struct {
		path   string
		blocks []doctest.Block
		inRoot bool
	}
	var pages []page
	for _, p := range guidePages {
		text, err := os.ReadFile(filepath.Join(root, p.path))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := doctest.Blocks(text)
		if err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		if n := len(doctest.Of(blocks, doctest.Cluster)); n < p.clusterBlocks {
			t.Fatalf("%s: %d blocks marked <!-- %s -->, want at least %d", p.path, n, doctest.Cluster, p.clusterBlocks)
		}
		pages = append(pages, page{p.path, blocks, p.inRoot})
	}

	ctx := testenv.Context(t, 25*time.Minute)
	began := time.Now()
	bin := filepath.Join(root, "bin")
	if _, err := testenv.BuildTesseraTo(bin); err != nil {
		t.Fatal(err)
	}
	c, rev, err := StartDev(ctx, DevNodes, DevGPUs, t.Logf)
	stopOnCleanup(t, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the dev cluster is up with gitops/clusters/example at %s (%s)", rev[:8], time.Since(began).Round(time.Second))

	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+c.Kubeconfig,
	)
	example, err := os.ReadFile(filepath.Join(root, "test", "docs", "testdata", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		dir := root
		if !p.inRoot {
			dir = t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "test", "docs", "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "test", "docs", "testdata", "cluster.yaml"), example, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pageBegan := time.Now()
		for _, b := range doctest.Of(p.blocks, doctest.Offline, doctest.Cluster) {
			start := time.Now()
			out, err := doctest.Run(ctx, b, dir, env, blockTimeout)
			t.Logf("%s:%d: %s (%s)", p.path, b.Line, b.FirstLine(), time.Since(start).Round(100*time.Millisecond))
			if err != nil {
				t.Fatalf("%s:%d: the runnable block failed: %v\n--- block\n%s--- output\n%s", p.path, b.Line, err, b.Code, out)
			}
			if testing.Verbose() {
				t.Logf("output:\n%s", indent(out))
			}
		}
		t.Logf("%s: every runnable block ran in %s", p.path, time.Since(pageBegan).Round(time.Second))
	}
	t.Logf("the guide ran in %s, the cluster's start included", time.Since(began).Round(time.Second))
}
