package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Evaluate runs the set's policies for in.Kind in order, the rules of in.Phase only.
func (c *Compiled) Evaluate(ctx context.Context, in Input) (Decision, error) {
	dec := Decision{Version: c.version}
	if in.Phase < PhaseAll || in.Phase > PhaseValidate {
		return dec, fmt.Errorf("unknown evaluation phase %d", in.Phase)
	}
	doc := maps.Clone(in.Document)
	if doc == nil {
		doc = map[string]any{}
	}
	workload, _ := doc["workload"].(map[string]any)
	workload = maps.Clone(workload)
	if workload == nil {
		workload = map[string]any{}
	}
	doc["workload"] = workload

	var input ast.Value
	for _, p := range c.policies {
		query := p.queries[in.Phase]
		if query == nil || !p.applies(in.Kind) {
			continue
		}
		if input == nil {
			v, err := inputValue(doc, in.Shared)
			if err != nil {
				return dec, err
			}
			input = v
		}
		start := time.Now()
		rs, err := query.Eval(ctx, rego.EvalParsedInput(input))
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
				workload[k] = v
			}
			input = nil // later policies see the mutated workload
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

func inputValue(doc map[string]any, shared *Shared) (ast.Value, error) {
	v, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("convert policy input: %w", err)
	}
	if shared != nil {
		obj, ok := v.(ast.Object)
		if !ok {
			return nil, errors.New("policy input is not an object")
		}
		obj.Insert(ast.StringTerm(SharedKey), ast.NewTerm(shared.value))
	}
	return v, nil
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
