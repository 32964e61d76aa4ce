package webhooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPlacementGuard(t *testing.T) {
	g := &PlacementGuard{Users: []string{guardScheduler}, Cluster: testCluster(t)} // n1 is a GPU node
	pod := func(gpus int64, mod func(*corev1.PodSpec)) *corev1.Pod {
		p := guardPod(nil)
		if gpus > 0 {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"tessera.dev/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
		}
		mod(&p.Spec)
		return p
	}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	gpuTaint := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	tolerate := func(ts ...corev1.Toleration) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.Tolerations = append(s.Tolerations, ts...) }
	}
	gated := func(s *corev1.PodSpec) {
		s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		s.NodeSelector = map[string]string{"pool": "cpu"}
	}
	onNode := func(key, n string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			gated(s)
			if key == "" {
				s.NodeSelector[corev1.LabelHostname] = n
				return
			}
			req := corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{"cpu-1", n}}
			term := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}}
			if key == "metadata.name" {
				term = corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req}}
			}
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}}
		}
	}
	plain := func(*corev1.PodSpec) {}
	for _, c := range []struct {
		name       string
		now, old   *corev1.Pod
		user       string
		want       []string // nil: allowed
		createOnly bool
	}{
		{"CPU pod tolerates every taint", pod(0, tolerate(everything)), pod(0, plain), guardTenant,
			[]string{"spec.tolerations[0] tolerates every taint, the GPU nodes' among them", "remove the toleration", "changing tolerations"}, false},
		{"CPU pod tolerates the GPU taint", pod(0, tolerate(notReady, gpuTaint)), pod(0, tolerate(notReady)), guardTenant,
			[]string{"spec.tolerations[1] tolerates the GPU nodes' taint nvidia.com/gpu"}, false},
		{"CPU pod tolerates another taint", pod(0, tolerate(notReady)), pod(0, plain), guardTenant, nil, false},
		{"GPU pod tolerates every taint", pod(1, tolerate(everything)), pod(1, plain), guardTenant,
			[]string{"spec.tolerations[0] tolerates every taint: it may not be added to a pod after the pod is created"}, false},
		{"GPU pod tolerates the GPU taint", pod(1, tolerate(gpuTaint)), pod(1, plain), guardTenant, nil, false},
		{"GPU pod keeps the toleration it was created with", pod(1, tolerate(everything, notReady)), pod(1, tolerate(everything)), guardTenant, nil, false},
		{"by the scheduler", pod(0, tolerate(everything)), pod(0, plain), guardScheduler, nil, false},
		{"gated CPU pod pointed at a GPU node", pod(0, onNode("", "n1")), pod(0, gated), guardTenant,
			[]string{`spec.nodeSelector[kubernetes.io/hostname] "n1" is a GPU node`, "select nodes without GPUs", "changing nodeSelector"}, false},
		{"gated CPU pod given affinity to a GPU node", pod(0, onNode(corev1.LabelHostname, "n1")), pod(0, gated), guardTenant,
			[]string{`nodeSelectorTerms[0].matchExpressions[0] selects "n1", a GPU node`}, false},
		{"gated CPU pod given a field affinity to a GPU node", pod(0, onNode("metadata.name", "n1")), pod(0, gated), guardTenant,
			[]string{`nodeSelectorTerms[0].matchFields[0] selects "n1", a GPU node`}, false},
		{"gated CPU pod pointed at a CPU node", pod(0, onNode("", "cpu-1")), pod(0, gated), guardTenant, nil, false},
		{"gated GPU pod pointed at a GPU node", pod(1, onNode("", "n1")), pod(1, gated), guardTenant, nil, false},
		{"gates removed", pod(0, func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"pool": "cpu"} }), pod(0, gated), guardTenant, nil, false},
		{"labels changed", func() *corev1.Pod { p := pod(0, onNode("", "n1")); p.Labels = map[string]string{"a": "b"}; return p }(),
			pod(0, onNode("", "n1")), guardTenant, nil, false},
		{"create", pod(0, tolerate(everything)), nil, guardTenant, nil, true},
	} {
		op := admissionv1.Update
		if c.createOnly {
			op = admissionv1.Create
		}
		req := guardRequest(t, KindPod, op, c.user, c.now, c.old)
		wantRefusal(t, c.name, g.Check(req), c.want)
	}
	// Subresources are not pod updates of the spec; kubelets are exempt.
	req := guardRequest(t, KindPod, admissionv1.Update, guardTenant, pod(0, tolerate(everything)), pod(0, plain))
	req.SubResource = "status"
	if msg := g.Check(req); msg != "" {
		t.Errorf("status update refused: %s", msg)
	}
	req.SubResource = ""
	req.UserInfo = authenticationv1.UserInfo{Username: "system:node:n1", Groups: []string{"system:nodes"}}
	if msg := g.Check(req); msg != "" {
		t.Errorf("kubelet refused: %s", msg)
	}
}

// The guard's GPU taints are the policies' (lib.gpu_taints) and its rule reads the same.
func TestPlacementGuardMatchesPolicy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "rego", "policies", "lib.rego"))
	if err != nil {
		t.Fatal(err)
	}
	want := `gpu_taints := {"` + strings.Join(GPUTaints, `", "`) + `"}`
	if !strings.Contains(string(b), want) {
		t.Errorf("rego/policies/lib.rego does not say %s", want)
	}
}

// The shipped configuration sends pod updates that change a placement field, but not the
// scheduler's, to the guard.
func TestWebhookConfigurationCoversPlacement(t *testing.T) {
	exprs := matchExpressions(shippedWebhook(t, "placement.tessera.dev", "UPDATE pods"))
	for _, f := range PlacementFields {
		if !strings.Contains(exprs, "object.spec.?"+f) || !strings.Contains(exprs, "oldObject.spec.?"+f) {
			t.Errorf("match conditions do not compare spec.%s:\n%s", f, exprs)
		}
	}
	if !strings.Contains(exprs, `"`+SchedulerUser(DefaultNamespace)+`"`) {
		t.Errorf("match conditions do not exempt the scheduler:\n%s", exprs)
	}
}
