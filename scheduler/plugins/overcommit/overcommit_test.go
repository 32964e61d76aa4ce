package overcommit

// Cases ported from volcano-sh/volcano (commit ed72c7c)
// pkg/scheduler/plugins/overcommit/overcommit_test.go TestOvercommitPlugin: two nodes
// of 2 cpu 4Gi and 4 cpu 16Gi, nothing in use. As there, the job's podgroup is already
// Inqueue (counted when the session opens), is then reported enqueued once more, and
// only then asked about. Nothing is skipped; "overCommitFactor is less than 0" differs
// in form only: Volcano falls back to the default factor below 1, this plugin refuses
// such a factor and keeps the default.

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

func TestVolcanoOvercommit(t *testing.T) {
	const gi, gb = int64(1) << 30, int64(1e9)
	total := framework.Resources{MilliCPU: 6000, Memory: 20 * gi}
	normal := framework.Resources{MilliCPU: 2000, Memory: 2 * gb}
	huge := framework.Resources{MilliCPU: 20000, Memory: 20 * gb}
	cases := []struct {
		name   string
		factor string // "" keeps the default
		min    framework.Resources
		want   bool
	}{
		{"overcommit_test.go TestOvercommitPlugin/overCommitFactor is more than 0", "1.2", normal, true},
		{"overcommit_test.go TestOvercommitPlugin/overCommitFactor is less than 0", "0.8", normal, true},
		{"overcommit_test.go TestOvercommitPlugin/when the required resources of pg are too large", "1.2", huge, false},
		{"overcommit_test.go TestOvercommitPlugin/when pg does not fill MinResources", "1.2", framework.Resources{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := New()
			err := o.Configure(map[string]string{FactorArgument: c.factor})
			if c.factor == "0.8" {
				if err == nil {
					t.Fatal("a factor below 1 must be refused")
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if o.Factor != DefaultFactor {
				t.Fatalf("factor %g, want %g", o.Factor, DefaultFactor)
			}
			q := &framework.Queue{Name: "c1", Weight: 1, Capability: framework.Unlimited.Clone()}
			j := &framework.Job{Name: "pg", Queue: q, MinResources: c.min}
			s := &framework.Snapshot{Total: total, Nodes: []*framework.Node{{Name: "n1"}, {Name: "n2"}}, Jobs: []*framework.Job{j}, Queues: []*framework.Queue{q}}
			o.OnSessionOpen(s)
			o.Enqueued(j, &c.min) // Inqueue at session open
			o.Enqueued(j, &c.min) // ssn.JobEnqueued in the Volcano test
			if got, msg := o.Enqueueable(j, &c.min); got != c.want {
				t.Errorf("Enqueueable = %v (%s), want %v", got, msg, c.want)
			}
		})
	}
}
