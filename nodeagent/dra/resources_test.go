package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

// The request policy's bounds are whole steps from the minimum, as the API requires:
// a GPU whose memory is not a whole number of steps shares up to the last whole step.
func TestSharingDeviceRoundsToTheStep(t *testing.T) {
	p := sharePolicy{mps: true, step: resource.MustParse("1Gi")}
	h100 := GPU{Device: gpu.Device{Index: 3, UUID: "GPU-h", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, NUMANode: -1,
		ComputeMode: gpu.ComputeModeExclusiveProcess, ComputeCapability: "9.0", Healthy: true}}
	d := p.device(h100)
	if d.Name != "gpu-3" || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		t.Fatalf("device %+v: want gpu-3 with allowMultipleAllocations", d)
	}
	c := d.Capacity[CapacityMemory]
	rp := c.RequestPolicy
	if c.Value.Cmp(resource.MustParse("81559Mi")) != 0 || rp == nil || rp.Default.String() != "79Gi" ||
		rp.ValidRange.Min.String() != "1Gi" || rp.ValidRange.Step.String() != "1Gi" || rp.ValidRange.Max.String() != "79Gi" {
		t.Fatalf("memory %s, policy %+v / %+v: want 81559Mi, default = max = 79Gi, min = step = 1Gi", c.Value.String(), rp, rp.ValidRange)
	}
	if _, ok := d.Attributes[AttrNUMANode]; ok {
		t.Errorf("numaNode published for an unknown NUMA node")
	}
	if v := d.Attributes[AttrComputeCapability].VersionValue; v == nil || *v != "9.0.0" {
		t.Errorf("computeCapability %v, want 9.0.0", v)
	}
	if len(d.Taints) != 0 {
		t.Errorf("healthy GPU tainted: %v", d.Taints)
	}

	// Not shared: no MPS, another compute mode, or less than two steps of memory.
	for name, tc := range map[string]struct {
		p    sharePolicy
		mode string
		mib  int64
	}{
		"mps off":      {sharePolicy{step: p.step}, gpu.ComputeModeExclusiveProcess, 81559},
		"default mode": {p, gpu.ComputeModeDefault, 81559},
		"tiny":         {p, gpu.ComputeModeExclusiveProcess, 1536},
	} {
		g := h100
		g.ComputeMode, g.MemoryMiB, g.Healthy, g.UnhealthyReason = tc.mode, tc.mib, false, "Xid 79"
		d := tc.p.device(g)
		if d.AllowMultipleAllocations != nil || d.Capacity[CapacityMemory].RequestPolicy != nil || *d.Attributes[AttrSharing].BoolValue {
			t.Errorf("%s: device %+v is published for sharing", name, d)
		}
		if len(d.Taints) != 1 || d.Taints[0].Key != TaintUnhealthy || d.Taints[0].Effect != resourceapi.DeviceTaintEffectNoSchedule {
			t.Errorf("%s: unhealthy GPU's taints %v", name, d.Taints)
		}
	}
}
