package autoscale_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

// pod is a pod labelled app=<name> whose controller is Job <name>.
func pod(ns, name string) *apitest.PodWrapper {
	return apitest.MakePod(name, ns).Label("app", name).ControlledBy("Job", name)
}

func pdb(ns, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return apitest.MakePDB(app+"-pdb", ns).MatchLabel("app", app).DisruptionsAllowed(allowed).Obj()
}

func TestNodeBlocker(t *testing.T) {
	orphan := func() *apitest.PodWrapper { return apitest.MakePod("web", "a").Label("app", "web") }
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	node := func(k, v string) *corev1.Node { return apitest.MakeNode("gpu-1").Annotation(k, v).Obj() }
	plain := node("x", "y")
	for _, tc := range []struct {
		name   string
		node   *corev1.Node
		pods   []*corev1.Pod
		pdbs   []*policyv1.PodDisruptionBudget
		reason string
		msg    string
	}{
		{"free", plain, []*corev1.Pod{pod("a", "web").Obj()}, nil, "", ""},
		{"scale-down disabled", node(autoscale.AnnotationScaleDownDisabled, "true"), nil, nil, autoscale.ReasonScaleDownDisabled, "node gpu-1 is annotated cluster-autoscaler.kubernetes.io/scale-down-disabled=true"},
		{"node do-not-disrupt", node(autoscale.AnnotationDoNotDisrupt, "true"), nil, nil, autoscale.ReasonDoNotDisrupt, "node gpu-1"},
		{"pod do-not-disrupt", plain, []*corev1.Pod{pod("a", "web").Annotation(autoscale.AnnotationDoNotDisrupt, "true").Obj()}, nil, autoscale.ReasonDoNotDisrupt, "pod a/web"},
		{"not safe to evict", plain, []*corev1.Pod{pod("a", "web").Annotation(autoscale.AnnotationSafeToEvict, "false").Obj()}, nil, autoscale.ReasonNotSafeToEvict, "pod a/web"},
		{"on completion", plain, []*corev1.Pod{pod("a", "web").Annotation(autoscale.AnnotationSafeToEvict, "on-completion").Obj()}, nil, autoscale.ReasonRunningToEnd, "waiting for it to finish"},
		{"on completion, finished", plain, []*corev1.Pod{pod("a", "web").Annotation(autoscale.AnnotationSafeToEvict, "on-completion").Phase(corev1.PodSucceeded).Obj()}, nil, "", ""},
		{"no controller", plain, []*corev1.Pod{orphan().Obj()}, nil, autoscale.ReasonNoController, "pod a/web has no controller"},
		{"no controller, safe", plain, []*corev1.Pod{orphan().Annotation(autoscale.AnnotationSafeToEvict, "true").Obj()}, nil, "", ""},
		{"local storage", plain, []*corev1.Pod{pod("a", "web").Volume(scratch).Obj()}, nil, autoscale.ReasonLocalStorage, "volume scratch"},
		{"local storage, safe", plain, []*corev1.Pod{pod("a", "web").Volume(scratch).Annotation(autoscale.AnnotationSafeToEvict, "true").Obj()}, nil, "", ""},
		{"kube-system without PDB", plain, []*corev1.Pod{pod("kube-system", "dns").Obj()}, nil, autoscale.ReasonKubeSystem, "kube-system/dns"},
		{"kube-system with PDB", plain, []*corev1.Pod{pod("kube-system", "dns").Obj()}, []*policyv1.PodDisruptionBudget{pdb("kube-system", "dns", 1)}, "", ""},
		{"daemonset ignored", plain, []*corev1.Pod{apitest.MakePod("agent", "kube-system").Label("app", "agent").ControlledBy("DaemonSet", "agent").Obj()}, nil, "", ""},
		{"PDB exhausted", plain, []*corev1.Pod{pod("a", "web").Obj()}, []*policyv1.PodDisruptionBudget{pdb("a", "web", 0)}, autoscale.ReasonPDB, "PodDisruptionBudget a/web-pdb allows 0 disruptions; draining needs 1"},
		{"PDB too small for two", plain, []*corev1.Pod{pod("a", "web").Obj(), pod("a", "web2").Label("app", "web").Obj()}, []*policyv1.PodDisruptionBudget{pdb("a", "web", 1)}, autoscale.ReasonPDB, "draining needs 2"},
		{"PDB of another namespace", plain, []*corev1.Pod{pod("a", "web").Obj()}, []*policyv1.PodDisruptionBudget{pdb("b", "web", 0)}, "", ""},
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
