package capi_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/autoscale/actuator"

	"github.com/tessera-gpu/tessera/internal/controller"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/capi"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// startManager runs `tessera autoscaler`'s manager (informer cache, leader election on
// the Lease id) until the returned stop is called or the test ends.
func (h *harness) startManager(id string) (stop func()) {
	h.t.Helper()
	mgr, _, err := actuator.NewManager(env.Config, env.Scheme, actuator.Config{
		Actuator:       actuator.Options{Scheduler: mustPolicy(h.t), RevalidateAfter: time.Second},
		Infrastructure: capi.New(env.Client), Period: 100 * time.Millisecond,
		Serving: controller.Serving{LeaderElect: true, LeaderElectionNamespace: leaseNamespace, LeaderElectionID: id,
			LeaseDuration: 2 * time.Second, MetricsAddr: "0", ProbeAddr: "0", Log: testr.New(h.t)},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return testenv.RunManager(h.t, h.ctx, mgr)
}

// Of two replicas one acts; stopped in the middle of a drain, the other takes the Lease
// over and finishes from the objects: one Machine marked, the MachineDeployment lowered
// once, one record.
func TestLeaderHandOverMidScaleDown(t *testing.T) {
	h := threeNodes(t, -1)
	if err := h.c.Create(h.ctx, apitest.MakeNamespace(leaseNamespace).Obj()); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	// The evicted web pod stays terminating (no kubelet) until the test plays the
	// kubelet after the hand-over: the first leader stops in the middle of the drain.
	// The managers run on the real clock, on which the nodes joined just now: no cooldown.
	h.policy(tesserav1.ScaleDownPolicySpec{Cooldown: &metav1.Duration{}})
	const id = "autoscaler-handover-test"
	stopFirst := h.startManager(id)
	h.startManager(id)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p, _, _ := h.phase("a"); p == autoscale.PhaseDraining {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node a never drained; events:\n%s", h.events)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopFirst()
	deadline = time.Now().Add(60 * time.Second)
	for {
		h.kubelet()
		if p, _, _ := h.phase("a"); p == autoscale.PhaseRemoved {
			break
		}
		if time.Now().After(deadline) {
			p, _, _ := h.phase("a")
			t.Fatalf("node a in %q after the hand-over", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // more rounds of the new leader change nothing
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas, want 2", got)
	}
	if got := h.marked(); !slices.Equal(got, []string{"ms-a"}) {
		t.Fatalf("marked %v", got)
	}
	if recs := h.status().RecentScaleDowns; len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	if h.podExists("web") || !h.podExists("train-b") || !h.podExists("train-c") {
		t.Fatal("wrong pods evicted")
	}
}
