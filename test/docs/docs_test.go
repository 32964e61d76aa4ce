package docs

// Blocks marked "<!-- runnable: cluster -->" need a live cluster (kubectl, tessera
// explain, tessera autoscaler plan): no test of this package starts an API server, so
// they run in test/e2e (TestGuidePages), against the cluster of `make dev-cluster`.
// Blocks that need Helm, a Volcano or a Kueue cluster are left unmarked. Every other
// command of docs/migrating-from-volcano.md and docs/migrating-from-kueue.md is marked
// and runs here.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/internal/doctest"
)

// pages are the task pages whose runnable blocks run, from the repository root.
var pages = []string{"docs/getting-started.md", "docs/migrating-from-volcano.md", "docs/migrating-from-kueue.md"}

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
			// Each output block is compared with what the runnable block before it printed
			// (the output blocks after one runnable block in order), or with what its own
			// command prints.
			var (
				last     string // the last runnable block's output
				lastKind string
				shown    []doctest.Block // output blocks of the last runnable block
			)
			check := func() {
				if len(shown) == 0 {
					return
				}
				var want []string
				for _, o := range shown {
					want = append(want, o.Code)
				}
				if err := doctest.Match(last, want...); err != nil {
					t.Errorf("%s:%d: the page's output is not what the block before it printed: %v\n--- printed\n%s", page, shown[0].Line, err, last)
				}
				shown = nil
			}
			for _, b := range doctest.Of(all, doctest.Offline, doctest.Cluster, doctest.Output) {
				switch {
				case b.Kind == doctest.Output && b.Command != "":
					out := run(t, page, doctest.Block{Line: b.Line, Kind: doctest.Offline, Code: b.Command + "\n"}, dir, env)
					if err := doctest.Match(out, b.Code); err != nil {
						t.Errorf("%s:%d: the page's output is not what %q prints: %v\n--- printed\n%s", page, b.Line, b.Command, err, out)
					}
				case b.Kind == doctest.Output && lastKind != doctest.Offline:
					t.Errorf("%s:%d: an output block with no command follows no block this test runs", page, b.Line)
				case b.Kind == doctest.Output:
					shown = append(shown, b)
				default:
					check()
					lastKind = b.Kind
					if b.Kind == doctest.Offline {
						last = run(t, page, b, dir, env)
					}
				}
			}
			check()
			if page == "docs/migrating-from-volcano.md" {
				if n := len(placed.FindAllString(last, -1)); n < 3 {
					t.Fatalf("%s:%d: the last block should show the converted Job's 3 pods placed on a node, found %d:\n%s", page, blocks[len(blocks)-1].Line, n, last)
				}
				// Step 5 applies `tessera.yaml -l app=llm-pretrain` and says what kubectl
				// creates: the PodGroup and the two Jobs, nothing else.
				if got, want := labelled(t, filepath.Join(dir, "tessera.yaml"), "app", "llm-pretrain"), "PodGroup/llm-pretrain Job/llm-pretrain-master Job/llm-pretrain-worker"; got != want {
					t.Errorf("%s: step 5 applies %s; tessera.yaml's objects labelled app=llm-pretrain are %s", page, want, got)
				}
			}
		})
	}
}

// TestOutputBlocksMarked: every block of a task page that shows output (a fence with no
// language) is compared with real output (<!-- output --> after a runnable block, or
// <!-- output: COMMAND -->), or says it is illustrative (<!-- illustrative: ... -->,
// naming what checks it), so that no hand-typed output goes unchecked unnoticed.
func TestOutputBlocksMarked(t *testing.T) {
	for _, page := range pages {
		text, err := os.ReadFile(filepath.Join("..", "..", page))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		open := false
		for i, line := range lines {
			fence := strings.TrimSpace(line)
			if !strings.HasPrefix(fence, "```") {
				continue
			}
			if open {
				open = false
				continue
			}
			open = true
			if fence != "```" && fence != "```text" {
				continue
			}
			prev := ""
			if i > 0 {
				prev = strings.TrimSpace(lines[i-1])
			}
			if !strings.HasPrefix(prev, "<!-- output") && !strings.HasPrefix(prev, "<!-- illustrative:") {
				t.Errorf("%s:%d: an output block neither checked (<!-- output -->) nor marked <!-- illustrative: WHAT CHECKS IT -->", page, i+1)
			}
		}
	}
}

// labelled lists the objects of a YAML stream whose label key is value, as Kind/name.
func labelled(t *testing.T, path, key, value string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if obj.Metadata.Labels[key] == value {
			names = append(names, obj.Kind+"/"+obj.Metadata.Name)
		}
	}
	return strings.Join(names, " ")
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
