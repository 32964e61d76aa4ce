package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestGPUAndSliceMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, "gpu-node-1")
	m.SetGPUs([]GPU{
		{Index: 0, UUID: "GPU-a", Model: "NVIDIA H100 80GB HBM3", UtilizationPercent: 75, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 80 << 30, TemperatureC: 60, Healthy: true},
		{Index: 1, UUID: "GPU-b", Model: "NVIDIA H100 80GB HBM3", Healthy: false},
	})
	m.SetSlices([]Slice{{Namespace: "team-a", Pod: "train-0", LimitBytes: 10 << 30, UsedBytes: 9 << 30}})
	m.SetNVMLUp(true)
	want := `
# HELP tessera_gpu_utilization_ratio Fraction of the last sample period during which a kernel ran on the GPU (0-1).
# TYPE tessera_gpu_utilization_ratio gauge
tessera_gpu_utilization_ratio{gpu="0",model="NVIDIA H100 80GB HBM3",node="gpu-node-1",uuid="GPU-a"} 0.75
# HELP tessera_gpu_memory_used_bytes GPU memory in use.
# TYPE tessera_gpu_memory_used_bytes gauge
tessera_gpu_memory_used_bytes{gpu="0",model="NVIDIA H100 80GB HBM3",node="gpu-node-1",uuid="GPU-a"} 1.073741824e+09
# HELP tessera_gpu_memory_total_bytes GPU memory installed.
# TYPE tessera_gpu_memory_total_bytes gauge
tessera_gpu_memory_total_bytes{gpu="0",model="NVIDIA H100 80GB HBM3",node="gpu-node-1",uuid="GPU-a"} 8.589934592e+10
# HELP tessera_gpu_healthy 1 when the GPU is healthy, 0 after an Xid error, ECC error or when it fell off the bus.
# TYPE tessera_gpu_healthy gauge
tessera_gpu_healthy{gpu="0",model="NVIDIA H100 80GB HBM3",node="gpu-node-1",uuid="GPU-a"} 1
tessera_gpu_healthy{gpu="1",model="NVIDIA H100 80GB HBM3",node="gpu-node-1",uuid="GPU-b"} 0
# HELP tessera_gpu_slice_memory_limit_bytes GPU memory slice assigned to a pod.
# TYPE tessera_gpu_slice_memory_limit_bytes gauge
tessera_gpu_slice_memory_limit_bytes{namespace="team-a",pod="train-0"} 1.073741824e+10
# HELP tessera_gpu_slice_memory_used_bytes GPU memory used by the processes of a pod with a slice.
# TYPE tessera_gpu_slice_memory_used_bytes gauge
tessera_gpu_slice_memory_used_bytes{namespace="team-a",pod="train-0"} 9.663676416e+09
# HELP tessera_node_agent_nvml_up 1 when NVML answers, 0 when it is missing or failing.
# TYPE tessera_node_agent_nvml_up gauge
tessera_node_agent_nvml_up 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"tessera_gpu_utilization_ratio", "tessera_gpu_memory_used_bytes", "tessera_gpu_memory_total_bytes", "tessera_gpu_healthy",
		"tessera_gpu_slice_memory_limit_bytes", "tessera_gpu_slice_memory_used_bytes", "tessera_node_agent_nvml_up"); err != nil {
		t.Fatal(err)
	}
	// A pod that finished disappears from the slice series.
	m.SetSlices(nil)
	if n := testutil.CollectAndCount(m.sliceUsed); n != 0 {
		t.Fatalf("%d slice series after the pod left, want 0", n)
	}
}
