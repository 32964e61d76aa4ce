package actuator

import (
	"context"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"

	corev1 "k8s.io/api/core/v1"
)

// Infrastructure removes the machines behind drained nodes. autoscale/capi implements
// it for Cluster API; without one, a drained node stays cordoned and labelled
// removable for its owner to remove.
type Infrastructure interface {
	// NodeGroups returns the node group of each node that has one (by node name) and
	// each group's replicas and size floor (by group name).
	NodeGroups(ctx context.Context, nodes []*corev1.Node) (map[string]string, map[string]autoscale.Group, error)
	// Mark marks node's machine for deletion at now and records its group's replicas,
	// so that Lower knows later whether it lowered them already. Marking a marked
	// machine changes nothing. machine is "" when the node has no machine.
	Mark(ctx context.Context, node *corev1.Node, now time.Time) (machine string, err error)
	// Lower lowers the replicas of the group of node's marked machine by one, once:
	// called again (after a crash), it finds them below the recorded count and changes
	// nothing. Other machines of the group count only if they were marked by settledBy.
	// It returns what it did, for the event: "MachineDeployment ns/md 3 -> 2".
	Lower(ctx context.Context, node *corev1.Node, settledBy time.Time) (string, error)
	// Unmark takes Mark's marks off node's machine, for a scale-down that failed
	// before Lower.
	Unmark(ctx context.Context, node *corev1.Node) error
}

// FillGroups records the node groups infra reports in c (nil infra: none).
func FillGroups(ctx context.Context, c *autoscale.Cluster, infra Infrastructure, nodes []*corev1.Node) error {
	if infra == nil {
		return nil
	}
	byNode, groups, err := infra.NodeGroups(ctx, nodes)
	if err != nil {
		return err
	}
	c.Groups = groups
	for name, g := range byNode {
		if st, ok := c.Nodes[name]; ok {
			st.Group = g
			c.Nodes[name] = st
		}
	}
	return nil
}
