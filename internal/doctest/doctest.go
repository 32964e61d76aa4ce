// Package doctest finds and runs the runnable shell blocks of the Markdown pages: a
// block is runnable when the line right before its ```sh fence is a marker,
// "<!-- runnable -->" for a block that needs no cluster (test/docs runs those) or
// "<!-- runnable: cluster -->" for one that needs a live cluster, with kubectl and a
// KUBECONFIG (test/e2e runs those, and the others of the same page, against the
// cluster of `make dev-cluster`).
//
// A fenced block right after the marker "<!-- output -->" is what the page says the
// runnable block before it prints; "<!-- output: COMMAND -->" names the command that
// prints it, for output the page shows without giving its command (a variant of the
// example). Match compares such a block with what the command really printed.
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
	// Output blocks are what the runnable block before them prints, or what the
	// command of their marker prints (Block.Command).
	Output = "output"
)

// Block is one runnable shell block of a page.
type Block struct {
	Line int    // line of the opening fence, 1-based
	Kind string // Offline, Cluster or Output
	Code string // the commands; for an Output block, the output the page shows
	// Command is, for an Output block, the command of its marker: what prints the
	// output, where it is not the runnable block before it.
	Command string
}

// kindOf returns the kind a marker line names, or "" for a line that is no marker,
// and the command of an Output marker.
func kindOf(line string) (kind, command string) {
	s, ok := strings.CutPrefix(strings.TrimSpace(line), "<!--")
	if !ok {
		return "", ""
	}
	s, ok = strings.CutSuffix(s, "-->")
	if !ok {
		return "", ""
	}
	switch k := strings.Join(strings.Fields(s), " "); k {
	case Offline, Cluster, Output:
		return k, ""
	}
	if c, ok := strings.CutPrefix(strings.TrimSpace(s), Output+":"); ok && strings.TrimSpace(c) != "" {
		return Output, strings.TrimSpace(c)
	}
	return "", ""
}

// Blocks returns the runnable and output blocks of a page in page order. A runnable
// marker not followed by a ```sh fence, an output marker not followed by a fence, or a
// fence never closed, is an error.
func Blocks(page []byte) ([]Block, error) {
	var blocks []Block
	lines := strings.Split(string(page), "\n")
	for i := 0; i < len(lines); i++ {
		kind, command := kindOf(lines[i])
		if kind == "" {
			continue
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("line %d: <!-- %s --> ends the page", i+1, kind)
		}
		switch fence := strings.TrimSpace(lines[i+1]); {
		case kind == Output && !strings.HasPrefix(fence, "```"):
			return nil, fmt.Errorf("line %d: <!-- %s --> is not followed by a fence", i+1, kind)
		case kind != Output && fence != "```sh":
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
		blocks = append(blocks, Block{Line: start + 1, Kind: kind, Code: strings.Join(code, "\n") + "\n", Command: command})
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

// Match says whether out holds each of the expected blocks, in order, each after the
// one before. A block matches a run of out's lines, compared with runs of white space
// folded (table columns may be aligned differently) and trailing white space ignored,
// where:
//
//   - a line "..." stands for any number of lines, none included;
//   - a line ending in "..." matches a line that begins with what comes before it (a
//     row whose last columns, or a note whose end, the page leaves out).
//
// Anything else must be there as it is: the error names the first line of a block
// found nowhere after the block before it.
func Match(out string, expected ...string) error {
	got := splitLines(out)
	at := 0
	for _, e := range expected {
		want := splitLines(e)
		end := -1
		for start := at; start <= len(got) && end < 0; start++ {
			end = matchAt(got, start, want)
		}
		if end < 0 {
			return fmt.Errorf("the output has no run of lines like\n%s\n(after line %d of the output)", e, at)
		}
		at = end
	}
	return nil
}

// matchAt returns the index after the run of got that starts at start and matches want,
// or -1.
func matchAt(got []string, start int, want []string) int {
	if len(want) == 0 {
		return start
	}
	if want[0] == "..." {
		for i := start; i <= len(got); i++ {
			if end := matchAt(got, i, want[1:]); end >= 0 {
				return end
			}
		}
		return -1
	}
	if start >= len(got) || !lineMatches(got[start], want[0]) {
		return -1
	}
	return matchAt(got, start+1, want[1:])
}

func lineMatches(got, want string) bool {
	if prefix, ok := strings.CutSuffix(want, "..."); ok {
		return strings.HasPrefix(got, strings.TrimSpace(prefix))
	}
	return got == want
}

// splitLines splits s into lines with white space folded, dropping the trailing empty
// line of a final newline.
func splitLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return lines
}
