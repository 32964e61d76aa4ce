package policy

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestResult is the outcome of one Rego test rule.
type TestResult struct {
	// Name is the rule's full name, e.g. data.tessera.queue.test_label_wins.
	Name string
	// Location is file:row of the rule.
	Location string
	Passed   bool
	Skipped  bool
	// Err is the evaluation error of a test that could not run.
	Err error
}

// Test runs every test_ rule of the set (policies, libraries and Tests modules).
func (c *Compiled) Test(ctx context.Context) ([]TestResult, error) {
	modules := copyModules(c.modules)
	runner := tester.NewRunner().
		SetCompiler(ast.NewCompiler().WithCapabilities(Capabilities())).
		SetModules(modules).
		RaiseBuiltinErrors(true)
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		return nil, &CompileError{Errors: capErrors(astErrors(err))}
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{Name: r.Package + "." + r.Name, Passed: r.Pass(), Skipped: r.Skip, Err: r.Error}
		if r.Location != nil {
			tr.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
		}
		out = append(out, tr)
	}
	return out, nil
}

// Failures formats the failed tests of results as "file:row: test NAME failed[: error]".
func Failures(results []TestResult) []string {
	var out []string
	for _, r := range results {
		if r.Passed || r.Skipped {
			continue
		}
		msg := fmt.Sprintf("%s: test %s failed", r.Location, r.Name)
		if r.Err != nil {
			msg += ": " + r.Err.Error()
		}
		out = append(out, msg)
	}
	return out
}
