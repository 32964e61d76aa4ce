package autoscale_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/autoscale"
)

func pod(ns, name string, mut ...func(*corev1.Pod)) *corev1.Pod {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}, Annotations: map[string]string{},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: name, Controller: &yes}}}}
	for _, m := range mut {
		m(p)
	}
	return p
}

func annotate(k, v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Annotations[k] = v } }

func pdb(ns, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-pdb"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

func TestNodeBlocker(t *testing.T) {
	orphan := func(p *corev1.Pod) { p.OwnerReferences = nil }
	local := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	daemon := func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "DaemonSet" }
	node := func(k, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Annotations: map[string]string{k: v}}}
	}
	plain := node("x", "y")
	for _, tc := range []struct {
		name   string
		node   *corev1.Node
		pods   []*corev1.Pod
		pdbs   []*policyv1.PodDisruptionBudget
		reason string
		msg    string
	}{
		{"free", plain, []*corev1.Pod{pod("a", "web")}, nil, "", ""},
		{"scale-down disabled", node(autoscale.AnnotationScaleDownDisabled, "true"), nil, nil, autoscale.ReasonScaleDownDisabled, "node gpu-1 is annotated cluster-autoscaler.kubernetes.io/scale-down-disabled=true"},
		{"node do-not-disrupt", node(autoscale.AnnotationDoNotDisrupt, "true"), nil, nil, autoscale.ReasonDoNotDisrupt, "node gpu-1"},
		{"pod do-not-disrupt", plain, []*corev1.Pod{pod("a", "web", annotate(autoscale.AnnotationDoNotDisrupt, "true"))}, nil, autoscale.ReasonDoNotDisrupt, "pod a/web"},
		{"not safe to evict", plain, []*corev1.Pod{pod("a", "web", annotate(autoscale.AnnotationSafeToEvict, "false"))}, nil, autoscale.ReasonNotSafeToEvict, "pod a/web"},
		{"on completion", plain, []*corev1.Pod{pod("a", "web", annotate(autoscale.AnnotationSafeToEvict, "on-completion"))}, nil, autoscale.ReasonRunningToEnd, "waiting for it to finish"},
		{"on completion, finished", plain, []*corev1.Pod{pod("a", "web", annotate(autoscale.AnnotationSafeToEvict, "on-completion"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}, nil, "", ""},
		{"no controller", plain, []*corev1.Pod{pod("a", "web", orphan)}, nil, autoscale.ReasonNoController, "pod a/web has no controller"},
		{"no controller, safe", plain, []*corev1.Pod{pod("a", "web", orphan, annotate(autoscale.AnnotationSafeToEvict, "true"))}, nil, "", ""},
		{"local storage", plain, []*corev1.Pod{pod("a", "web", local)}, nil, autoscale.ReasonLocalStorage, "volume scratch"},
		{"local storage, safe", plain, []*corev1.Pod{pod("a", "web", local, annotate(autoscale.AnnotationSafeToEvict, "true"))}, nil, "", ""},
		{"kube-system without PDB", plain, []*corev1.Pod{pod("kube-system", "dns")}, nil, autoscale.ReasonKubeSystem, "kube-system/dns"},
		{"kube-system with PDB", plain, []*corev1.Pod{pod("kube-system", "dns")}, []*policyv1.PodDisruptionBudget{pdb("kube-system", "dns", 1)}, "", ""},
		{"daemonset ignored", plain, []*corev1.Pod{pod("kube-system", "agent", daemon)}, nil, "", ""},
		{"PDB exhausted", plain, []*corev1.Pod{pod("a", "web")}, []*policyv1.PodDisruptionBudget{pdb("a", "web", 0)}, autoscale.ReasonPDB, "PodDisruptionBudget a/web-pdb allows 0 disruptions; draining needs 1"},
		{"PDB too small for two", plain, []*corev1.Pod{pod("a", "web"), pod("a", "web2", func(p *corev1.Pod) { p.Labels["app"] = "web" })}, []*policyv1.PodDisruptionBudget{pdb("a", "web", 1)}, autoscale.ReasonPDB, "draining needs 2"},
		{"PDB of another namespace", plain, []*corev1.Pod{pod("a", "web")}, []*policyv1.PodDisruptionBudget{pdb("b", "web", 0)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := autoscale.NodeBlocker(tc.node, tc.pods, tc.pdbs)
			if tc.reason == "" {
				if b != nil {
					t.Fatalf("blocked: %+v", b)
				}
				return
			}
			if b == nil || b.Reason != tc.reason || !strings.Contains(b.Message, tc.msg) {
				t.Fatalf("got %+v, want %s containing %q", b, tc.reason, tc.msg)
			}
		})
	}
}
