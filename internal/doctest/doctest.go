// Package doctest finds and runs the runnable shell blocks of the Markdown pages: a
// block is runnable when the line right before its ```sh fence is a marker,
// "<!-- runnable -->" for a block that needs no cluster (test/docs runs those) or
// "<!-- runnable: cluster -->" for one that needs a live cluster, with kubectl and a
// KUBECONFIG (test/e2e runs those, and the others of the same page, against the
// cluster of `make dev-cluster`).
package doctest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// The kinds of runnable blocks, by their marker.
const (
	// Offline blocks need only the tessera binary and the repository's files.
	Offline = "runnable"
	// Cluster blocks also need a live cluster.
	Cluster = "runnable: cluster"
)

// Block is one runnable shell block of a page.
type Block struct {
	Line int    // line of the opening fence, 1-based
	Kind string // Offline or Cluster
	Code string
}

// kindOf returns the kind a marker line names, or "" for a line that is no marker.
func kindOf(line string) string {
	s, ok := strings.CutPrefix(strings.TrimSpace(line), "<!--")
	if !ok {
		return ""
	}
	s, ok = strings.CutSuffix(s, "-->")
	if !ok {
		return ""
	}
	switch k := strings.Join(strings.Fields(s), " "); k {
	case Offline, Cluster:
		return k
	}
	return ""
}

// Blocks returns the runnable blocks of a page in page order. A marker not followed by
// a ```sh fence, or a fence never closed, is an error.
func Blocks(page []byte) ([]Block, error) {
	var blocks []Block
	lines := strings.Split(string(page), "\n")
	for i := 0; i < len(lines); i++ {
		kind := kindOf(lines[i])
		if kind == "" {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, fmt.Errorf("line %d: <!-- %s --> is not followed by a ```sh fence", i+1, kind)
		}
		start := i + 1
		// A block indented under a list item is run without its indentation.
		indent := lines[start][:len(lines[start])-len(strings.TrimLeft(lines[start], " "))]
		var code []string
		closed := false
		for i = start + 1; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				closed = true
				break
			}
			code = append(code, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the runnable block is never closed", start+1)
		}
		blocks = append(blocks, Block{Line: start + 1, Kind: kind, Code: strings.Join(code, "\n") + "\n"})
	}
	return blocks, nil
}

// Of returns the blocks of the given kinds, in page order.
func Of(blocks []Block, kinds ...string) []Block {
	var out []Block
	for _, b := range blocks {
		for _, k := range kinds {
			if b.Kind == k {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// Run runs a block with bash -e -o pipefail in dir with env, for at most timeout, and
// returns its standard output and error together.
func Run(ctx context.Context, b Block, dir string, env []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.Code)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("still running after %s: %w", timeout, err)
	}
	return out.String(), err
}

// FirstLine is the block's first line, to name it in a log.
func (b Block) FirstLine() string {
	s := bufio.NewScanner(strings.NewReader(b.Code))
	if s.Scan() {
		return s.Text()
	}
	return ""
}
