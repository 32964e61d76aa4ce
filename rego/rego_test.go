package rego

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/policy"
)

// TestRegoPolicies runs every test_ rule of the default policies; each is a subtest
// named after the Rego rule, so a failure names the failing Rego test.
func TestRegoPolicies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Policies {
		if len(p.Tests) == 0 {
			t.Errorf("default policy %s has no %s_test.rego", p.Name, p.Name)
		}
	}
	c, err := policy.Compile(ctx, set, nil)
	if err != nil {
		t.Fatalf("default policies do not compile: %v", err)
	}
	results, err := c.Test(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 20 {
		t.Fatalf("only %d Rego tests ran; expected the full suite", len(results))
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			if !r.Passed && !r.Skipped {
				t.Errorf("%s: Rego test %s failed (err: %v)", r.Location, r.Name, r.Err)
			}
		})
	}
}
