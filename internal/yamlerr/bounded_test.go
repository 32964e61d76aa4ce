package yamlerr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Bomb is a "billion laughs" document: levels of anchors, each a list of nine aliases
// of the one before.
func Bomb(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // "" for accepted
	}{
		{"no aliases", "a: 1\nb: [1, 2]\n", ""},
		{"a few aliases", "base: &b {x: 1, y: 2}\none: *b\ntwo:\n  <<: *b\n  z: 3\n", ""},
		{"five levels (59,049 nodes)", Bomb(5), ""},
		{"nine levels", Bomb(9), "bomb.yaml:12: YAML aliases expand to more than 1000000 nodes"},
		{"second document", "a: 1\n---\n" + Bomb(9), "bomb.yaml:14:"},
		{"not YAML is left to the decoder", "a: [\n*x", ""},
		{"alias of an unknown anchor", "a: *nope\n", ""},
	} {
		start := time.Now()
		err := Check("bomb.yaml", []byte(tc.yaml))
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", tc.name, d)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrLimit)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckSize(t *testing.T) {
	err := Check("big.yaml", make([]byte, MaxFileBytes+1))
	if err == nil || !strings.Contains(err.Error(), "big.yaml: larger than 32 MiB") || !errors.Is(err, ErrLimit) {
		t.Errorf("got %v", err)
	}
}
