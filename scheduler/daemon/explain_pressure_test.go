package daemon_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// tessera explain shows the node agent's GPU-memory pressure eviction of a pod from its
// event: beside the pod's placement while it terminates, and as the pod's state once it
// is gone.
func TestExplainPressureEviction(t *testing.T) {
	h := newHarness(t)
	h.node("gpu-a", 8, nil)
	pod := h.pod(h.makePod("burst").NodeName(h.ns + "-gpu-a"))
	const msg = "Arrival: GPU 0 (GPU-0, 81920 MiB) uses 70000 MiB and newly bound pods still need 20000 MiB, above the pressure threshold of 77824 MiB"
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "burst.pressure", Namespace: h.ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: h.ns, Name: pod.Name, UID: pod.UID, APIVersion: "v1"},
		Reason:         tesserav1.EventReasonGPUMemoryPressure, Message: msg, Type: corev1.EventTypeWarning,
		LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "tessera-node-agent", Host: "gpu-a"}}
	if err := h.c.Create(h.ctx, ev); err != nil {
		t.Fatal(err)
	}
	e := h.explain("pod", h.ns+"/burst")
	if e.Evicted != tesserav1.EventReasonGPUMemoryPressure+": "+msg {
		t.Fatalf("evicted %q, want the event", e.Evicted)
	}
	var text strings.Builder
	if err := e.WriteText(&text); err != nil || !strings.Contains(text.String(), "evicted: GPUMemoryPressure: Arrival: GPU 0") {
		t.Fatalf("text %q", text.String())
	}

	zero := int64(0)
	if err := h.c.Delete(h.ctx, pod, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	e = h.explain("pod", h.ns+"/burst")
	if e.State != "Evicted" || e.Reason != tesserav1.EventReasonGPUMemoryPressure || e.Message != msg || !strings.Contains(e.Hint, "limit equal to its request") {
		t.Fatalf("gone pod explained %+v", e)
	}
}
