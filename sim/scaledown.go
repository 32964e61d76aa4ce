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
	// defaults (a node without GPU pods for idleAfter, whose removal leaves every pod
	// and every pending gang within its queue's deserved share a place).
	RuleTessera = "tessera"
	// RuleCALike is a Cluster-Autoscaler-like rule (caLike).
	RuleCALike = "ca-like"
)

func newRule(a Autoscaling, s *scheduler.Scheduler) (scaleDownRule, error) {
	switch a.Rule {
	case RuleTessera:
		pol, err := autoscale.PolicyFrom(&tesserav1.ScaleDownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "simulate"}})
		if err != nil {
			return nil, err
		}
		pol.UnderusedShare = a.UnderusedShare
		return &plannerRule{planner: autoscale.NewPlanner(pol, s)}, nil
	case RuleCALike:
		return newCALike(), nil
	}
	return nil, fmt.Errorf("autoscaling rule %q: use %s or %s", a.Rule, RuleTessera, RuleCALike)
}

// plannerRule removes the candidates of Tessera's autoscale.Planner; every present
// node has reported its GPUs, and the cooldown runs from the cluster's last change.
type plannerRule struct{ planner *autoscale.Planner }

func (p *plannerRule) pick(snap *framework.Snapshot, _ int64, f *fleet) []string {
	c := &autoscale.Cluster{Snap: snap, Nodes: make(map[string]autoscale.NodeState, len(snap.Nodes))}
	for _, n := range snap.Nodes {
		c.Nodes[n.Name] = autoscale.NodeState{GPUsReady: true}
	}
	if last := f.lastChange(); last >= 0 {
		c.LastScaleDown = epoch.Add(time.Duration(last) * time.Second)
	}
	var names []string
	for _, d := range p.planner.Plan(c).Candidates() {
		names = append(names, d.Node)
	}
	return names
}
