package tainttoleration_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/tainttoleration"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestScoreNode(t *testing.T) {
	prefer := func(k string) corev1.Taint {
		return corev1.Taint{Key: k, Effect: corev1.TaintEffectPreferNoSchedule}
	}
	tests := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        float64
	}{
		{"no taints", nil, nil, 100},
		{"NoSchedule is the filter's, not the score's", []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}, nil, 100},
		{"one PreferNoSchedule", []corev1.Taint{prefer("a")}, nil, 50},
		{"two", []corev1.Taint{prefer("a"), prefer("b")}, nil, 100.0 / 3},
		{"one tolerated", []corev1.Taint{prefer("a"), prefer("b")},
			[]corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}, 50},
		{"all tolerated", []corev1.Taint{prefer("a")},
			[]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, 100},
	}
	for _, tt := range tests {
		n := testutil.MakeNode("n").Obj()
		n.Taints = tt.taints
		task := &framework.Task{Tolerations: tt.tolerations}
		if got := (tainttoleration.TaintToleration{}).ScoreNode(task, n); got != tt.want {
			t.Errorf("%s: score %g, want %g", tt.name, got, tt.want)
		}
	}
}
