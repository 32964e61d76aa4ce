package autoscaletest

import (
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/autoscale"
)

// Expect fails t unless d is (or is not) a candidate, for reason, with a message
// containing msg.
func Expect(t testing.TB, d autoscale.Decision, candidate bool, reason, msg string) {
	t.Helper()
	if d.Candidate != candidate || d.Reason != reason || !strings.Contains(d.Message, msg) {
		t.Fatalf("%s: candidate %v reason %q message %q; want %v %q containing %q", d.Node, d.Candidate, d.Reason, d.Message, candidate, reason, msg)
	}
}
