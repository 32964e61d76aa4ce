package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tessera-gpu/tessera/policy"
)

func mod(file, src string) policy.Module { return policy.Module{File: file, Source: src} }

const queuePolicy = `package tessera.q
mutate.queue := "train" if not input.workload.queue
deny contains "no gpus here" if input.workload.gpus > 8
`

const followerPolicy = `package tessera.follower
# sees the queue the earlier policy set
mutate.seen := input.workload.queue
warn contains sprintf("queue is %s", [input.workload.queue]) if input.workload.queue
`

func set(policies ...policy.Policy) policy.Set { return policy.Set{Policies: policies} }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestLaterPoliciesSeeEarlierMutations(t *testing.T) {
	e := policy.NewEngine(0, nil)
	_, err := e.Load(ctx(t), set(
		policy.Policy{Name: "follower", Order: 2, Module: mod("follower.rego", followerPolicy)},
		policy.Policy{Name: "q", Order: 1, Module: mod("q.rego", queuePolicy)},
	))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"workload": map[string]any{"gpus": 9}}
	d, err := e.Evaluate(ctx(t), policy.Input{Kind: "Pod", Document: in})
	if err != nil {
		t.Fatal(err)
	}
	if d.Mutations["queue"] != "train" || d.Mutations["seen"] != "train" {
		t.Fatalf("mutations %v, want queue and seen = train", d.Mutations)
	}
	if len(d.Denials) != 1 || d.Denials[0].Text != "no gpus here" || d.Denials[0].Policy != "q" {
		t.Fatalf("denials %v", d.Denials)
	}
	if len(d.Warnings) != 1 || d.Warnings[0].Text != "queue is train" {
		t.Fatalf("warnings %v", d.Warnings)
	}
	if d.Version == "" || d.Version != e.Version() {
		t.Fatalf("decision version %q, engine version %q", d.Version, e.Version())
	}
	if _, touched := in["workload"].(map[string]any)["queue"]; touched {
		t.Fatal("Evaluate modified the caller's input")
	}
}

func TestPhases(t *testing.T) {
	e := policy.NewEngine(0, nil)
	if _, err := e.Load(ctx(t), set(
		policy.Policy{Name: "q", Order: 1, Module: mod("q.rego", queuePolicy)},
		policy.Policy{Name: "follower", Order: 2, Module: mod("follower.rego", followerPolicy)},
	)); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"workload": map[string]any{"gpus": 9, "queue": "a"}}
	m, err := e.Evaluate(ctx(t), policy.Input{Phase: policy.PhaseMutate, Document: in})
	if err != nil {
		t.Fatal(err)
	}
	if m.Mutations["seen"] != "a" || len(m.Denials)+len(m.Warnings) != 0 {
		t.Fatalf("mutate phase: %+v, want only mutations", m)
	}
	v, err := e.Evaluate(ctx(t), policy.Input{Phase: policy.PhaseValidate, Document: in})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Mutations) != 0 || len(v.Denials) != 1 || len(v.Warnings) != 1 {
		t.Fatalf("validate phase: %+v, want one denial, one warning, no mutations", v)
	}
	if _, err := e.Evaluate(ctx(t), policy.Input{Phase: 7}); err == nil {
		t.Fatal("an unknown phase was accepted")
	}
}

func TestEnforcementAndTargets(t *testing.T) {
	e := policy.NewEngine(0, nil)
	deny := `package tessera.d
deny contains "bad" if true`
	_, err := e.Load(ctx(t), set(
		policy.Policy{Name: "w", Enforcement: policy.EnforceWarn, Module: mod("w.rego", strings.Replace(deny, "tessera.d", "tessera.w", 1))},
		policy.Policy{Name: "dry", Enforcement: policy.EnforceDryRun, Module: mod("dry.rego", strings.Replace(deny, "tessera.d", "tessera.dry", 1))},
		policy.Policy{Name: "jobs", Targets: []string{"Job"}, Module: mod("jobs.rego", deny)},
	))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Evaluate(ctx(t), policy.Input{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed() || len(d.Warnings) != 1 || len(d.DryRun) != 1 || len(d.Evaluated) != 2 {
		t.Fatalf("pod decision %+v: want allowed, 1 warning, 1 dry-run, 2 policies evaluated", d)
	}
	d, _ = e.Evaluate(ctx(t), policy.Input{Kind: "Job"})
	if d.Allowed() {
		t.Fatalf("job decision %+v: want denied by the Job-only policy", d)
	}
}

func TestBadSetKeepsServingPrevious(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := policy.NewMetrics(reg)
	e := policy.NewEngine(0, m)
	good := set(policy.Policy{Name: "q", Module: mod("q.rego", queuePolicy)})
	if _, err := e.Load(ctx(t), good); err != nil {
		t.Fatal(err)
	}
	v1 := e.Version()
	cases := map[string]struct {
		src  string
		want string
	}{
		"syntax":         {"package tessera.q\nmutate.queue := \n", "q.rego:3:"},
		"type":           {"package tessera.q\n\ndeny contains x if x := 1 + \"a\"\n", "q.rego:3:"},
		"unsafe":         {"package tessera.q\n\ndeny contains msg if true\n", "q.rego:3:"},
		"network":        {"package tessera.q\n\ndeny contains \"x\" if http.send({\"method\": \"get\", \"url\": \"http://x\"})\n", "q.rego:3: http.send: network access is not allowed in admission policies"},
		"clock":          {"package tessera.q\n\ndeny contains \"x\" if time.now_ns() > 0\n", "q.rego:3: time.now_ns: the clock is not available in admission policies"},
		"random":         {"package tessera.q\n\ndeny contains \"x\" if rand.intn(\"a\", 3) > 0\n", "q.rego:3: rand.intn: randomness is not available in admission policies"},
		"dns":            {"package tessera.q\n\ndeny contains \"x\" if net.lookup_ip_addr(\"a\")\n", "q.rego:3: net.lookup_ip_addr: network access is not allowed"},
		"misspelt":       {"package tessera.q\n\ndeny contains \"x\" if contians(\"a\", \"b\")\n", "q.rego:3: undefined function contians"},
		"outside":        {"package other\n\ndeny contains \"x\" if true\n", "q.rego:1: package other must be below tessera"},
		"no entry point": {"package tessera.q\n\nallow := true\n", "defines none of mutate, deny, warn"},
		"failing test":   {"package tessera.q\n\ndeny contains \"x\" if input.a\n\ntest_denies_nothing if count(deny) == 0 with input as {\"a\": true}\n", "q.rego:5: test data.tessera.q.test_denies_nothing failed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.Load(ctx(t), set(policy.Policy{Name: "q", Module: mod("q.rego", tc.src)}))
			var ce *policy.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a CompileError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if e.Version() != v1 {
				t.Fatal("a rejected set replaced the serving one")
			}
		})
	}
	if got := testutil.ToFloat64(m.CompileErrors()); got != float64(len(cases)) {
		t.Fatalf("tessera_policy_compile_errors_total = %v, want %d", got, len(cases))
	}
	if n := testutil.CollectAndCount(reg, "tessera_policy_evaluation_duration_seconds"); n != 0 {
		t.Fatalf("no evaluation ran, yet %d series", n)
	}
}

func TestVersionIsContentHash(t *testing.T) {
	a, err := policy.Compile(ctx(t), set(policy.Policy{Name: "q", Module: mod("q.rego", queuePolicy)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := policy.Compile(ctx(t), set(policy.Policy{Name: "q", Module: mod("q.rego", queuePolicy)}), nil)
	c, _ := policy.Compile(ctx(t), set(policy.Policy{Name: "q", Module: mod("q.rego", queuePolicy+"\n")}), nil)
	if a.Version() != b.Version() || a.Version() == c.Version() {
		t.Fatalf("versions %s %s %s: equal sources must hash equal, different ones differently", a.Version(), b.Version(), c.Version())
	}
}

func TestDeadline(t *testing.T) {
	slow := `package tessera.slow
deny contains "x" if {
	count([1 | some a in numbers.range(1, 3000); some b in numbers.range(1, 3000); a == b + 7]) < 0
}`
	e := policy.NewEngine(5*time.Millisecond, nil)
	if _, err := e.Load(ctx(t), set(policy.Policy{Name: "slow", Module: mod("slow.rego", slow)})); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := e.Evaluate(ctx(t), policy.Input{Kind: "Pod"})
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("got %v, want a deadline error", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("evaluation ran %v past a 5ms deadline", el)
	}
}

func TestSharedData(t *testing.T) {
	p := `package tessera.s
deny contains sprintf("queue %s unknown", [input.workload.queue]) if not input.cluster.queues[input.workload.queue]`
	e := policy.NewEngine(0, nil)
	if _, err := e.Load(ctx(t), set(policy.Policy{Name: "s", Module: mod("s.rego", p)})); err != nil {
		t.Fatal(err)
	}
	shared, err := policy.NewShared(map[string]any{"queues": map[string]any{"a": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	for q, allowed := range map[string]bool{"a": true, "b": false} {
		d, err := e.Evaluate(ctx(t), policy.Input{Kind: "Pod", Shared: shared, Document: map[string]any{"workload": map[string]any{"queue": q}}})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed() != allowed {
			t.Fatalf("queue %s: allowed %v, want %v (%v)", q, d.Allowed(), allowed, d.Denials)
		}
	}
}

func TestNoSetLoaded(t *testing.T) {
	if _, err := policy.NewEngine(0, nil).Evaluate(context.Background(), policy.Input{}); !errors.Is(err, policy.ErrNoPolicies) {
		t.Fatalf("got %v, want ErrNoPolicies", err)
	}
}
