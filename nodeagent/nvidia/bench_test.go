package nvidia_test

import (
	"testing"

	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
)

// BenchmarkInventoryDGXH100 is discovery of 8 GPUs and their 28 pairs (NVLink walk and
// PCIe common ancestors) over go-nvml's mock, i.e. the agent's own cost per discovery.
func BenchmarkInventoryDGXH100(b *testing.B) {
	src := nvidiatest.DGXH100().Source()
	if err := src.Init(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Inventory(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSampleDGXH100 is one sample of 8 GPUs with 4 processes each.
func BenchmarkSampleDGXH100(b *testing.B) {
	n := nvidiatest.DGXH100()
	for i := range 8 {
		n.SetUsage(i, nvidiatest.Usage{UtilizationPercent: 50, MemoryUsedMiB: 4000,
			Processes: map[uint32]uint64{uint32(100 + i): 1000, uint32(200 + i): 1000, uint32(300 + i): 1000, uint32(400 + i): 1000}})
	}
	src := n.Source()
	if err := src.Init(); err != nil {
		b.Fatal(err)
	}
	if _, err := src.Inventory(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Sample(); err != nil {
			b.Fatal(err)
		}
	}
}
