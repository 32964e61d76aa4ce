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
