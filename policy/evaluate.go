package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Evaluate runs the set's policies for in.Kind in order, the rules of in.Phase only.
func (c *Compiled) Evaluate(ctx context.Context, in Input) (Decision, error) {
	dec := Decision{Version: c.version}
	if in.Phase < PhaseAll || in.Phase > PhaseValidate {
		return dec, fmt.Errorf("unknown evaluation phase %d", in.Phase)
	}
	var input ast.Object
	for _, p := range c.policies {
		query := p.queries[in.Phase]
		if query == nil || !p.applies(in.Kind) {
			continue
		}
		if input == nil {
			v, err := inputValue(in.Document, in.Shared)
			if err != nil {
				return dec, err
			}
			input = v
		}
		start := time.Now()
		rs, err := query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalMetrics(noMetrics))
		c.metrics.observe(p.Name, time.Since(start))
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return dec, fmt.Errorf("policy %s: evaluation deadline: %w", p.Name, ctxErr)
			}
			return dec, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		dec.Evaluated = append(dec.Evaluated, p.Name)
		if len(rs) == 0 {
			continue
		}
		b := rs[0].Bindings
		if muts, _ := first(b[RuleMutate]).(map[string]any); len(muts) > 0 {
			if dec.Mutations == nil {
				dec.Mutations = map[string]any{}
			}
			for k, v := range muts {
				dec.Mutations[k] = v
			}
			// Later policies see the mutated workload.
			if input, err = withWorkload(input, muts); err != nil {
				return dec, fmt.Errorf("policy %s: %w", p.Name, err)
			}
		}
		for _, text := range messages(first(b[RuleDeny])) {
			msg := Message{Policy: p.Name, Text: text}
			switch p.Enforcement {
			case EnforceWarn:
				dec.Warnings = append(dec.Warnings, msg)
			case EnforceDryRun:
				dec.DryRun = append(dec.DryRun, msg)
			default:
				dec.Denials = append(dec.Denials, msg)
			}
		}
		for _, text := range messages(first(b[RuleWarn])) {
			dec.Warnings = append(dec.Warnings, Message{Policy: p.Name, Text: text})
		}
	}
	return dec, nil
}

func inputValue(doc map[string]any, shared *Shared) (ast.Object, error) {
	if doc == nil {
		doc = map[string]any{}
	}
	v, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("convert policy input: %w", err)
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, errors.New("policy input is not an object")
	}
	if shared != nil {
		obj.Insert(ast.StringTerm(SharedKey), ast.NewTerm(shared.value))
	}
	return obj, nil
}

var workloadKey = ast.StringTerm("workload")

// noMetrics spares each evaluation OPA's internal timers; latency is recorded per
// policy by Metrics instead.
var noMetrics = metrics.NoOp()

// withWorkload returns a new input whose workload object has the fields of set; the
// old input (maybe still referenced by finished evaluations) is left as it was, and
// unchanged terms are shared rather than copied.
func withWorkload(input ast.Object, set map[string]any) (ast.Object, error) {
	var workload ast.Object
	if t := input.Get(workloadKey); t != nil {
		workload, _ = t.Value.(ast.Object)
	}
	nw := ast.NewObject()
	if workload != nil {
		workload.Foreach(func(k, v *ast.Term) {
			if s, ok := k.Value.(ast.String); ok {
				if _, replaced := set[string(s)]; replaced {
					return
				}
			}
			nw.Insert(k, v)
		})
	}
	for k, v := range set {
		val, err := ast.InterfaceToValue(v)
		if err != nil {
			return nil, fmt.Errorf("mutation %s: %w", k, err)
		}
		nw.Insert(ast.StringTerm(k), ast.NewTerm(val))
	}
	out := ast.NewObject()
	input.Foreach(func(k, v *ast.Term) {
		if !k.Equal(workloadKey) {
			out.Insert(k, v)
		}
	})
	out.Insert(workloadKey, ast.NewTerm(nw))
	return out, nil
}

// first unwraps the one-element array a "[x | x := rule]" binding holds.
func first(v any) any {
	if a, ok := v.([]any); ok && len(a) == 1 {
		return a[0]
	}
	return nil
}

// messages reads a deny / warn value: a set (array) of strings, or one string.
func messages(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			} else {
				out = append(out, fmt.Sprint(e))
			}
		}
		return out
	}
	return nil
}
