package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// Limits of what one YAML file may cost to read. They are far above any real
// configuration (20,000 Queues are about 3.5 MB) and far below what exhausts a CI
// runner.
const (
	// MaxFileBytes is the largest YAML file read.
	MaxFileBytes = 32 << 20
	// MaxAliasNodes is how many nodes the aliases (*name) of one file may add when they
	// are expanded: nine levels of nine aliases each (a "billion laughs") would add 9^9.
	MaxAliasNodes = 1_000_000
)

// ErrLimit marks input refused because it exceeds one of the limits above.
var ErrLimit = errors.New("exceeds a limit of the YAML reader")

// ReadFile reads a YAML file no larger than MaxFileBytes and checks it with Check.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, TooLarge(path)
	}
	return b, Check(path, b)
}

// TooLarge is the error for a file larger than MaxFileBytes.
func TooLarge(name string) error {
	return fmt.Errorf("%s: larger than %d MiB, the largest YAML file read (%w); split it into several files", name, MaxFileBytes>>20, ErrLimit)
}

// Check refuses YAML whose aliases would expand beyond MaxAliasNodes nodes, or that is
// larger than MaxFileBytes, before a decoder expands it; name is the file in the
// message. Input that is not YAML passes: the caller's decoder words that error.
func Check(name string, b []byte) error {
	if len(b) > MaxFileBytes {
		return TooLarge(name)
	}
	if !bytes.Contains(b, []byte("*")) {
		return nil // no alias, nothing expands
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	budget := &aliasBudget{left: MaxAliasNodes, size: map[*yaml.Node]int{}}
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return nil // io.EOF, or not YAML: left to the caller's decoder
		}
		if !budget.walk(&doc) {
			return fmt.Errorf("%s:%d: YAML aliases expand to more than %d nodes, the most the reader expands (%w); write the repeated parts out instead of nesting anchors",
				name, budget.line, MaxAliasNodes, ErrLimit)
		}
	}
}

// aliasBudget counts the nodes that expanding aliases adds, each anchored node's
// expanded size computed once.
type aliasBudget struct {
	left int
	size map[*yaml.Node]int // expanded size of anchored nodes; -1 while being computed
	line int                // the alias that overran the budget
}

// walk charges every alias under n with its target's expanded size; false when the
// budget is spent.
func (b *aliasBudget) walk(n *yaml.Node) bool {
	if n == nil {
		return true
	}
	if n.Kind == yaml.AliasNode {
		s := b.expanded(n.Alias)
		b.left -= s
		if s < 0 || b.left < 0 {
			b.line = n.Line
			return false
		}
		return true
	}
	for _, c := range n.Content {
		if !b.walk(c) {
			return false
		}
	}
	return true
}

// expanded is the number of nodes n stands for with its aliases expanded, capped just
// above MaxAliasNodes; -1 for an alias that contains itself.
func (b *aliasBudget) expanded(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	if s, ok := b.size[n]; ok {
		return s
	}
	b.size[n] = -1
	s := 1
	for _, c := range n.Content {
		t := c
		if c.Kind == yaml.AliasNode {
			t = c.Alias
		}
		cs := b.expanded(t)
		if cs < 0 {
			return -1
		}
		s = min(s+cs, MaxAliasNodes+1)
	}
	b.size[n] = s
	return s
}
