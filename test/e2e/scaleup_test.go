package e2e

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scaleUp shows a gang that needs more GPUs than the cluster has bringing up a Machine
// through a stand-in for the Cluster API autoscaler's scale-up (StandInScaleUp), which,
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
	go StandInScaleUp(ctx, s.c.Client, 0, s.tl.Logf)
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
