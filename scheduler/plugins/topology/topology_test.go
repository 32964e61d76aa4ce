package topology_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/topology"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func rackNode(name, rack, zone string) *framework.Node {
	w := testutil.MakeNode(name).GPUs(8, "A100-80GB").Label("topology.kubernetes.io/zone", zone)
	if rack != "" {
		w.Label("tessera.dev/rack", rack)
	}
	return w.Obj()
}

func TestScoreNode(t *testing.T) {
	anchor := rackNode("anchor", "r1", "z1")
	tests := []struct {
		name string
		node *framework.Node
		want float64
	}{
		{"same rack", rackNode("a", "r1", "z1"), 100},
		{"same zone, other rack", rackNode("b", "r2", "z1"), 50},
		{"same zone, no rack label", rackNode("c", "", "z1"), 50},
		{"other zone", rackNode("d", "r3", "z2"), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := topology.New()
			p.OnSessionOpen(testutil.Snapshot(0, nil, nil))
			j := testutil.MakeJob("j").Tasks(2).GPU(8).Obj()
			if got := p.ScoreNode(j.Tasks[0], tc.node); got != 0 {
				t.Fatalf("nothing placed yet: %v", got)
			}
			anchor.Place(j.Tasks[0], framework.PickGPUs(&j.Tasks[0].GPU, anchor), framework.MilliPerGPU)
			defer anchor.Remove(j.Tasks[0])
			if got := p.ScoreNode(j.Tasks[1], tc.node); got != tc.want {
				t.Fatalf("score %v, want %v", got, tc.want)
			}
		})
	}
	single := testutil.MakeJob("s").Obj()
	p := topology.New()
	p.OnSessionOpen(testutil.Snapshot(0, nil, nil))
	if p.ScoreNode(single.Tasks[0], anchor) != 0 {
		t.Fatal("a single pod has no topology preference")
	}
}
