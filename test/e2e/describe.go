package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Describe summarises the cluster's state for a failed run: nodes, Machines, the
// MachineDeployment, ScaleDownPolicies, pods not finished and the latest events.
func (c *Cluster) Describe(ctx context.Context) string {
	var b strings.Builder
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err == nil {
		fmt.Fprintf(&b, "Nodes (%d):\n", len(nodes.Items))
		for _, n := range nodes.Items {
			var taints []string
			for _, t := range n.Spec.Taints {
				taints = append(taints, t.Key+"="+t.Value+":"+string(t.Effect))
			}
			fmt.Fprintf(&b, "  %s unschedulable=%t taints=%v tessera=%v\n", n.Name, n.Spec.Unschedulable, taints, tesseraKeys(n.Labels, n.Annotations))
		}
	}
	var ms clusterv1.MachineList
	if err := c.Client.List(ctx, &ms); err == nil {
		fmt.Fprintf(&b, "Machines (%d):\n", len(ms.Items))
		for _, m := range ms.Items {
			fmt.Fprintf(&b, "  %s phase=%s node=%s deleting=%t annotations=%v\n", m.Name, m.Status.Phase, m.Status.NodeRef.Name, !m.DeletionTimestamp.IsZero(), m.Annotations)
		}
	}
	var mds clusterv1.MachineDeploymentList
	if err := c.Client.List(ctx, &mds); err == nil {
		for _, md := range mds.Items {
			fmt.Fprintf(&b, "MachineDeployment %s: replicas %d, annotations %v\n", md.Name, *md.Spec.Replicas, md.Annotations)
		}
	}
	var sdps tesserav1.ScaleDownPolicyList
	if err := c.Client.List(ctx, &sdps); err == nil {
		for _, p := range sdps.Items {
			st, _ := yaml.Marshal(p.Status)
			fmt.Fprintf(&b, "ScaleDownPolicy %s status:\n%s", p.Name, indent(string(st)))
		}
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods); err == nil {
		fmt.Fprintln(&b, "Pods not finished:")
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				fmt.Fprintf(&b, "  %s/%s node=%q phase=%s\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	}
	var events corev1.EventList
	if err := c.Client.List(ctx, &events); err == nil {
		slices.SortFunc(events.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
		fmt.Fprintln(&b, "Latest events:")
		for _, e := range events.Items[max(0, len(events.Items)-40):] {
			fmt.Fprintf(&b, "  %s %s %s/%s %s: %s\n", e.LastTimestamp.Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// tesseraKeys are the tessera.dev labels and annotations of an object.
func tesseraKeys(maps ...map[string]string) []string {
	var out []string
	for _, m := range maps {
		for k, v := range m {
			if strings.Contains(k, "tessera.dev/") || strings.Contains(k, "cluster.x-k8s.io/") {
				out = append(out, k+"="+v)
			}
		}
	}
	slices.Sort(out)
	return out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}
