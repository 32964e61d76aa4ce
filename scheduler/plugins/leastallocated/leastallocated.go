package leastallocated

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "leastallocated"

// LeastAllocated is the scoring plugin, CPU and memory weighted 1 as in kube-scheduler.
type LeastAllocated struct{}

var _ framework.NodeScorer = LeastAllocated{}

// Name implements framework.Plugin.
func (LeastAllocated) Name() string { return Name }

// ScoreNode implements framework.NodeScorer.
func (LeastAllocated) ScoreNode(t *framework.Task, n *framework.Node) float64 {
	return (free(t.Request.MilliCPU, n.Used.MilliCPU, n.Allocatable.MilliCPU) +
		free(t.Request.Memory, n.Used.Memory, n.Allocatable.Memory)) / 2
}

func free(req, used, alloc int64) float64 {
	if alloc == 0 || used+req > alloc {
		return 0
	}
	return 100 * float64(alloc-used-req) / float64(alloc)
}
