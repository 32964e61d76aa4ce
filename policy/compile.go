package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Entry points a policy package may define.
const (
	RuleMutate = "mutate"
	RuleDeny   = "deny"
	RuleWarn   = "warn"
)

// maxErrors caps the messages one compilation reports.
const maxErrors = 20

type compiledPolicy struct {
	Policy
	// queries per Phase; nil where the policy has no rule of that phase.
	queries [3]*rego.PreparedEvalQuery
	targets map[string]bool
}

func (p *compiledPolicy) applies(kind string) bool { return len(p.targets) == 0 || p.targets[kind] }

// Compiled is a policy set compiled and prepared for evaluation. It is immutable and
// safe for concurrent use.
type Compiled struct {
	version  string
	policies []*compiledPolicy
	modules  map[string]*ast.Module // everything parsed, tests included, for Test
	metrics  *Metrics
}

// Version is the set's content hash.
func (c *Compiled) Version() string { return c.version }

// Policies names the set's policies in evaluation order.
func (c *Compiled) Policies() []string {
	out := make([]string, len(c.policies))
	for i, p := range c.policies {
		out[i] = p.Name
	}
	return out
}

// Compile parses, compiles and prepares set. Errors are *CompileError with file:row
// messages. Compile does not run the set's tests; Test does.
func Compile(ctx context.Context, set Set, m *Metrics) (*Compiled, error) {
	policies := append([]Policy(nil), set.Policies...)
	sort.SliceStable(policies, func(i, j int) bool { return policies[i].Order < policies[j].Order })

	caps := Capabilities()
	popts := ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps, ProcessAnnotation: false}
	var errs []string
	parsed := map[string]*ast.Module{}
	evalModules := map[string]*ast.Module{}
	parse := func(mod Module, eval bool) *ast.Module {
		if _, dup := parsed[mod.File]; dup {
			errs = append(errs, fmt.Sprintf("%s: two modules share this file name; give each policy a unique name", mod.File))
			return nil
		}
		am, err := ast.ParseModuleWithOpts(mod.File, mod.Source, popts)
		if err != nil {
			errs = append(errs, astErrors(err)...)
			return nil
		}
		if len(am.Package.Path) < 2 || !am.Package.Path[1].Equal(ast.StringTerm("tessera")) {
			errs = append(errs, fmt.Sprintf("%s:%d: package %s must be below tessera (for example `package tessera.mypolicy`)",
				mod.File, am.Package.Location.Row, strings.TrimPrefix(am.Package.Path.String(), "data.")))
			return nil
		}
		parsed[mod.File] = am
		if eval {
			evalModules[mod.File] = am
		}
		return am
	}
	seen := map[string]bool{}
	pkgs := map[string]string{}
	pkgOf := make([]ast.Ref, len(policies))
	for i, p := range policies {
		if p.Name == "" {
			errs = append(errs, fmt.Sprintf("%s: policy has no name", p.Module.File))
			continue
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Sprintf("%s: policy name %q appears twice", p.Module.File, p.Name))
			continue
		}
		seen[p.Name] = true
		switch p.Enforcement {
		case "", EnforceDeny, EnforceWarn, EnforceDryRun:
		default:
			errs = append(errs, fmt.Sprintf("%s: enforcement %q is not deny, warn or dryrun", p.Module.File, p.Enforcement))
		}
		am := parse(p.Module, true)
		if am == nil {
			continue
		}
		path := am.Package.Path.String()
		if other, dup := pkgs[path]; dup {
			errs = append(errs, fmt.Sprintf("%s:%d: package %s is already the package of policy %q; each policy needs its own package",
				p.Module.File, am.Package.Location.Row, strings.TrimPrefix(path, "data."), other))
			continue
		}
		pkgs[path] = p.Name
		pkgOf[i] = am.Package.Path
		for _, t := range p.Tests {
			parse(t, false)
		}
	}
	for _, lib := range set.Libraries {
		parse(lib, true)
	}
	for _, t := range set.Tests {
		parse(t, false)
	}
	if len(errs) > 0 {
		m.compileFailed()
		return nil, &CompileError{Errors: capErrors(errs)}
	}

	// Type-check everything (tests too, so a broken test is a compile error), then
	// compile what is evaluated.
	check := ast.NewCompiler().WithCapabilities(caps)
	if check.Compile(copyModules(parsed)); check.Failed() {
		m.compileFailed()
		return nil, &CompileError{Errors: capErrors(astErrors(check.Errors))}
	}
	compiler := ast.NewCompiler().WithCapabilities(caps)
	if compiler.Compile(copyModules(evalModules)); compiler.Failed() {
		m.compileFailed()
		return nil, &CompileError{Errors: capErrors(astErrors(compiler.Errors))}
	}

	c := &Compiled{modules: parsed, metrics: m, version: versionOf(policies, set)}
	for i, p := range policies {
		cp := &compiledPolicy{Policy: p}
		has := map[string]bool{}
		for _, rule := range []string{RuleMutate, RuleDeny, RuleWarn} {
			has[rule] = len(compiler.GetRulesWithPrefix(pkgOf[i].Copy().Append(ast.StringTerm(rule)))) > 0
		}
		if !has[RuleMutate] && !has[RuleDeny] && !has[RuleWarn] {
			m.compileFailed()
			return nil, &CompileError{Errors: []string{fmt.Sprintf("%s: package %s defines none of mutate, deny, warn; a policy needs at least one",
				p.Module.File, strings.TrimPrefix(pkgOf[i].String(), "data."))}}
		}
		phases := map[Phase][]string{
			PhaseAll:      {RuleMutate, RuleDeny, RuleWarn},
			PhaseMutate:   {RuleMutate},
			PhaseValidate: {RuleDeny, RuleWarn},
		}
		for phase, rules := range phases {
			var body []string
			for _, rule := range rules {
				if has[rule] {
					body = append(body, fmt.Sprintf("%s := [x | x := %s]", rule, pkgOf[i].Copy().Append(ast.StringTerm(rule))))
				}
			}
			if len(body) == 0 {
				continue
			}
			q, err := rego.New(
				rego.Compiler(compiler),
				rego.Query(strings.Join(body, "; ")),
				rego.Capabilities(caps),
				rego.StrictBuiltinErrors(false),
			).PrepareForEval(ctx)
			if err != nil {
				m.compileFailed()
				return nil, &CompileError{Errors: capErrors(astErrors(err))}
			}
			cp.queries[phase] = &q
		}
		if len(p.Targets) > 0 {
			cp.targets = map[string]bool{}
			for _, t := range p.Targets {
				cp.targets[t] = true
			}
		}
		c.policies = append(c.policies, cp)
	}
	return c, nil
}

// versionOf hashes everything that changes a decision.
func versionOf(policies []Policy, set Set) string {
	h := sha256.New()
	w := func(s string) { h.Write([]byte(strconv.Itoa(len(s)))); h.Write([]byte{':'}); h.Write([]byte(s)) }
	for _, p := range policies {
		w("policy")
		w(p.Name)
		w(strconv.Itoa(p.Order))
		w(string(p.Enforcement))
		w(strings.Join(p.Targets, ","))
		w(p.Module.File)
		w(p.Module.Source)
	}
	for _, l := range set.Libraries {
		w("library")
		w(l.File)
		w(l.Source)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func copyModules(in map[string]*ast.Module) map[string]*ast.Module {
	out := make(map[string]*ast.Module, len(in))
	for k, v := range in {
		out[k] = v.Copy()
	}
	return out
}

// astErrors turns OPA errors into "file:row: message" lines.
func astErrors(err error) []string {
	var list ast.Errors
	switch e := err.(type) {
	case ast.Errors:
		list = e
	case *ast.Error:
		list = ast.Errors{e}
	default:
		return []string{err.Error()}
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		msg := explainUndefined(e.Message)
		if e.Location != nil {
			out = append(out, fmt.Sprintf("%s:%d: %s", e.Location.File, e.Location.Row, msg))
		} else {
			out = append(out, msg)
		}
	}
	return out
}

func capErrors(errs []string) []string {
	if len(errs) > maxErrors {
		return append(errs[:maxErrors:maxErrors], fmt.Sprintf("... and %d more", len(errs)-maxErrors))
	}
	return errs
}
