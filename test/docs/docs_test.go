package docs

// Blocks that need a live cluster (kubectl, helm, make dev-cluster, tessera explain,
// tessera autoscaler plan, simulate --from-cluster) are left unmarked for now and do not
// run here: no test of this package starts an API server. Every other command of
// docs/migrating-from-volcano.md is marked and runs.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pages are the task pages whose runnable blocks run, from the repository root.
var pages = []string{"docs/getting-started.md", "docs/migrating-from-volcano.md"}

const marker = "<!-- runnable -->"

// block is one runnable shell block of a page.
type block struct {
	line int // line of the opening fence, 1-based
	code string
}

// runnableBlocks returns the runnable blocks of a page. A marker not followed by a
// ```sh fence, or a fence never closed, is an error.
func runnableBlocks(page []byte) ([]block, error) {
	var blocks []block
	lines := strings.Split(string(page), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != marker {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, fmt.Errorf("line %d: %s is not followed by a ```sh fence", i+1, marker)
		}
		start := i + 1
		var code []string
		closed := false
		for i = start + 1; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				closed = true
				break
			}
			code = append(code, lines[i])
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the runnable block is never closed", start+1)
		}
		blocks = append(blocks, block{line: start + 1, code: strings.Join(code, "\n") + "\n"})
	}
	return blocks, nil
}

func TestRunnableBlocksParse(t *testing.T) {
	page := "text\n" + marker + "\n```sh\necho a\necho b\n```\n```sh\nkubectl get nodes\n```\n" + marker + "\n```sh\ntrue\n```\n"
	got, err := runnableBlocks([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].line != 3 || got[0].code != "echo a\necho b\n" || got[1].line != 11 || got[1].code != "true\n" {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{marker + "\n```yaml\na: 1\n```\n", marker + "\n```sh\necho\n"} {
		if _, err := runnableBlocks([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

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
			blocks, err := runnableBlocks(text)
			if err != nil {
				t.Fatalf("%s: %v", page, err)
			}
			if page == "docs/migrating-from-volcano.md" && len(blocks) < 4 {
				t.Fatalf("%s: %d runnable blocks; the page's commands that need no cluster should be marked %s", page, len(blocks), marker)
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
					t.Fatalf("%s:%d: the last block should show the converted Job's 3 pods placed on a node, found %d:\n%s", page, blocks[len(blocks)-1].line, n, last)
				}
			}
		})
	}
}

// run runs one block with bash -e -o pipefail and returns its output; a block that
// exits non-zero fails the test with the page's line number.
func run(t *testing.T, page string, b block, dir string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.code)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s:%d: %s(%s)", page, b.line, firstLine(b.code), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s:%d: the runnable block failed: %v\n--- block\n%s--- output\n%s", page, b.line, err, b.code, out.String())
	}
	return out.String()
}

func firstLine(code string) string {
	s := bufio.NewScanner(strings.NewReader(code))
	if s.Scan() {
		return s.Text() + " "
	}
	return ""
}
