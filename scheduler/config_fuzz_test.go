package scheduler_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/testutil"

	"github.com/tessera-gpu/tessera/scheduler"
)

// FuzzParseConfig: any input either is rejected or gives a configuration the
// scheduler accepts; nothing panics.
func FuzzParseConfig(f *testing.F) {
	testutil.Seeds(f,
		volcanoConfig,
		"",
		"actions: \"\"\n",
		"actions: allocate\ntiers:\n- plugins: [{name: gang}, {name: gang}]\n",
		"tiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: 10, binpack.resources: tessera.dev/gpu}\n",
		"percentageOfNodesToScore: 101\n",
		"reservationAfter: -1s\ntiers:\n- plugins: [{name: predicates}]\n",
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := scheduler.ParseConfig(b)
		if err != nil {
			return
		}
		if _, err := scheduler.New(cfg); err != nil {
			t.Fatalf("ParseConfig accepted a configuration New rejects: %v\n%s", err, b)
		}
	})
}
