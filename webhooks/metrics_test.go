package webhooks

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPolicyCompiledMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	head := `
# HELP tessera_admission_policy_compiled 1 when the AdmissionPolicy compiles and its tests pass, 0 when it does not (its last good version, if any, keeps serving); as its status.compiled.
# TYPE tessera_admission_policy_compiled gauge
`
	for _, step := range []struct {
		compiled map[string]bool
		want     string
	}{
		{map[string]bool{"a": true, "b": false}, `tessera_admission_policy_compiled{policy="a"} 1
tessera_admission_policy_compiled{policy="b"} 0
`},
		// b was fixed, a broke, c is new.
		{map[string]bool{"a": false, "b": true, "c": true}, `tessera_admission_policy_compiled{policy="a"} 0
tessera_admission_policy_compiled{policy="b"} 1
tessera_admission_policy_compiled{policy="c"} 1
`},
		// a and c were deleted.
		{map[string]bool{"b": true}, `tessera_admission_policy_compiled{policy="b"} 1
`},
	} {
		m.setPolicies(step.compiled)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(head+step.want), "tessera_admission_policy_compiled"); err != nil {
			t.Fatalf("after %v: %v", step.compiled, err)
		}
	}
	m.setPolicies(nil)
	if n := testutil.CollectAndCount(m.PolicyCompiled()); n != 0 {
		t.Fatalf("%d series without AdmissionPolicies, want 0", n)
	}
	var none *Metrics
	none.setPolicies(map[string]bool{"a": true}) // a nil *Metrics records nothing
}
