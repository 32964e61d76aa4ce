package topology

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "topology"

// Topology is the scorer.
type Topology struct {
	levels []string
	// anchor of lastTask, found once while the task is scored on many nodes.
	lastTask *framework.Task
	anchor   *framework.Node
}

var (
	_ framework.NodeScorer       = (*Topology)(nil)
	_ framework.SnapshotObserver = (*Topology)(nil)
)

// New returns the plugin.
func New() *Topology { return &Topology{} }

// Name implements framework.Plugin.
func (*Topology) Name() string { return Name }

// OnSessionOpen implements framework.SnapshotObserver.
func (t *Topology) OnSessionOpen(s *framework.Snapshot) {
	t.levels = s.TopologyLevels
	t.lastTask, t.anchor = nil, nil // tasks of earlier sessions may be freed and reused
}

// ScoreNode implements framework.NodeScorer: 100 when the node is in the same narrowest
// domain as the job's first placed task, less for broader levels, 0 otherwise or when
// the job has nothing placed.
func (t *Topology) ScoreNode(task *framework.Task, n *framework.Node) float64 {
	if task.Job == nil || len(task.Job.Tasks) < 2 || len(t.levels) == 0 {
		return 0
	}
	if task != t.lastTask {
		t.lastTask, t.anchor = task, nil
		for _, o := range task.Job.Tasks {
			if o.Node != nil {
				t.anchor = o.Node
				break
			}
		}
	}
	anchor := t.anchor
	if anchor == nil {
		return 0
	}
	for i, level := range t.levels {
		v, ok := n.Labels[level]
		if ok && v == anchor.Labels[level] {
			return 100 * float64(len(t.levels)-i) / float64(len(t.levels))
		}
	}
	return 0
}
