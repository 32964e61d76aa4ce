package sim

import (
	"cmp"
	"slices"
	"time"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// autoscaleEvery is how often an autoscaled replay looks at its nodes when nothing
// else happens, so that a node idle for long is noticed at night too.
const autoscaleEvery = 5 * 60

// Autoscaling turns a replay's GPU nodes off and on: a scale-down rule removes nodes,
// and removed nodes come back, after BootDelay, when waiting jobs need them.
type Autoscaling struct {
	// Rule names the scale-down rule: RuleTessera, RuleCA or RuleKarpenter.
	Rule string
	// BootDelay is how long a node added back takes before pods can use it; it is
	// paid for while it boots.
	BootDelay time.Duration
	// Policy is the ScaleDownPolicy RuleTessera plans with; nil: the defaults, with
	// BootDelay as its bootTime. Its nodeSelector applies to the replay's nodes as to a
	// cluster's.
	Policy *tesserav1.ScaleDownPolicy
	// UnderusedShare, when set, replaces the share of RuleTessera's Underused method
	// (autoscale.Policy) that the policy gives; 0 removes empty nodes only.
	UnderusedShare *float64
}

// fleet is the replay's nodes under an autoscaler: those in the snapshot, those
// booting (paid, not yet usable) and those removed (not paid).
type fleet struct {
	rule      scaleDownRule
	bootDelay int64
	booting   []bootingNode
	removed   []*framework.Node // in the input's order
	// rank is each node's position in the input: nodes rejoin the snapshot in order.
	rank map[*framework.Node]int
	// lastGrow is when a node last joined; -1: never.
	lastGrow            int64
	removals, evictions int
}

type bootingNode struct {
	n     *framework.Node
	ready int64
}

// scaleDownRule picks the nodes to remove now. It may keep state between calls (since
// when a node qualified); it changes neither the snapshot nor the scheduler.
type scaleDownRule interface {
	pick(snap *framework.Snapshot, now int64, f *fleet) []string
}

func newFleet(a Autoscaling, s *scheduler.Scheduler, nodes []*framework.Node) (*fleet, error) {
	rule, err := newRule(a, s)
	if err != nil {
		return nil, err
	}
	f := &fleet{rule: rule, bootDelay: int64(a.BootDelay / time.Second), lastGrow: -1, rank: map[*framework.Node]int{}}
	for i, n := range nodes {
		f.rank[n] = i
	}
	return f, nil
}

// inOrder sorts nodes in the input's order.
func (f *fleet) inOrder(nodes []*framework.Node) {
	slices.SortFunc(nodes, func(a, b *framework.Node) int { return cmp.Compare(f.rank[a], f.rank[b]) })
}

// nextReady is when the next booting node is ready; ok is false when none boots.
func (f *fleet) nextReady() (at int64, ok bool) {
	if len(f.booting) == 0 {
		return 0, false
	}
	return slices.MinFunc(f.booting, func(a, b bootingNode) int { return cmp.Compare(a.ready, b.ready) }).ready, true
}

// bootingNodes are the nodes on their way back.
func (f *fleet) bootingNodes() []*framework.Node {
	out := make([]*framework.Node, len(f.booting))
	for i, b := range f.booting {
		out[i] = b.n
	}
	return out
}

// paidNodes counts the GPU nodes the cluster pays for: present or booting.
func (r *replayer) paidNodes() int {
	n := len(r.snap.Nodes)
	if r.fleet != nil {
		n += len(r.fleet.booting)
	}
	return n
}

// joinReady adds the nodes whose boot finished by now to the snapshot.
func (r *replayer) joinReady() {
	f := r.fleet
	if f == nil {
		return
	}
	kept := f.booting[:0]
	for _, b := range f.booting {
		if b.ready > r.now {
			kept = append(kept, b)
			continue
		}
		r.snap.Nodes = append(r.snap.Nodes, b.n)
		f.lastGrow = r.now
	}
	f.booting = kept
	f.inOrder(r.snap.Nodes)
}

// autoscale adds nodes back for waiting jobs or, when it added none, removes the
// nodes the rule picks; the pods of removed nodes are placed again at once, as a
// drain's evicted pods would be.
func (r *replayer) autoscale() {
	f := r.fleet
	if f == nil {
		return
	}
	if boot := r.nodesToBoot(); len(boot) > 0 {
		for _, n := range boot {
			f.booting = append(f.booting, bootingNode{n: n, ready: r.now + f.bootDelay})
			f.removed = slices.DeleteFunc(f.removed, func(x *framework.Node) bool { return x == n })
		}
		return
	}
	names := f.rule.pick(r.snap, r.now, f)
	if len(names) == 0 {
		return
	}
	gone := map[string]bool{}
	for _, name := range names {
		gone[name] = true
	}
	for _, n := range r.snap.Nodes {
		if gone[n.Name] {
			f.removed = append(f.removed, n)
		}
	}
	f.inOrder(f.removed)
	displaced := r.snap.RemoveNodes(names...)
	f.removals += len(names)
	f.evictions += len(displaced)
	r.evicted(EvictedByScaleDown, len(displaced))
	if len(displaced) > 0 {
		r.updateProgress(r.order)
		r.schedule()
	}
}
