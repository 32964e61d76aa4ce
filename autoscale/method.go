package autoscale

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Method is one way a node can qualify for removal (Karpenter's disruption methods
// are the model). The planner tracks since when Holds has been true; a node becomes a
// candidate once that lasted the policy's idleAfter, no rule keeps it, and the
// scheduler places its pods elsewhere.
type Method interface {
	Name() string
	// Holds reports whether n qualifies right now.
	Holds(n *framework.Node) bool
}

var (
	_ Method = Empty{}
	_ Method = Underused{}
)

// Empty qualifies nodes without any GPU-requesting pod.
type Empty struct{}

// Name implements Method.
func (Empty) Name() string { return "Empty" }

// Holds implements Method.
func (Empty) Holds(n *framework.Node) bool {
	for _, t := range n.Tasks {
		if t.GPU.Any() {
			return false
		}
	}
	return true
}

// Underused qualifies nodes whose allocated GPU share is at or below Share (but above
// zero): their pods may move so the node can go.
type Underused struct{ Share float64 }

// Name implements Method.
func (Underused) Name() string { return "Underused" }

// Holds implements Method.
func (u Underused) Holds(n *framework.Node) bool {
	if len(n.GPUs) == 0 {
		return false
	}
	var used int64
	for i := range n.GPUs {
		used += n.GPUs[i].UsedMilli
	}
	return used > 0 && float64(used) <= u.Share*float64(len(n.GPUs)*framework.MilliPerGPU)
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }
