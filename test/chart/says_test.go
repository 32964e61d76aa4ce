package chart

import (
	"strings"
	"testing"
)

// checkSays fails t where text, named what, lacks a string of want or holds one of avoid.
func checkSays(t *testing.T, what, text string, want, avoid []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, text)
		}
	}
	for _, a := range avoid {
		if strings.Contains(text, a) {
			t.Errorf("%s says %q:\n%s", what, a, text)
		}
	}
}
