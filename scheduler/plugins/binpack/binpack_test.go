package binpack_test

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/binpack"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

const gib = int64(1) << 30

// busyNode is a 128-CPU, 1 TiB, 8 x A100-80GB node with 32 CPUs, 256 GiB, 4 GPUs and
// 1 unit of example.com/fpga (of 4) in use.
func busyNode() *framework.Node {
	n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Obj()
	n.Used = framework.Resources{MilliCPU: 32000, Memory: 256 * gib, GPU: 4000, Pods: 4,
		Scalar: map[corev1.ResourceName]int64{"example.com/fpga": 1}}
	n.Allocatable.Scalar = map[corev1.ResourceName]int64{"example.com/fpga": 4}
	return n
}

func TestScoreNode(t *testing.T) {
	fpgaTask := testutil.MakeJob("f").CPU(16000).Memory(128 * gib).Obj().Tasks[0]
	fpgaTask.Request.Scalar = map[corev1.ResourceName]int64{"example.com/fpga": 1}
	tests := []struct {
		name string
		args map[string]string
		task *framework.Task
		want float64
	}{
		// (48/128 + 384/1024 + 6/8) / 3 x 100 = (0.375 + 0.375 + 0.75) / 3 x 100
		{"defaults", nil, testutil.MakeJob("j").CPU(16000).Memory(128 * gib).GPU(2).Obj().Tasks[0], 50},
		// (2 x 0.375 + 1 x 0.375 + 5 x 0.75) / (2 + 1 + 5) x 100
		{"weighted", map[string]string{"binpack.cpu": "2", "binpack.memory": "1", "binpack.resources.tessera.dev/gpu": "5"},
			testutil.MakeJob("j").CPU(16000).Memory(128 * gib).GPU(2).Obj().Tasks[0], 60.9375},
		// A 40960 MiB slice of an 81920 MiB GPU is 500 milli: (0.375 + 0.375 + 4.5/8) / 3 x 100
		{"memory slice", nil, testutil.MakeJob("j").CPU(16000).Memory(128 * gib).GPUMemory(40960).Obj().Tasks[0], 43.75},
		// GPU not requested: left out of the weights, (0.375 + 0.375) / 2 x 100
		{"cpu only", nil, testutil.MakeJob("j").CPU(16000).Memory(128 * gib).Obj().Tasks[0], 37.5},
		// Resources listed replace the GPU default: (0.375 + 0.375 + 2 x 2/4) / 4 x 100
		{"extended resource", map[string]string{"binpack.resources": "example.com/fpga", "binpack.resources.example.com/fpga": "2"}, fpgaTask, 43.75},
		// cpu weight 0 drops cpu: (0.375 + 0.75) / 2 x 100
		{"cpu left out", map[string]string{"binpack.cpu": "0"}, testutil.MakeJob("j").CPU(16000).Memory(128 * gib).GPU(2).Obj().Tasks[0], 56.25},
		// More cpu than is free scores 0 for cpu but keeps its weight: (0 + 0.375 + 0.75) / 3 x 100
		{"over capacity", nil, testutil.MakeJob("j").CPU(100000).Memory(128 * gib).GPU(2).Obj().Tasks[0], 37.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := binpack.New()
			if err := b.Configure(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := b.ScoreNode(tc.task, busyNode()); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("score %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	b := binpack.New()
	if b.PluginWeight() != 1 {
		t.Fatalf("default weight %v", b.PluginWeight())
	}
	if err := b.Configure(map[string]string{"binpack.weight": "10"}); err != nil || b.PluginWeight() != 10 {
		t.Fatalf("binpack.weight: %v, %v", err, b.PluginWeight())
	}
	for args, want := range map[string]string{
		"binpack.gpu":                     "unknown binpack argument binpack.gpu",
		"binpack.resources.example.com/x": "example.com/x is not listed in binpack.resources",
	} {
		if err := binpack.New().Configure(map[string]string{args: "1"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want %q", args, err, want)
		}
	}
	if err := binpack.New().Configure(map[string]string{"binpack.cpu": "-1"}); err == nil {
		t.Fatal("negative weight accepted")
	}
}
