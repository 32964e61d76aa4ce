package nvidia_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
)

func inventory(t *testing.T, n *nvidiatest.Node) (*nvidia.Source, gpu.Inventory) {
	t.Helper()
	src := n.Source()
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	inv, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	return src, inv
}

func link(t *testing.T, inv gpu.Inventory, a, b int) gpu.Link {
	t.Helper()
	for _, l := range inv.Links {
		if l.A == a && l.B == b {
			return l
		}
	}
	t.Fatalf("no link %d-%d in %v", a, b, inv.Links)
	return gpu.Link{}
}

func TestDiscoveryDGX(t *testing.T) {
	for _, tc := range []struct {
		name      string
		node      *nvidiatest.Node
		model     string
		memoryMiB int64
		nvlinks   int
		cc        string
	}{
		{"dgxa100", nvidiatest.DGXA100(), "Mock NVIDIA A100-SXM4-40GB", 40 * 1024, 12, "8.0"},
		{"dgxh100", nvidiatest.DGXH100(), "NVIDIA H100 80GB HBM3", 80 * 1024, 18, "9.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.node.SetComputeMode(3, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
			_, inv := inventory(t, tc.node)
			if inv.DriverVersion != "550.54.15" || inv.CUDAVersion != "12.4" {
				t.Errorf("versions = %q / %q, want 550.54.15 / 12.4", inv.DriverVersion, inv.CUDAVersion)
			}
			if len(inv.Devices) != 8 {
				t.Fatalf("%d devices, want 8", len(inv.Devices))
			}
			for i, d := range inv.Devices {
				if d.Index != i || d.UUID != tc.node.UUID(i) || !strings.HasPrefix(d.UUID, "GPU-") {
					t.Errorf("device %d: index %d uuid %q, want %q", i, d.Index, d.UUID, tc.node.UUID(i))
				}
				if d.Model != tc.model || d.MemoryMiB != tc.memoryMiB {
					t.Errorf("device %d: %q %d MiB, want %q %d MiB", i, d.Model, d.MemoryMiB, tc.model, tc.memoryMiB)
				}
				if want := "0000:0" + string(rune('0'+i)) + ":00.0"; d.PCIBusID != want {
					t.Errorf("device %d: bus id %q, want %q", i, d.PCIBusID, want)
				}
				if d.NUMANode != i/4 || d.MIGEnabled || !d.Healthy {
					t.Errorf("device %d: numa %d mig %v healthy %v", i, d.NUMANode, d.MIGEnabled, d.Healthy)
				}
				mode := gpu.ComputeModeDefault
				if i == 3 {
					mode = gpu.ComputeModeExclusiveProcess
				}
				if d.ComputeCapability != tc.cc || d.ComputeMode != mode || !d.MIGCapable {
					t.Errorf("device %d: compute capability %q mode %q MIG capable %v, want %q %q true", i, d.ComputeCapability, d.ComputeMode, d.MIGCapable, tc.cc, mode)
				}
			}
			if len(inv.Links) != 28 {
				t.Fatalf("%d links, want 28 (every pair of 8)", len(inv.Links))
			}
			for _, l := range inv.Links {
				if l.NVLinks != tc.nvlinks {
					t.Errorf("link %d-%d: %d NVLinks through NVSwitch, want %d", l.A, l.B, l.NVLinks, tc.nvlinks)
				}
			}
			if got := link(t, inv, 0, 1).PCIe; got != tesserav1.PCIeSingleSwitch {
				t.Errorf("0-1 PCIe = %s, want SingleSwitch", got)
			}
			if got := link(t, inv, 0, 3).PCIe; got != tesserav1.PCIeSameCPU {
				t.Errorf("0-3 PCIe = %s, want SameCPU", got)
			}
			if got := link(t, inv, 3, 4).PCIe; got != tesserav1.PCIeCrossCPU {
				t.Errorf("3-4 PCIe = %s, want CrossCPU", got)
			}
			islands := gpu.Islands(inv.Devices, inv.Links)
			for i := range 8 {
				if islands[i] != 0 {
					t.Errorf("GPU %d in island %d; NVSwitch joins all GPUs into island 0", i, islands[i])
				}
			}
		})
	}
}

func TestDiscoveryNVLinkBridges(t *testing.T) {
	n := nvidiatest.PCIeA100()
	n.Devices[2].MigMode = nvml.DEVICE_MIG_ENABLE
	_, inv := inventory(t, n)
	if got := link(t, inv, 0, 1).NVLinks; got != 12 {
		t.Errorf("0-1: %d NVLinks, want 12", got)
	}
	if got := link(t, inv, 1, 2).NVLinks; got != 0 {
		t.Errorf("1-2: %d NVLinks, want 0", got)
	}
	islands := gpu.Islands(inv.Devices, inv.Links)
	if want := map[int]int32{0: 0, 1: 0, 2: 1, 3: 1}; len(islands) != 4 || islands[0] != 0 || islands[1] != 0 || islands[2] != 1 || islands[3] != 1 {
		t.Errorf("islands = %v, want %v", islands, want)
	}
	if !inv.Devices[2].MIGEnabled || inv.Devices[1].MIGEnabled {
		t.Errorf("MIG: device 2 %v device 1 %v, want true/false", inv.Devices[2].MIGEnabled, inv.Devices[1].MIGEnabled)
	}
	if inv.Devices[0].MemoryMiB != 80*1024 {
		t.Errorf("memory %d MiB, want %d", inv.Devices[0].MemoryMiB, 80*1024)
	}
}

func TestInitFailureNamesTheFix(t *testing.T) {
	n := nvidiatest.DGXA100()
	n.FailInit(nvml.ERROR_LIBRARY_NOT_FOUND, 1)
	src := n.Source()
	err := src.Init()
	if err == nil || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") {
		t.Fatalf("Init error = %v, want one naming libnvidia-ml.so.1", err)
	}
	if err := src.Init(); err != nil {
		t.Fatalf("second Init (driver back): %v", err)
	}
}

func TestLostGPU(t *testing.T) {
	n := nvidiatest.DGXH100()
	src, _ := inventory(t, n) // learns the UUIDs
	n.Lose(3)
	inv, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	d := inv.Devices[3]
	if d.Healthy || d.UUID != n.UUID(3) || d.UnhealthyReason != nvidia.LostReason {
		t.Fatalf("lost GPU = %+v, want unhealthy with its known UUID and reason %q", d, nvidia.LostReason)
	}
	if !inv.Devices[2].Healthy {
		t.Fatalf("GPU 2 unhealthy: %s", inv.Devices[2].UnhealthyReason)
	}
	samples, err := src.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if s := samples[3]; !s.Lost || s.Err == nil || s.UUID != n.UUID(3) {
		t.Fatalf("sample of lost GPU = %+v, want Lost with an error", s)
	}
	if s := samples[2]; s.Err != nil || s.Lost {
		t.Fatalf("sample of GPU 2: %v", s.Err)
	}
	// A GPU lost before it was ever identified is left out rather than published without a UUID.
	fresh := nvidiatest.DGXA100()
	fresh.Lose(0)
	_, inv = inventory(t, fresh)
	if len(inv.Devices) != 7 || inv.Devices[0].Index != 1 {
		t.Fatalf("devices = %d, first index %d; want 7 starting at 1", len(inv.Devices), inv.Devices[0].Index)
	}
}

func TestSample(t *testing.T) {
	n := nvidiatest.DGXA100()
	src, _ := inventory(t, n)
	n.SetUsage(1, nvidiatest.Usage{UtilizationPercent: 73, MemoryUsedMiB: 5000, TemperatureC: 61,
		Processes: map[uint32]uint64{4242: 3000, 4343: 2000}})
	samples, err := src.Sample()
	if err != nil {
		t.Fatal(err)
	}
	s := samples[1]
	if s.UUID != n.UUID(1) || s.UtilizationPercent != 73 || s.MemoryUsedBytes != 5000<<20 ||
		s.MemoryTotalBytes != 40<<30 || s.TemperatureC != 61 || len(s.Processes) != 2 {
		t.Fatalf("sample = %+v", s)
	}
	var total uint64
	for _, p := range s.Processes {
		total += p.MemoryUsedBytes
	}
	if total != 5000<<20 {
		t.Fatalf("process memory %d, want %d", total, uint64(5000<<20))
	}
	if samples[0].UtilizationPercent != 0 || samples[0].Err != nil {
		t.Fatalf("idle GPU sample = %+v", samples[0])
	}
}

func TestWatchHealthXid(t *testing.T) {
	n := nvidiatest.DGXA100()
	src, _ := inventory(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan gpu.HealthEvent, 4)
	done := make(chan error, 1)
	go func() { done <- src.WatchHealth(ctx, events) }()
	n.Xid(5, 13) // an application error: the GPU stays healthy
	n.Xid(6, 79) // fallen off the bus
	select {
	case e := <-events:
		if e.UUID != n.UUID(6) || !strings.Contains(e.Reason, "Xid 79") {
			t.Fatalf("event = %+v, want Xid 79 on GPU 6", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no health event for Xid 79")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WatchHealth did not return after cancel")
	}
	select {
	case e := <-events:
		t.Fatalf("unexpected event %+v (Xid 13 is an application error)", e)
	default:
	}
}
