package predicates_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/predicates"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestFilter(t *testing.T) {
	a100 := func() *testutil.NodeWrapper {
		return testutil.MakeNode("n").GPUs(4, "A100-80GB").Label("pool", "train")
	}
	job := func() *testutil.JobWrapper { return testutil.MakeJob("j") }
	halfUsed := func(n *framework.Node) *framework.Node {
		// GPU 0 holds a 60% share, GPU 1 is whole-allocated.
		n.GPUs[0].UsedMilli, n.GPUs[0].Tasks = 600, 1
		n.GPUs[1].UsedMilli, n.GPUs[1].Tasks = 1000, 1
		n.Refresh()
		return n
	}
	affinity := func(op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: op, Values: values}}}}}}}
	}
	withAffinity := func(a *corev1.Affinity) *framework.Task {
		task := job().Obj().Tasks[0]
		task.Affinity = a
		return task
	}
	prefer := a100().Obj()
	prefer.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
	noExec := a100().Obj()
	noExec.Taints = []corev1.Taint{{Key: "broken", Effect: corev1.TaintEffectNoExecute}}
	cordonTolerated := job().Obj().Tasks[0]
	cordonTolerated.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	fpga := job().Obj().Tasks[0]
	fpga.Request.Scalar = map[corev1.ResourceName]int64{"example.com/fpga": 1}
	pods := a100().Obj()
	pods.Used.Pods = pods.Allocatable.Pods

	tests := []struct {
		name string
		task *framework.Task
		node *framework.Node
		want framework.FitCode
	}{
		{"plain fit", job().GPU(4).Obj().Tasks[0], a100().Obj(), framework.FitOK},
		{"cordoned", job().Obj().Tasks[0], a100().Unschedulable().Obj(), framework.FitUnschedulable},
		{"cordon tolerated", cordonTolerated, a100().Unschedulable().Obj(), framework.FitOK},
		{"untolerated taint", job().Obj().Tasks[0], a100().Taint("dedicated", "infer").Obj(), framework.FitTaint},
		{"tolerated taint", job().Tolerate("dedicated").Obj().Tasks[0], a100().Taint("dedicated", "infer").Obj(), framework.FitOK},
		{"other taint still untolerated", job().Tolerate("dedicated").Obj().Tasks[0], a100().Taint("dedicated", "infer").Taint("gpu-broken", "").Obj(), framework.FitTaint},
		{"PreferNoSchedule ignored", job().Obj().Tasks[0], prefer, framework.FitOK},
		{"NoExecute filters", job().Obj().Tasks[0], noExec, framework.FitTaint},
		{"selector matches", job().NodeSelector("pool", "train").Obj().Tasks[0], a100().Obj(), framework.FitOK},
		{"selector mismatch", job().NodeSelector("pool", "infer").Obj().Tasks[0], a100().Obj(), framework.FitNodeSelector},
		{"affinity In", withAffinity(affinity(corev1.NodeSelectorOpIn, "train", "dev")), a100().Obj(), framework.FitOK},
		{"affinity NotIn", withAffinity(affinity(corev1.NodeSelectorOpNotIn, "train")), a100().Obj(), framework.FitNodeSelector},
		{"cpu", job().CPU(129000).Obj().Tasks[0], a100().Obj(), framework.FitCPU},
		{"memory", job().Memory(2 << 40).Obj().Tasks[0], a100().Obj(), framework.FitMemory},
		{"pods", job().Obj().Tasks[0], pods, framework.FitPods},
		{"extended resource", fpga, a100().Obj(), framework.FitScalar},
		{"GPU model", job().GPU(1).Models("H100-80GB").Obj().Tasks[0], a100().Obj(), framework.FitGPUModel},
		{"GPU model allowed", job().GPU(1).Models("H100-80GB", "A100-80GB").Obj().Tasks[0], a100().Obj(), framework.FitOK},
		{"no GPUs", job().GPU(1).Obj().Tasks[0], testutil.MakeNode("cpu").Obj(), framework.FitGPUModel},
		{"whole GPUs left", job().GPU(2).Obj().Tasks[0], halfUsed(a100().Obj()), framework.FitOK},
		{"too few whole GPUs", job().GPU(3).Obj().Tasks[0], halfUsed(a100().Obj()), framework.FitGPUCount},
		{"unhealthy GPUs do not count", job().GPU(4).Obj().Tasks[0], a100().Unhealthy(3).Obj(), framework.FitGPUCount},
		{"share fits a free GPU", job().Share(900).Obj().Tasks[0], halfUsed(a100().Obj()), framework.FitOK},
		{"memory slice fits the shared GPU", job().GPUMemory(30000).Obj().Tasks[0], halfUsed(a100().Obj()), framework.FitOK},
		{"memory slice exceeds every GPU", job().GPUMemory(90000).Obj().Tasks[0], a100().Obj(), framework.FitGPUMemory},
		{"memory slice on a small GPU", job().GPUMemory(16000).Obj().Tasks[0], testutil.MakeNode("t4").GPUs(1, "T4").Obj(), framework.FitGPUMemory},
		{"cpu-only task on GPU node", job().Obj().Tasks[0], halfUsed(a100().Obj()), framework.FitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (predicates.Predicates{}).Filter(tc.task, tc.node); got != tc.want {
				t.Fatalf("Filter = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFitGPUSharesOnFullNode(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(2, "A100-80GB").Obj()
	for i := range n.GPUs {
		n.GPUs[i].UsedMilli = 700
	}
	n.Refresh()
	small := testutil.MakeJob("s").Share(300).Obj().Tasks[0]
	big := testutil.MakeJob("b").Share(301).Obj().Tasks[0]
	if got := predicates.FitGPU(&small.GPU, n); got != framework.FitOK {
		t.Fatalf("300 milli on 300 free: %s", got)
	}
	if got := predicates.FitGPU(&big.GPU, n); got != framework.FitGPUMemory {
		t.Fatalf("301 milli on 300 free: %s", got)
	}
	// 24576 MiB of 81920 is exactly 300 milli; one MiB more rounds up past it.
	if got := predicates.FitGPU(&framework.GPURequest{MemoryMiB: 24576}, n); got != framework.FitOK {
		t.Fatalf("24576 MiB: %s", got)
	}
	if got := predicates.FitGPU(&framework.GPURequest{MemoryMiB: 24577}, n); got != framework.FitGPUMemory {
		t.Fatalf("24577 MiB: %s", got)
	}
}

// On a node whose GPUs only claims carry, a request made as extended resources gets a
// claim: it needs published devices, and a device that takes shares for a share.
func TestFitGPUViaClaims(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(3, "A100-80GB").Obj()
	for i := range n.GPUs {
		n.GPUs[i].Device, n.GPUs[i].ViaClaims = fmt.Sprintf("gpu-%d", i), true
	}
	n.GPUs[2].Device = "" // not published
	n.Refresh()
	share, whole := &framework.GPURequest{MemoryMiB: 10240}, &framework.GPURequest{Count: 2}
	if got := predicates.FitGPU(share, n); got != framework.FitGPUDevice {
		t.Errorf("share, no device takes shares: %s", got)
	}
	if got := predicates.FitGPU(whole, n); got != framework.FitOK {
		t.Errorf("two whole GPUs on two devices: %s", got)
	}
	if set := framework.PickGPUs(whole, n); set.Len() != 2 || set.Has(2) {
		t.Errorf("two whole GPUs picked %v, want the two devices", set.Indices())
	}
	n.GPUs[1].Shareable = true
	n.Refresh()
	if set := framework.PickGPUs(share, n); set.Indices()[0] != 1 {
		t.Errorf("share picked %v, want GPU 1, the device that takes shares", set.Indices())
	}
}
