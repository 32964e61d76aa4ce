package nodeorder

// Hand-computed scores of kube-scheduler's LeastAllocated ((2 - cpu - memory) / 2 of
// the node, cpu and memory fractions after placing the pod) and BalancedAllocation
// (1 - the standard deviation of the fractions, the GPU counted only for pods that
// ask for one), each times 100, at Volcano's default nodeorder weights unless set.

import (
	"math"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

func TestScoreNode(t *testing.T) {
	const gi = int64(1) << 30
	gpus := func(n int) []framework.GPU {
		out := make([]framework.GPU, n)
		for i := range out {
			out[i] = framework.GPU{Index: i, MemoryMiB: 81920, Healthy: true}
		}
		return out
	}
	cases := []struct {
		name string
		args map[string]string
		task framework.Task
		node framework.Node
		want float64
	}{
		{
			// cpu (1+1)/4 = 0.5, memory (2+2)/8 = 0.5: least 50, balanced 100.
			name: "equal fractions",
			task: framework.Task{Request: framework.Resources{MilliCPU: 1000, Memory: 2 * gi}},
			node: framework.Node{Allocatable: framework.Resources{MilliCPU: 4000, Memory: 8 * gi}, Used: framework.Resources{MilliCPU: 1000, Memory: 2 * gi}},
			want: 150,
		},
		{
			// cpu 2/4 = 0.5, memory 1/8 = 0.125: least 100 * 1.375 / 2 = 68.75,
			// balanced 100 * (1 - 0.375 / 2) = 81.25.
			name: "unequal fractions on an empty node",
			task: framework.Task{Request: framework.Resources{MilliCPU: 2000, Memory: 1 * gi}},
			node: framework.Node{Allocatable: framework.Resources{MilliCPU: 4000, Memory: 8 * gi}},
			want: 150,
		},
		{
			// mostrequested 1 and leastrequested 0: 100 * (0.5 + 0.125) / 2 = 31.25, plus
			// balanced 81.25.
			name: "mostrequested instead of leastrequested",
			args: map[string]string{"leastrequested.weight": "0", "mostrequested.weight": "1"},
			task: framework.Task{Request: framework.Resources{MilliCPU: 2000, Memory: 1 * gi}},
			node: framework.Node{Allocatable: framework.Resources{MilliCPU: 4000, Memory: 8 * gi}},
			want: 112.5,
		},
		{
			// cpu 1/16, memory 4/64, GPU (4+2)/8 = 0.75: mean 0.291667, standard
			// deviation 0.324091, balanced 67.590939; least 100 * 1.875 / 2 = 93.75.
			name: "GPU pod counts the GPU in balance",
			task: framework.Task{Request: framework.Resources{MilliCPU: 1000, Memory: 4 * gi}, GPU: framework.GPURequest{Count: 2}},
			node: framework.Node{Allocatable: framework.Resources{MilliCPU: 16000, Memory: 64 * gi, GPU: 8000},
				Used: framework.Resources{GPU: 4000}, GPUs: gpus(8)},
			want: 93.75 + 67.59093919561657,
		},
		{
			// The same node for a CPU pod: the GPU is left out, cpu and memory are equal.
			name: "CPU pod ignores the GPU",
			task: framework.Task{Request: framework.Resources{MilliCPU: 1000, Memory: 4 * gi}},
			node: framework.Node{Allocatable: framework.Resources{MilliCPU: 16000, Memory: 64 * gi, GPU: 8000},
				Used: framework.Resources{GPU: 4000}, GPUs: gpus(8)},
			want: 93.75 + 100,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := New()
			if err := o.Configure(c.args); err != nil {
				t.Fatal(err)
			}
			if got := o.ScoreNode(&c.task, &c.node); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("score %v, want %v", got, c.want)
			}
		})
	}
}
