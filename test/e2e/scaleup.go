package e2e

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StandInScaleUp raises the MachineDeployment's replicas by the nodes the pods marked
// PodScheduled=False, reason Unschedulable need (keeping at most maxNodes Machines; 0: no bound), every 2 seconds until ctx ends: it
// packs their GPU requests first onto the free GPUs of the ready nodes, then onto new
// nodes shaped like them (8 GPUs), as Cluster Autoscaler's scale-up simulates pending
// pods on a node group's template. It waits while Machines have no Node yet.
func StandInScaleUp(ctx context.Context, c client.Client, maxNodes int, logf func(string, ...any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		if n, err := nodesWanted(ctx, c, maxNodes); err != nil || n == 0 {
			continue
		} else if err := addMachines(ctx, c, n); err == nil {
			logf("stand-in scale-up: %d node(s) for the Unschedulable pods", n)
		}
	}
}

// nodesWanted is how many new 8-GPU nodes the Unschedulable pods need, keeping the
// Machines at most maxNodes (0: no bound).
func nodesWanted(ctx context.Context, c client.Client, maxNodes int) (int, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return 0, err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return 0, err
	}
	var machines clusterv1.MachineList
	if err := c.List(ctx, &machines, client.InNamespace(ClusterNamespace)); err != nil {
		return 0, err
	}
	if len(machines.Items) > len(nodes.Items) {
		return 0, nil // a scale-up is under way
	}
	free := map[string]float64{}
	for _, n := range nodes.Items {
		if !n.Spec.Unschedulable {
			free[n.Name] = 8
		}
	}
	var want []float64
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // holds nothing
		}
		if p.Spec.NodeName != "" {
			free[p.Spec.NodeName] -= podGPUs(p)
		} else if c := scheduledCondition(p); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			want = append(want, podGPUs(p))
		}
	}
	slices.SortFunc(want, func(a, b float64) int { return cmp.Compare(b, a) })
	bins := make([]float64, 0, len(free))
	for _, f := range free {
		bins = append(bins, f)
	}
	added := 0
	for _, g := range want {
		i := slices.IndexFunc(bins, func(f float64) bool { return f >= g })
		if i < 0 {
			bins, added, i = append(bins, 8), added+1, len(bins)
		}
		bins[i] -= g
	}
	if maxNodes > 0 {
		added = min(added, max(maxNodes-len(machines.Items), 0))
	}
	return added, nil
}

// addMachines raises the MachineDeployment's replicas by n.
func addMachines(ctx context.Context, c client.Client, n int) error {
	var md clusterv1.MachineDeployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: DeploymentName}, &md); err != nil {
		return err
	}
	patched := md.DeepCopy()
	patched.Spec.Replicas = ptr.To(ptr.Deref(md.Spec.Replicas, 0) + int32(n))
	return c.Patch(ctx, patched, client.MergeFrom(&md))
}

// scheduledCondition is the pod's PodScheduled condition, or nil.
func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Replicas is the MachineDeployment's wanted replicas.
func Replicas(ctx context.Context, c client.Client) (int32, error) {
	var md clusterv1.MachineDeployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: DeploymentName}, &md); err != nil {
		return 0, err
	}
	return ptr.Deref(md.Spec.Replicas, 0), nil
}

// MachineNodes are the nodes that Machines of the cluster stand behind, by name.
func MachineNodes(ctx context.Context, c client.Client) (map[string]bool, error) {
	var ms clusterv1.MachineList
	if err := c.List(ctx, &ms, client.InNamespace(ClusterNamespace)); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, m := range ms.Items {
		if m.Status.NodeRef.Name != "" {
			out[m.Status.NodeRef.Name] = true
		}
	}
	return out, nil
}
