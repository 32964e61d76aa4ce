package daemon_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

// podScheduled is the pod's PodScheduled condition ("" reason when it has none).
func (h *harness) podScheduled(name string) corev1.PodCondition {
	h.t.Helper()
	for _, p := range h.pods() {
		if p.Name != name {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c
			}
		}
	}
	return corev1.PodCondition{}
}

// TestPendingPodsVisibleToAutoscalers: pods that more nodes would let run say
// PodScheduled=False, reason Unschedulable, as kube-scheduler writes it for cluster
// autoscalers, every pod of a gang at once; pods that wait for their queue's capability
// or for their gang's other pods carry Tessera's reason instead, which autoscalers
// leave alone. A node joining binds the gang, and the API server marks it scheduled.
func TestPendingPodsVisibleToAutoscalers(t *testing.T) {
	h := newHarness(t)
	h.node("a", 8, nil)
	if err := h.c.Create(h.ctx, apitest.MakeQueue("capped").Weight(1).Capability(tesserav1.ResourceGPU, "2").Obj()); err != nil {
		t.Fatal(err)
	}
	h.podGroup("big", 3, "")
	for i := range 3 {
		h.pod(h.makePod(fmt.Sprintf("big-%d", i)).GPU(4).Group("big"))
	}
	h.podGroup("partial", 2, "")
	h.pod(h.makePod("partial-0").GPU(1).Group("partial"))
	h.pod(h.makePod("capped-0").GPU(4).Queue("capped"))
	h.run(h.daemon(nil))

	want := map[string]string{
		"big-0": corev1.PodReasonUnschedulable, "big-1": corev1.PodReasonUnschedulable, "big-2": corev1.PodReasonUnschedulable,
		"partial-0": "GangPodsMissing", "capped-0": "NotEnqueued",
	}
	h.eventually("PodScheduled conditions", 10*time.Second, func() string {
		var wrong []string
		for name, reason := range want {
			if c := h.podScheduled(name); c.Status != corev1.ConditionFalse || c.Reason != reason || c.Message == "" {
				wrong = append(wrong, fmt.Sprintf("%s: %s %s %q (want %s)", name, c.Status, c.Reason, c.Message, reason))
			}
		}
		return strings.Join(wrong, "; ")
	})
	if c := h.podScheduled("big-0"); c.Message != "ClusterTooSmall: gang needs 12 GPU, the cluster has 8" {
		t.Errorf("big-0's condition says %q; want the gang's reason and message", c.Message)
	}
	h.node("b", 8, nil)
	h.waitBound("the gang of 3 binds once a node joins", 3, 15*time.Second)
	h.eventually("the gang's pods scheduled", 10*time.Second, func() string {
		for i := range 3 {
			if c := h.podScheduled(fmt.Sprintf("big-%d", i)); c.Status != corev1.ConditionTrue {
				return fmt.Sprintf("big-%d: %+v", i, c)
			}
		}
		return ""
	})
}
