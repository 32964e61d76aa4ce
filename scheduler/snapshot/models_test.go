package snapshot

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// TestWorkloadModels: pods pinned to GPU models by nodeSelector or required affinity on
// tessera.dev/gpu-model or nvidia.com/gpu.product are model-constrained shapes of the
// workload; pins that leave every model, or say nothing of models, are not.
func TestWorkloadModels(t *testing.T) {
	b := NewBuilder(epoch, Options{})
	b.AddNode(testNode("t4").GPUs(2, "T4", 15109).Label(gfdProductLabel, "Tesla-T4").Label("zone", "a").Obj(), nil)
	b.AddNode(testNode("v100").GPUs(4, "V100M32", 32510).Label(gfdProductLabel, "Tesla-V100").Label("zone", "a").Obj(), nil)
	b.AddNode(testNode("a100").GPUs(8, "A100-80GB", 81920).Label("zone", "b").Obj(), nil)
	affinity := func(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
		sel := &corev1.NodeSelector{}
		for _, exprs := range terms {
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: exprs})
		}
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	in := func(key string, values ...string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}
	}
	pods := []struct {
		cpu      string
		selector map[string]string
		affinity *corev1.Affinity
		want     string
	}{
		{"1", map[string]string{tesserav1.LabelGPUModel: "T4"}, nil, "T4"},
		{"2", nil, affinity(in(gfdProductLabel, "Tesla-T4", "Tesla-V100")), "T4|V100M32"},
		{"3", nil, affinity(in(gfdProductLabel, "Tesla-T4"), in(tesserav1.LabelGPUModel, "A100-80GB")), "A100-80GB|T4"},
		{"4", nil, affinity([]corev1.NodeSelectorRequirement{{Key: tesserav1.LabelGPUModel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"T4"}}}), "A100-80GB|V100M32"},
		{"5", map[string]string{"zone": "a"}, nil, ""},
		{"6", nil, affinity(in(gfdProductLabel, "Tesla-T4"), in("zone", "b")), ""},
		{"7", map[string]string{tesserav1.LabelGPUModel: "H100"}, nil, ""},
	}
	for i, p := range pods {
		pod := testPod("p"+p.cpu, "ns").GPU(1).CPU(p.cpu).Obj()
		pod.Spec.NodeSelector, pod.Spec.Affinity = p.selector, p.affinity
		b.AddPod(pod, int32(i))
	}
	snap, errs := b.Build()
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	got := map[int64]string{}
	for _, m := range snap.Workload {
		if !slices.IsSorted(m.GPU.Models) {
			t.Errorf("models %v not sorted", m.GPU.Models)
		}
		got[m.MilliCPU] = strings.Join(m.GPU.Models, "|")
	}
	for _, p := range pods {
		cpu := int64(p.cpu[0]-'0') * 1000
		if got[cpu] != p.want {
			t.Errorf("pod with %s CPU: models %q, want %q", p.cpu, got[cpu], p.want)
		}
	}
}
