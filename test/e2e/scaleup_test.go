package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scaleUp shows a gang that needs more GPUs than the cluster has bringing up a Machine
// through a stand-in for the Cluster API autoscaler's scale-up (standInScaleUp), which,
// as Cluster Autoscaler does, reads only the pods' PodScheduled conditions; the gang
// binds, whole, on the node that joins.
func (s *scenario) scaleUp() {
	ctx, stop := context.WithCancel(s.ctx)
	defer stop()
	s.wait(2*time.Minute, "the earlier GPU pods gone, terminating ones too", func() error {
		var pods corev1.PodList
		if err := s.c.Client.List(s.ctx, &pods); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && podGPUs(&p) > 0 && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return fmt.Errorf("%s/%s holds GPUs on %s", p.Namespace, p.Name, p.Spec.NodeName)
			}
		}
		return nil
	})
	go standInScaleUp(ctx, s.c.Client, s.tl.Logf)
	gang := Job(TenantNamespace, "wide", 3, 8, 0, 0)
	s.create(gang)
	pods := client.MatchingLabels{batchv1.JobNameLabel: gang.Name}
	s.wait(time.Minute, "the gang's pods marked Unschedulable for autoscalers", func() error {
		ps, err := s.pods(pods)
		if err != nil || len(ps) != 3 {
			return fmt.Errorf("%d of 3 pods (%v)", len(ps), err)
		}
		for _, p := range ps {
			if c := scheduledCondition(&p); c == nil || c.Reason != corev1.PodReasonUnschedulable {
				return fmt.Errorf("%s: PodScheduled %+v", p.Name, c)
			}
		}
		s.tl.Logf("3 pods x 8 GPUs on 16 GPUs: PodScheduled=False Unschedulable: %s", scheduledCondition(&ps[0]).Message)
		return nil
	})
	s.wait(4*time.Minute, "the gang bound on the node that joined", func() error { return s.bound(pods, 3) })
	var md clusterv1.MachineDeployment
	if err := s.c.Client.Get(s.ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: DeploymentName}, &md); err != nil {
		s.t.Fatal(err)
	}
	if r := ptr.Deref(md.Spec.Replicas, 0); r != 3 {
		s.t.Errorf("MachineDeployment %s at %d replicas, want 3: one node more than the 2 whose 16 GPUs hold 2 of the gang's pods", DeploymentName, r)
	}
	s.tl.Logf("the gang of 3 bound whole; MachineDeployment %s at %d replicas", DeploymentName, ptr.Deref(md.Spec.Replicas, 0))
	s.delete(gang)
}

func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// standInScaleUp raises the MachineDeployment's replicas by the nodes the pods marked
// PodScheduled=False, reason Unschedulable need, every 2 seconds until ctx ends: it
// packs their GPU requests first onto the free GPUs of the ready nodes, then onto new
// nodes shaped like them (8 GPUs), as Cluster Autoscaler's scale-up simulates pending
// pods on a node group's template. It waits while Machines have no Node yet.
func standInScaleUp(ctx context.Context, c client.Client, logf func(string, ...any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		if n, err := nodesWanted(ctx, c); err != nil || n == 0 {
			continue
		} else if err := addMachines(ctx, c, n); err == nil {
			logf("stand-in scale-up: %d node(s) for the Unschedulable pods", n)
		}
	}
}

// nodesWanted is how many new 8-GPU nodes the Unschedulable pods need.
func nodesWanted(ctx context.Context, c client.Client) (int, error) {
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
