package policy

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// removedBuiltins are disabled besides every builtin OPA marks nondeterministic
// (http.send, time.now_ns, rand.intn, uuid.rfc4122, opa.runtime, net.lookup_ip_addr,
// io.jwt.decode_verify, crypto.x509.parse_and_verify_certificates, ...).
var removedBuiltins = map[string]bool{
	"trace":                  true, // writes to the evaluation trace
	"print":                  true, // output nobody reads in a webhook
	"providers.aws.sign_req": true, // reads the clock
	"crypto.x509.parse_and_verify_certificates":              true,
	"crypto.x509.parse_and_verify_certificates_with_options": true,
}

// removedPrefixes disable whole builtin families.
var removedPrefixes = []string{"net.", "http.", "rand.", "uuid.", "opa.", "time.now"}

// Capabilities returns OPA's capabilities without network access, clocks, randomness
// and other nondeterministic builtins, so a decision depends on the input alone.
func Capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0]
	for _, b := range c.Builtins {
		if allowedBuiltin(b) {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	c.AllowNet = []string{}
	return c
}

func allowedBuiltin(b *ast.Builtin) bool {
	if b.Nondeterministic || removedBuiltins[b.Name] {
		return false
	}
	for _, p := range removedPrefixes {
		if strings.HasPrefix(b.Name, p) {
			return false
		}
	}
	return true
}

// removedReason explains why a builtin that OPA has is not available here, or is ""
// for a name OPA does not know or that is allowed.
func removedReason(name string) string {
	var b *ast.Builtin
	for _, c := range ast.CapabilitiesForThisVersion().Builtins {
		if c.Name == name {
			b = c
			break
		}
	}
	if b == nil || allowedBuiltin(b) {
		return ""
	}
	switch {
	case strings.HasPrefix(name, "http.") || strings.HasPrefix(name, "net."):
		return "network access is not allowed in admission policies"
	case strings.HasPrefix(name, "time.now"):
		return "the clock is not available in admission policies; a decision depends on its input alone"
	case strings.HasPrefix(name, "rand.") || strings.HasPrefix(name, "uuid."):
		return "randomness is not available in admission policies; a decision depends on its input alone"
	}
	return name + " is not available in admission policies; a decision depends on its input alone"
}

// explainUndefined rewords the compiler's "undefined function X" for builtins removed
// on purpose.
func explainUndefined(msg string) string {
	name, ok := strings.CutPrefix(msg, "undefined function ")
	if !ok {
		return msg
	}
	if reason := removedReason(name); reason != "" {
		return name + ": " + reason
	}
	return msg
}
