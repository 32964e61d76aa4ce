package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Enforcement is what happens to a policy's deny messages.
type Enforcement string

// Enforcement actions.
const (
	EnforceDeny   Enforcement = "deny"   // reject the request
	EnforceWarn   Enforcement = "warn"   // admit it with a warning
	EnforceDryRun Enforcement = "dryrun" // admit it and only record the message
)

// Module is one Rego source file.
type Module struct {
	// File names the module in error messages ("queue.rego", "admissionpolicy/foo").
	File   string
	Source string
}

// Policy is a Rego package that decides on requests of its Targets.
type Policy struct {
	// Name identifies the policy; a later policy with the same name replaces an earlier one.
	Name string
	// Order sorts policies; lower runs first, later ones see earlier mutations.
	Order int
	// Enforcement applies to the policy's deny messages; empty means EnforceDeny.
	Enforcement Enforcement
	// Targets are the kinds the policy applies to; empty means all.
	Targets []string
	// Module holds the package; it may contain test_ rules, which only Test runs.
	Module Module
	// Tests are the policy's _test.rego modules; they leave the set with the policy.
	Tests []Module
}

// Set is everything one compilation needs.
type Set struct {
	Policies []Policy
	// Libraries are helper packages with no entry points (imported by policies).
	Libraries []Module
	// Tests are _test.rego modules of the libraries: compiled and run by Test, never evaluated.
	Tests []Module
}

// With returns a copy of s in which p replaces the policy of the same name, or is added.
func (s Set) With(p Policy) Set {
	out := Set{Libraries: s.Libraries, Tests: s.Tests}
	replaced := false
	for _, q := range s.Policies {
		if q.Name == p.Name {
			q, replaced = p, true
		}
		out.Policies = append(out.Policies, q)
	}
	if !replaced {
		out.Policies = append(out.Policies, p)
	}
	return out
}

// Shared is data common to many evaluations (the cluster's queues, GPU sizes, ...),
// converted to Rego once and placed at input.cluster.
type Shared struct {
	value ast.Value
}

// SharedKey is where Shared appears in the input document.
const SharedKey = "cluster"

// NewShared converts doc once so that evaluations can reuse it.
func NewShared(doc map[string]any) (*Shared, error) {
	v, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("convert shared policy data: %w", err)
	}
	return &Shared{value: v}, nil
}

// Phase selects which rules an evaluation runs.
type Phase int

// Phases. A mutating webhook needs only mutations; a validating webhook sees the
// already mutated object and needs only deny and warn.
const (
	PhaseAll      Phase = iota // mutate, deny and warn
	PhaseMutate                // mutate only
	PhaseValidate              // deny and warn only
)

// Input is one request to decide on.
type Input struct {
	// Phase selects the rules to run; the zero value runs all.
	Phase Phase
	// Kind selects the policies whose Targets hold it.
	Kind string
	// Document is the input document. Its "workload" object receives the mutations of
	// earlier policies before later ones run; Evaluate does not modify the caller's map.
	Document map[string]any
	// Shared, when set, appears at input.cluster.
	Shared *Shared
}

// Message is a policy's deny or warn text.
type Message struct {
	Policy string
	Text   string
}

func (m Message) String() string { return m.Text }

// Decision is the outcome of evaluating a request against a policy set.
type Decision struct {
	// Version is the content hash of the policy set that decided.
	Version string
	// Mutations are the workload fields to set, merged over all policies in order.
	Mutations map[string]any
	// Denials reject the request (policies with EnforceDeny).
	Denials []Message
	// Warnings are returned to the client (warn rules, and deny rules of EnforceWarn policies).
	Warnings []Message
	// DryRun are deny messages of EnforceDryRun policies: only logged.
	DryRun []Message
	// Evaluated names the policies that ran.
	Evaluated []string
}

// Allowed reports whether no policy denied the request.
func (d Decision) Allowed() bool { return len(d.Denials) == 0 }

// Evaluator decides on admission requests. Implementations are safe for concurrent use.
type Evaluator interface {
	Evaluate(ctx context.Context, in Input) (Decision, error)
	// Version is the content hash of the policy set in use, "" when none is loaded.
	Version() string
}

// CompileError lists a policy set's compile errors or failed tests, each "file:row: message".
type CompileError struct {
	Errors []string
}

func (e *CompileError) Error() string {
	return "policy set rejected: " + strings.Join(e.Errors, "; ")
}
