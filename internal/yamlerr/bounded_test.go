package yamlerr

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/internal/yamlerr/yamlerrtest"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // "" for accepted
	}{
		{"no aliases", "a: 1\nb: [1, 2]\n", ""},
		{"a few aliases", "base: &b {x: 1, y: 2}\none: *b\ntwo:\n  <<: *b\n  z: 3\n", ""},
		{"five levels (59,049 nodes)", yamlerrtest.Bomb(5), ""},
		{"nine levels", yamlerrtest.Bomb(9), "bomb.yaml:12: YAML aliases expand to more than 1000000 nodes"},
		{"second document", "a: 1\n---\n" + yamlerrtest.Bomb(9), "bomb.yaml:14:"},
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
