package capi_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/capi"
)

// TestFaultSeed2ClusterAPIFoundLater (found by make faults, seed 2): an autoscaler that
// started while its API server restarted, when discovery did not list Cluster API's
// Machines yet, still removes the nodes it drains through Cluster API once they are
// served, instead of leaving them cordoned for good.
func TestFaultSeed2ClusterAPIFoundLater(t *testing.T) {
	h := threeNodes(t, -1)
	h.policy(tesserav1.ScaleDownPolicySpec{})
	lookups := 0
	d := (&capi.Discovering{Config: env.Config, Log: testr.New(t)}).WithServed(func(context.Context) (*capi.Provider, error) {
		lookups++
		if lookups <= 2 { // the restart: not served yet
			return nil, nil
		}
		return capi.New(env.Client), nil
	})
	a := h.actuatorWith(env.Client, d)
	h.rounds(a, 8)
	h.expectPhase("a", autoscale.PhaseRemoved)
	if got := h.replicas("md"); got != 2 {
		t.Fatalf("MachineDeployment at %d replicas, want 2: the node was left cordoned instead of removed (events:\n%s)", got, h.events)
	}
	if got := h.marked(); len(got) != 1 || got[0] != "ms-a" {
		t.Fatalf("marked %v, want ms-a", got)
	}
}
