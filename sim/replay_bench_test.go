package sim

import (
	"fmt"
	"testing"

	"github.com/tessera-gpu/tessera/sim/trace"
)

// BenchmarkReplayDiurnal is one replay of a day of the diurnal scenario scaled to a
// number of nodes, under Tessera's profile: how the replay's cost grows with the
// cluster (target: a 5,000-node replay within 60 s).
func BenchmarkReplayDiurnal(b *testing.B) {
	for _, nodes := range []int{40, 160} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s, err := trace.BuildVariant("diurnal", 42, trace.Variant{Nodes: nodes, Hours: 24})
			if err != nil {
				b.Fatal(err)
			}
			in := ScenarioInput(s)
			b.ReportMetric(float64(len(in.Jobs)), "jobs")
			for b.Loop() {
				if _, err := RunReplay(Replay{Input: in, Profile: "tessera", Seed: 42}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
