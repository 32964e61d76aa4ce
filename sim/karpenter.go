package sim

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Karpenter's consolidation as a GPU NodePool configures it: consolidationPolicy
// WhenEmptyOrUnderutilized, the default budget, and delete only (the replay's node
// type is fixed, so a replacement node is never cheaper).
const (
	// karpenterConsolidateAfter is spec.disruption.consolidateAfter, in seconds: how
	// long after a pod was scheduled onto or removed from a node it becomes a candidate.
	// One minute is the value the NodePool example of Karpenter's v1 documentation
	// shows for it ("consolidateAfter: 1m | Never", Concepts > NodePools,
	// karpenter.sh/v1.0/concepts/nodepools/); the v1 API's default is 0s.
	karpenterConsolidateAfter = 60
	// karpenterBudgetPercent is the default disruption budget, "nodes: 10%", rounded up.
	karpenterBudgetPercent = 10
	// karpenterMaxBatch is the most candidates multi-node consolidation considers.
	karpenterMaxBatch = 100
)

// karpenter is Karpenter v1's disruption controller (kubernetes-sigs/karpenter,
// pkg/controllers/disruption, as of v1.14) doing consolidation only, delete only:
//
//   - A node is a candidate once nothing was scheduled onto or removed from it for
//     consolidateAfter (the NodeClaim's Consolidatable condition; a node first seen
//     counts from then, as Karpenter counts from initialization), and while none of
//     its pods carries karpenter.sh/do-not-disrupt (Task.Preemptible false).
//   - The budget is 10% of the nodes, rounded up; nodes taken in this pick use it up.
//   - Emptiness first: every empty candidate, within the budget, goes at once (empty:
//     no pod with a positive eviction cost).
//   - Then multi-node consolidation: the other candidates, cheapest to disrupt first,
//     cut to the budget and to 100; a binary search over the prefixes of two or more
//     finds the longest whose pods all fit on the nodes left, which go together.
//   - Else single-node consolidation: the first candidate, in the same order, whose
//     pods fit on the nodes left.
//
// A candidate's disruption cost is 1 plus, per pod, its eviction cost when positive:
// 1 + priority/2^25, clamped to [-10, 10] (pkg/utils/disruption). v1.14 orders by
// price over that cost, descending; the replay's nodes all cost alike here, so that is
// the cost ascending, the order before v1.14; ties go by name. Pods are placed as
// Karpenter's scheduling simulation does: by CPU then memory, largest first, each on
// the first node by name where it fits (firstFit, resources only), never onto a node
// still within consolidateAfter (v1.14).
//
// Karpenter has no delay after a scale-up other than consolidateAfter's per-node
// clock: a node that just joined, or just got pods, waits consolidateAfter; nothing
// else does. Left out: pending pods in the simulation (which would make it launch a
// node rather than delete), PodDisruptionBudgets, expireAfter's discount on the cost
// of older nodes, the 15-second re-validation, and the time a deletion takes (nodes go
// at once, and the next pick sees them gone).
type karpenter struct {
	seen map[string]karpenterNode
}

// karpenterNode is what the rule remembers of a node: the pods it held at the last
// look, as a signature, and when they last changed.
type karpenterNode struct {
	pods    uint64
	changed int64
}

func newKarpenter() scaleDownRule { return &karpenter{seen: map[string]karpenterNode{}} }

func (k *karpenter) pick(snap *framework.Snapshot, now int64, _ *fleet) []string {
	k.observe(snap.Nodes, now)
	budget := karpenterBudget(len(snap.Nodes))
	// Nodes within consolidateAfter are neither candidates nor destinations.
	type candidate struct {
		n    *framework.Node
		cost float64
	}
	var settled []*framework.Node
	var candidates []candidate
	for _, n := range snap.Nodes {
		if now-k.seen[n.Name].changed < karpenterConsolidateAfter {
			continue
		}
		settled = append(settled, n)
		if !hasProtectedTask(n) {
			candidates = append(candidates, candidate{n: n, cost: disruptionCost(n)})
		}
	}
	slices.SortStableFunc(candidates, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.n.Name, b.n.Name))
	})
	slices.SortStableFunc(settled, func(a, b *framework.Node) int { return cmp.Compare(a.Name, b.Name) })
	left := newFirstFit(settled)
	left.podOrder = karpenterPodOrder

	var out []string
	var underused []string
	for _, c := range candidates {
		switch {
		case c.cost > 1:
			underused = append(underused, c.n.Name)
		case budget > 0:
			out = append(out, c.n.Name)
			left.drop(c.n.Name)
			budget--
		}
	}
	if budget == 0 || len(underused) == 0 {
		return out
	}
	if batch := multiNode(left, underused[:min(len(underused), budget)]); len(batch) > 0 {
		return append(out, batch...)
	}
	for _, name := range underused {
		if left.fits(name) {
			return append(out, name)
		}
	}
	return out
}

// multiNode is Karpenter's firstNConsolidationOption: a binary search for the longest
// prefix of two or more candidates (at most karpenterMaxBatch+1, as its bounds give)
// whose pods all fit on the nodes left; nil when none does.
func multiNode(left *firstFit, candidates []string) []string {
	if len(candidates) < 2 {
		return nil
	}
	lo, hi := 1, min(len(candidates), karpenterMaxBatch)
	if len(candidates) <= hi {
		hi = len(candidates) - 1
	}
	var best []string
	for lo <= hi {
		mid := (lo + hi) / 2
		if batch := candidates[:mid+1]; left.fits(batch...) {
			best, lo = batch, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// observe records, per node, when the pods on it last changed; a node seen for the
// first time changes now. It forgets the nodes no longer present.
func (k *karpenter) observe(nodes []*framework.Node, now int64) {
	present := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		present[n.Name] = true
		sig := podSignature(n)
		if s, ok := k.seen[n.Name]; !ok || s.pods != sig {
			k.seen[n.Name] = karpenterNode{pods: sig, changed: now}
		}
	}
	for name := range k.seen {
		if !present[name] {
			delete(k.seen, name)
		}
	}
}

// podSignature stands for the set of pods on n: their UIDs (names when a task has
// none) and start times, so that a pod evicted and started again there changes it too.
func podSignature(n *framework.Node) uint64 {
	sig := uint64(len(n.Tasks))
	for _, t := range n.Tasks {
		id := t.UID
		if id == "" {
			id = t.Name
		}
		sig += mix64(fnv64(id + "@" + strconv.FormatInt(t.StartTime.UnixNano(), 10)))
	}
	return sig
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix64 spreads a hash's bits (SplitMix64's finalizer), so that summing the pods'
// hashes, which does not depend on their order, stays collision-poor.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// karpenterBudget is 10% of the nodes, rounded up.
func karpenterBudget(nodes int) int {
	return (nodes*karpenterBudgetPercent + 99) / 100
}

// evictionCost is Karpenter's cost of evicting a pod: 1 plus its priority over 2^25,
// clamped to [-10, 10].
func evictionCost(t *framework.Task) float64 {
	cost := 1.0
	if t.Job != nil {
		cost += float64(t.Job.Priority) / math.Exp2(25)
	}
	return min(max(cost, -10), 10)
}

// disruptionCost is a node's cost of disruption as Karpenter sorts candidates: 1 plus
// the positive eviction costs of its pods; a node at 1 is empty.
func disruptionCost(n *framework.Node) float64 {
	cost := 1.0
	for _, t := range n.Tasks {
		cost += max(0, evictionCost(t))
	}
	return cost
}

// karpenterPodOrder is the order Karpenter's scheduler takes pods in: CPU, then memory,
// largest first; then the oldest job, then the UID.
func karpenterPodOrder(a, b *framework.Task) int {
	created := func(t *framework.Task) int64 {
		if t.Job == nil {
			return 0
		}
		return t.Job.Created.UnixNano()
	}
	return cmp.Or(cmp.Compare(b.Request.MilliCPU, a.Request.MilliCPU), cmp.Compare(b.Request.Memory, a.Request.Memory),
		cmp.Compare(created(a), created(b)), cmp.Compare(a.UID, b.UID))
}
