package sim

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Scale-down rules of an autoscaled replay.
const (
	// RuleTessera is Tessera's autoscaler: autoscale.Planner with the ScaleDownPolicy
	// defaults (a node without GPU pods, or with at most half its GPUs allocated, for
	// idleAfter, whose removal leaves every pod and every pending gang within its
	// queue's deserved share a place).
	RuleTessera = "tessera"
	// RuleCA is Cluster Autoscaler's scale-down as its documentation describes it (caLike).
	RuleCA = "ca"
	// RuleKarpenter is Karpenter's consolidation, WhenEmptyOrUnderutilized, delete only.
	RuleKarpenter = "karpenter"
)

func newRule(a Autoscaling, s *scheduler.Scheduler) (scaleDownRule, error) {
	switch a.Rule {
	case RuleTessera:
		p := a.Policy
		if p == nil {
			p = &tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "simulate"}}
		}
		pol, err := autoscale.PolicyFrom(p)
		if err != nil {
			return nil, err
		}
		if p.Spec.BootTime == nil && a.BootDelay > 0 {
			pol.BootTime = a.BootDelay
		}
		if a.UnderusedShare != nil {
			pol.UnderusedShare = *a.UnderusedShare
		}
		return &plannerRule{planner: autoscale.NewPlanner(pol, s)}, nil
	case RuleCA:
		return newCALike(), nil
	case RuleKarpenter:
		return newKarpenter(), nil
	}
	return nil, fmt.Errorf("autoscaling rule %q: use %s, %s or %s", a.Rule, RuleTessera, RuleCA, RuleKarpenter)
}

// plannerRule removes the candidates of Tessera's autoscale.Planner; every present
// node has reported its GPUs, and the cooldown runs from the last node that joined,
// as it does in a live cluster.
type plannerRule struct{ planner *autoscale.Planner }

func (p *plannerRule) pick(snap *framework.Snapshot, _ int64, f *fleet) []string {
	c := &autoscale.Cluster{Snap: snap, Nodes: make(map[string]autoscale.NodeState, len(snap.Nodes))}
	for _, n := range snap.Nodes {
		c.Nodes[n.Name] = autoscale.NodeState{GPUsReady: true, Blocker: protectedBlocker(n)}
	}
	if f.lastGrow >= 0 {
		c.LastScaleUp = epoch.Add(time.Duration(f.lastGrow) * time.Second)
	}
	var names []string
	for _, d := range p.planner.Plan(c).Candidates() {
		names = append(names, d.Node)
	}
	return names
}

// protectedBlocker keeps a node that runs a pod marked not to be evicted, as the
// actuator does for safe-to-evict: "false" and do-not-disrupt (autoscale.NodeBlocker).
func protectedBlocker(n *framework.Node) *autoscale.Blocker {
	for _, t := range n.Tasks {
		if !t.Preemptible {
			return &autoscale.Blocker{Reason: autoscale.ReasonNotSafeToEvict,
				Message: fmt.Sprintf("pod %s is annotated %s=false", t.Key(), autoscale.AnnotationSafeToEvict)}
		}
	}
	return nil
}
