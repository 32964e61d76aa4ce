package sim

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// settle lets the rule see the nodes once, consolidateAfter before at, and returns its
// pick at at.
func settle(k scaleDownRule, snap *framework.Snapshot, at int64) []string {
	k.pick(snap, at-karpenterConsolidateAfter, noFleet())
	return k.pick(snap, at, noFleet())
}

func TestKarpenterBudgetIsTenPercentRoundedUp(t *testing.T) {
	for nodes, want := range map[int]int{0: 0, 1: 1, 5: 1, 10: 1, 11: 2, 20: 2, 101: 11} {
		if got := karpenterBudget(nodes); got != want {
			t.Errorf("budget of %d nodes %d, want %d", nodes, got, want)
		}
	}
}

// Empty nodes go first, by name, as many as the budget allows, and use it up.
func TestKarpenterRemovesEmptyNodesWithinTheBudget(t *testing.T) {
	nodes := caNodes(12) // a budget of 2
	for _, n := range nodes[:9] {
		put(n, 8, 1000)
	}
	put(nodes[9], 1, 1000) // j is nearly empty, and its pod fits nowhere but k or l
	snap := &framework.Snapshot{Nodes: nodes}
	if got := settle(newKarpenter(), snap, 1000); !slices.Equal(got, []string{"k", "l"}) {
		t.Errorf("removed %v, want the empty k and l", got)
	}
}

// The budget bounds every pick: with 5 nodes, one at a time.
func TestKarpenterRespectsTheBudget(t *testing.T) {
	nodes := caNodes(5) // a budget of 1
	put(nodes[0], 2, 1000)
	put(nodes[1], 2, 1000)
	put(nodes[2], 2, 1000)
	snap := &framework.Snapshot{Nodes: nodes}
	k := newKarpenter()
	if got := settle(k, snap, 1000); !slices.Equal(got, []string{"d"}) {
		t.Errorf("removed %v, want the empty d alone", got)
	}
	snap.Nodes = snap.Nodes[:3] // d and e gone
	if got := k.pick(snap, 2000, noFleet()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("removed %v, want a alone (single-node consolidation)", got)
	}
}

// Two half-empty nodes whose pods fit on a third go together.
func TestKarpenterRemovesTwoNodesTogether(t *testing.T) {
	nodes := caNodes(11) // a budget of 2
	put(nodes[0], 4, 1000)
	put(nodes[1], 4, 1000)
	hi := put(nodes[2], 0, 1000) // c has room for a's and b's pods, and costs more
	hi.Job = &framework.Job{Priority: 1 << 25}
	for _, n := range nodes[3:] {
		put(n, 8, 1000)
	}
	snap := &framework.Snapshot{Nodes: nodes}
	if got := settle(newKarpenter(), snap, 1000); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("removed %v, want a and b together", got)
	}
}

// A node with a do-not-disrupt pod is never a candidate.
func TestKarpenterKeepsANodeWithADoNotDisruptPod(t *testing.T) {
	nodes := caNodes(3)
	put(nodes[0], 2, 1000).Preemptible = false
	put(nodes[1], 6, 1000)
	put(nodes[2], 6, 1000)
	snap := &framework.Snapshot{Nodes: nodes}
	k := newKarpenter()
	for now := int64(0); now <= 3600; now += 60 {
		if got := k.pick(snap, now, noFleet()); slices.Contains(got, "a") {
			t.Fatalf("removed %v at %d", got, now)
		}
	}
	nodes[0].Tasks[0].Preemptible = true
	if got := k.pick(snap, 3660, noFleet()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("removed %v once the pod may be disrupted, want a", got)
	}
}

// A node waits consolidateAfter after it is first seen and after its pods change.
func TestKarpenterWaitsConsolidateAfter(t *testing.T) {
	nodes := caNodes(2)
	gone := put(nodes[0], 1, 1000)
	put(nodes[1], 8, 1000)
	snap := &framework.Snapshot{Nodes: nodes}
	k := newKarpenter()
	if got := k.pick(snap, 0, noFleet()); len(got) != 0 {
		t.Fatalf("removed %v when first seen", got)
	}
	nodes[0].Remove(gone) // a is empty from 30 on
	k.pick(snap, 30, noFleet())
	if got := k.pick(snap, 30+karpenterConsolidateAfter-1, noFleet()); len(got) != 0 {
		t.Fatalf("removed %v within consolidateAfter of its last pod leaving", got)
	}
	if got := k.pick(snap, 30+karpenterConsolidateAfter, noFleet()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("removed %v consolidateAfter after its last pod left, want a", got)
	}
}

// A node within consolidateAfter takes no pods of the nodes consolidated.
func TestKarpenterMovesNoPodsOntoANodeWithinConsolidateAfter(t *testing.T) {
	nodes := caNodes(2)
	put(nodes[0], 2, 1000)
	put(nodes[1], 2, 1000)
	snap := &framework.Snapshot{Nodes: nodes}
	k := newKarpenter()
	k.pick(snap, 0, noFleet())
	put(nodes[1], 1, 1000) // b changes at 60
	if got := k.pick(snap, 60, noFleet()); len(got) != 0 {
		t.Errorf("removed %v onto a node that just changed", got)
	}
	if got := k.pick(snap, 120, noFleet()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("removed %v, want a", got)
	}
}

func TestKarpenterOrdersCandidatesByDisruptionCost(t *testing.T) {
	low, high := &framework.Job{Priority: -1 << 25}, &framework.Job{Priority: 1 << 26}
	n := caNodes(1)[0]
	put(n, 1, 1000).Job = low // eviction cost 0: not counted
	if got := disruptionCost(n); got != 1 {
		t.Errorf("cost %g, want 1 (empty to Karpenter)", got)
	}
	put(n, 1, 1000).Job = high // 1 + 2
	put(n, 1, 1000)            // 1
	if got := disruptionCost(n); got != 5 {
		t.Errorf("cost %g, want 5", got)
	}
}
