package webhooks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rego"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

const denyLabelX = `package tessera.nox

deny contains "label x is not allowed" if input.workload.labels.x
`

// deniesLabelX says whether engine denies a pod labelled x.
func deniesLabelX(ctx context.Context, t *testing.T, engine *policy.Engine) bool {
	t.Helper()
	d, err := engine.Evaluate(ctx, policy.Input{Phase: policy.PhaseValidate, Kind: "Pod",
		Document: map[string]any{"workload": map[string]any{"labels": map[string]any{"x": "1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return !d.Allowed()
}

// The controller serves the last good version of a policy that stopped compiling
// (stored while the webhook was not validating), and reports it through kstatus
// conditions.
func TestPolicyControllerStatusAndLastGood(t *testing.T) {
	e := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t, 60*time.Second)
	defaults, err := rego.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	engine := policy.NewEngine(time.Second, nil)
	m := webhooks.NewMetrics(prometheus.NewRegistry())
	pc := &webhooks.PolicyController{Client: e.Client, Engine: engine, Defaults: defaults, Metrics: m}
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	reconcileAll := func() {
		t.Helper()
		if _, err := pc.Reconcile(ctx, reconcile.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	denied := func() bool { return deniesLabelX(ctx, t, engine) }
	status := func(name string) tesserav1.AdmissionPolicy {
		t.Helper()
		var ap tesserav1.AdmissionPolicy
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, &ap); err != nil {
			t.Fatal(err)
		}
		return ap
	}
	compiledMetric := func(name string) float64 {
		t.Helper()
		return testutil.ToFloat64(m.PolicyCompiled().WithLabelValues(name))
	}
	defaultsVersion := engine.Version()

	a := &tesserav1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: tesserav1.AdmissionPolicySpec{Rego: denyLabelX, Targets: []tesserav1.AdmissionTarget{"Pod"}}}
	if err := e.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	reconcileAll()
	if got := status("a"); !got.Status.Compiled || got.Status.ObservedGeneration != 1 ||
		!meta.IsStatusConditionTrue(got.Status.Conditions, tesserav1.ConditionReady) ||
		!strings.Contains(meta.FindStatusCondition(got.Status.Conditions, tesserav1.ConditionReady).Message, engine.Version()) {
		t.Fatalf("status of a good policy: %+v", got.Status)
	}
	if v := compiledMetric("a"); v != 1 {
		t.Fatalf("tessera_admission_policy_compiled{policy=a} = %v for a good policy, want 1", v)
	}
	if !denied() || engine.Version() == defaultsVersion {
		t.Fatal("policy a is not serving")
	}
	servingWithA := engine.Version()

	cur := status("a")
	cur.Spec.Rego = "package tessera.nox\n\ndeny contains msg if {\n\tmsg := 1 +\n}\n"
	if err := e.Client.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	b := &tesserav1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: tesserav1.AdmissionPolicySpec{Rego: "package other\n\ndeny contains \"x\" if true\n", Targets: []tesserav1.AdmissionTarget{"Pod"}}}
	if err := e.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	reconcileAll()
	got := status("a")
	if got.Status.Compiled || got.Status.ObservedGeneration != 2 || len(got.Status.Errors) == 0 ||
		!strings.HasPrefix(got.Status.Errors[0], "admissionpolicy/a.rego:") ||
		!meta.IsStatusConditionTrue(got.Status.Conditions, webhooks.ConditionStalled) ||
		!meta.IsStatusConditionFalse(got.Status.Conditions, tesserav1.ConditionReady) {
		t.Fatalf("status of a broken policy: %+v", got.Status)
	}
	if !denied() || engine.Version() != servingWithA {
		t.Fatal("the last good version of a stopped serving")
	}
	if got := status("b"); got.Status.Compiled || !strings.Contains(strings.Join(got.Status.Errors, ""), "must be below tessera") {
		t.Fatalf("status of policy b: %+v", got.Status)
	}
	if a, b := compiledMetric("a"), compiledMetric("b"); a != 0 || b != 0 {
		t.Fatalf("tessera_admission_policy_compiled: a = %v, b = %v for broken policies, want 0 and 0", a, b)
	}

	// A controller that starts afresh (the webhook restarted) serves a's last good
	// version from its status.
	if got := status("a"); got.Status.LastGood == nil || got.Status.LastGood.Rego != denyLabelX || got.Status.LastGoodGeneration != 1 ||
		!strings.Contains(meta.FindStatusCondition(got.Status.Conditions, tesserav1.ConditionReady).Message, "generation 1 (status.lastGood) keeps serving") {
		t.Fatalf("status of a broken policy with a good generation before it: %+v", got.Status)
	}
	restarted := policy.NewEngine(time.Second, nil)
	pc2 := &webhooks.PolicyController{Client: e.Client, Engine: restarted, Defaults: defaults}
	if err := pc2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pc2.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if !deniesLabelX(ctx, t, restarted) {
		t.Fatal("after a restart, the last good version of a does not serve")
	}
	if msg := meta.FindStatusCondition(status("b").Status.Conditions, tesserav1.ConditionReady).Message; !strings.Contains(msg, "no version of this policy serves") {
		t.Fatalf("policy b, never good, says %q", msg)
	}

	// Fixing a brings it back to Ready; deleting it stops it.
	cur = status("a")
	cur.Spec.Rego = denyLabelX + "\n"
	if err := e.Client.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	reconcileAll()
	if got := status("a"); !got.Status.Compiled || got.Status.Errors != nil || meta.FindStatusCondition(got.Status.Conditions, webhooks.ConditionStalled) != nil {
		t.Fatalf("status of the fixed policy: %+v", got.Status)
	}
	if err := e.Client.Delete(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	reconcileAll()
	if denied() {
		t.Fatal("a deleted policy still serves")
	}
	if n := testutil.CollectAndCount(m.PolicyCompiled()); n != 1 {
		t.Fatalf("%d tessera_admission_policy_compiled series after deleting a, want 1 (b)", n)
	}
}

// The example AdmissionPolicy shipped in deploy/ compiles with the defaults and its
// tests pass.
func TestShippedExamplePolicies(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example policies: %v", err)
	}
	defaults, err := rego.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	engine := policy.NewEngine(time.Second, nil)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ap tesserav1.AdmissionPolicy
		if err := yaml.UnmarshalStrict(b, &ap); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c, err := engine.Check(testenv.Context(t, 30*time.Second), defaults.With(webhooks.ToPolicy(&ap)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		results, _ := c.Test(testenv.Context(t, 30*time.Second))
		own := 0
		for _, r := range results {
			if strings.HasPrefix(r.Location, webhooks.PolicyFile(ap.Name)) {
				own++
			}
		}
		if own == 0 {
			t.Errorf("%s: the example has no tests of its own", f)
		}
	}
}
