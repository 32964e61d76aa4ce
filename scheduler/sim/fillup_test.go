package sim

import (
	"testing"
)

func openb(t testing.TB, pods string) FillUp {
	t.Helper()
	in, err := OpenbInput(pods)
	if err != nil {
		t.Fatal(err)
	}
	return FillUp{Trace: in.Name, Nodes: in.Nodes, Pods: in.Pods, Arrive: 1.3, Seed: 42}
}

func TestFillUpPolicies(t *testing.T) {
	f := openb(t, "default")
	for _, p := range []string{"fgd", "bestfit", "tessera"} {
		f.Policy = p
		r, err := RunFillUp(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-10s unallocated@100=%.2f alloc@130=%.2f frag@90=%.2f wall=%.2fs", p, r.UnallocatedPctAt100, r.AllocPctAt["130"], r.FragPctAt90, r.WallSeconds)
	}
}
