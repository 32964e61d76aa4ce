package tainttoleration

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "tainttoleration"

// TaintToleration is the scoring plugin.
type TaintToleration struct{}

var _ framework.NodeScorer = TaintToleration{}

// Name implements framework.Plugin.
func (TaintToleration) Name() string { return Name }

// ScoreNode implements framework.NodeScorer: 100 for a node without PreferNoSchedule
// taints the task does not tolerate, 100/(1+k) for one with k of them.
func (TaintToleration) ScoreNode(t *framework.Task, n *framework.Node) float64 {
	k := 0
	for i := range n.Taints {
		if n.Taints[i].Effect == corev1.TaintEffectPreferNoSchedule && !t.Tolerates(&n.Taints[i]) {
			k++
		}
	}
	return 100 / float64(1+k)
}
