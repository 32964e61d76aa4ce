package webhooks

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

const denyLabelled = `package tessera.nolabel

deny contains "pods labelled forbidden=true are not allowed" if input.workload.labels.forbidden == "true"

test_denied if count(deny) == 1 with input as {"workload": {"labels": {"forbidden": "true"}}}
`

func localFor(t *testing.T, policies ...tesserav1.AdmissionPolicy) *Local {
	t.Helper()
	l, err := NewLocal(context.Background(), policies, testCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func admissionPolicy(name, src string) tesserav1.AdmissionPolicy {
	return tesserav1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tesserav1.AdmissionPolicySpec{Targets: []tesserav1.AdmissionTarget{KindPod}, Rego: src}}
}

// A pod goes through the mutating webhook (defaults and validation in one evaluation)
// and comes back as the API server would store it.
func TestLocalAdmitsPodWithDefaults(t *testing.T) {
	pod := apitest.MakePod("trainer", "team").NvidiaGPU(2).Obj()
	pod.Spec.Containers[0].Resources.Requests = nil // limits only: no warning about missing limits
	warnings, err := localFor(t).Admit(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[tesserav1.LabelQueue] != "train" || pod.Spec.SchedulerName != tesserav1.SchedulerName ||
		pod.Spec.PriorityClassName != "batch-normal" || pod.Spec.Priority == nil || *pod.Spec.Priority != 50 {
		t.Errorf("admitted pod: labels %v schedulerName %q priorityClassName %q priority %v; want queue train, tessera, batch-normal, 50",
			pod.Labels, pod.Spec.SchedulerName, pod.Spec.PriorityClassName, pod.Spec.Priority)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %v, want none", warnings)
	}
}

// Rewrite namespaces opt into nvidia.com/gpu -> tessera.dev/gpu: the removed resource
// must be gone from the admitted pod, not merged back.
func TestLocalAppliesRemovals(t *testing.T) {
	pod := apitest.MakePod("trainer", "team").NvidiaGPU(1).Queue("train").Obj()
	pod.Namespace = "rewrite"
	if _, err := localFor(t).Admit(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	lim := pod.Spec.Containers[0].Resources.Limits
	if _, ok := lim[tesserav1.ResourceNvidiaGPU]; ok || !lim[tesserav1.ResourceGPU].Equal(resource.MustParse("1")) {
		t.Errorf("limits %v; want tessera.dev/gpu: 1 and no nvidia.com/gpu", lim)
	}
}

func TestLocalDenies(t *testing.T) {
	l := localFor(t, admissionPolicy("no-label", denyLabelled))
	tests := []struct {
		name string
		obj  runtime.Object
		want string
	}{
		{"unknown queue", apitest.MakePod("p", "team").NvidiaGPU(1).Queue("nope").Obj(), "nope"},
		{"GPU memory above the largest GPU", apitest.MakePod("p", "team").GPUMemory(90000).Queue("train").Obj(), "81920"},
		{"a user's policy", apitest.MakePod("p", "team").NvidiaGPU(1).Queue("train").Label("forbidden", "true").Obj(), "forbidden=true"},
		{"queue deserving more than its capability", apitest.MakeQueue("greedy").Weight(1).Deserved(tesserav1.ResourceGPU, "8").Capability(tesserav1.ResourceGPU, "4").Obj(), "capability"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Admit(context.Background(), tc.obj)
			var denied *DeniedError
			if !errors.As(err, &denied) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want a denial mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLocalRejectsBadPolicy(t *testing.T) {
	_, err := NewLocal(context.Background(), []tesserav1.AdmissionPolicy{admissionPolicy("broken", "package tessera.broken\n\ndeny contains msg if {\n")},
		testCluster(t))
	if err == nil || !strings.Contains(err.Error(), "admissionpolicy/broken.rego:") {
		t.Fatalf("err %v; want the compiler's file:row message", err)
	}
}

func TestLocalUnsupportedKind(t *testing.T) {
	if _, err := localFor(t).Admit(context.Background(), &corev1.ConfigMap{}); err == nil {
		t.Fatal("a ConfigMap was admitted")
	}
}

// An AdmissionPolicy named like a built-in does not silently replace it: without
// spec.replaceBuiltin it is rejected (and the built-in keeps denying oversized
// slices); with it, the built-in is replaced and a warning says so.
func TestBuiltinPoliciesReplacedOnlyOnPurpose(t *testing.T) {
	ctx := context.Background()
	lax := admissionPolicy("gpu", "package tessera.mygpu\n\nwarn contains \"checked\" if false\n")
	if _, err := NewLocal(ctx, []tesserav1.AdmissionPolicy{lax}, testCluster(t)); err == nil ||
		!strings.Contains(err.Error(), `AdmissionPolicy gpu: metadata.name: "gpu" is the name of a built-in policy; choose another name to add a policy, or set spec.replaceBuiltin: true`) {
		t.Fatalf("policy named like a built-in: %v", err)
	}
	stray := admissionPolicy("mine", "package tessera.mine\n")
	stray.Spec.ReplaceBuiltin = true
	if _, err := NewLocal(ctx, []tesserav1.AdmissionPolicy{stray}, testCluster(t)); err == nil ||
		!strings.Contains(err.Error(), `spec.replaceBuiltin: there is no built-in policy named "mine"; built-ins: queue, scheduler, priority, gang, gpu, queues`) {
		t.Fatalf("replaceBuiltin without a built-in: %v", err)
	}
	huge := func() *corev1.Pod {
		return apitest.MakePod("big", "team").GPUMemory(100000).Queue("train").Obj()
	}
	if _, err := localFor(t).Admit(ctx, huge()); err == nil || !strings.Contains(err.Error(), "largest GPU in the cluster") {
		t.Fatalf("built-in gpu policy: %v", err)
	}
	lax.Spec.ReplaceBuiltin = true
	l := localFor(t, lax)
	if len(l.Warnings) != 1 || l.Warnings[0] != "AdmissionPolicy gpu replaces the built-in policy gpu (spec.replaceBuiltin)" {
		t.Errorf("warnings %q", l.Warnings)
	}
	if _, err := l.Admit(ctx, huge()); err != nil {
		t.Errorf("with the built-in replaced on purpose: %v", err)
	}
}
