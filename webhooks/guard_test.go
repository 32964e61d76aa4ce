package webhooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

const (
	guardTenant    = "system:serviceaccount:team:tenant"
	guardScheduler = "system:serviceaccount:tessera-system:tessera-scheduler"
)

func guardPod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func rawOf(t testing.TB, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func guardRequest(t testing.TB, kind string, op admissionv1.Operation, user string, obj, old any) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "u", Kind: gvk(kind), Operation: op, Namespace: "team", Name: "p",
		UserInfo: authenticationv1.UserInfo{Username: user}, Object: rawOf(t, obj)}
	if kind == KindBinding {
		req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: KindBinding}
		req.SubResource = "binding"
	}
	if old != nil {
		req.OldObject = rawOf(t, old)
	}
	return req
}

func TestStateGuard(t *testing.T) {
	g := &StateGuard{Users: []string{guardScheduler}}
	forged := tesserav1.GPUAssignment{Node: "n1", Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{"GPU-other-team"}}}}.Encode()
	mine := map[string]string{tesserav1.AnnotationGPUAssign: forged}
	other := map[string]string{tesserav1.AnnotationGPUAssign: strings.Replace(forged, "other-team", "x", 1)}
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: mine}}}}
	binding := func(ann map[string]string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", Annotations: ann},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	}
	cases := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want []string // substrings of the denial; nil: allowed
	}{
		{"pod create forged", guardRequest(t, KindPod, admissionv1.Create, guardTenant, guardPod(mine), nil),
			[]string{"metadata.annotations[tessera.dev/gpu-assignment]", guardScheduler, `user "` + guardTenant + `" may not set it`, "remove it"}},
		{"pod create plain", guardRequest(t, KindPod, admissionv1.Create, guardTenant, guardPod(map[string]string{"a": "b"}), nil), nil},
		{"pod create by the scheduler", guardRequest(t, KindPod, admissionv1.Create, guardScheduler, guardPod(mine), nil), nil},
		{"pod update adds", guardRequest(t, KindPod, admissionv1.Update, guardTenant, guardPod(mine), guardPod(nil)),
			[]string{"may not add, change or remove it", "leave it as the scheduler wrote it"}},
		{"pod update changes", guardRequest(t, KindPod, admissionv1.Update, guardTenant, guardPod(other), guardPod(mine)),
			[]string{"metadata.annotations[tessera.dev/gpu-assignment]"}},
		{"pod update removes", guardRequest(t, KindPod, admissionv1.Update, guardTenant, guardPod(map[string]string{"a": "b"}), guardPod(mine)),
			[]string{"metadata.annotations[tessera.dev/gpu-assignment]"}},
		{"pod update leaves it", guardRequest(t, KindPod, admissionv1.Update, guardTenant, guardPod(map[string]string{tesserav1.AnnotationGPUAssign: forged, "a": "b"}), guardPod(mine)), nil},
		{"pod update by the scheduler", guardRequest(t, KindPod, admissionv1.Update, guardScheduler, guardPod(other), guardPod(mine)), nil},
		{"job template forged", guardRequest(t, KindJob, admissionv1.Create, guardTenant, job, nil),
			[]string{"spec.template.metadata.annotations[tessera.dev/gpu-assignment]"}},
		{"binding forged", guardRequest(t, KindBinding, admissionv1.Create, guardTenant, binding(mine), nil),
			[]string{"the Binding's metadata.annotations[tessera.dev/gpu-assignment]", "bind without Tessera's annotations"}},
		{"binding plain", guardRequest(t, KindBinding, admissionv1.Create, guardTenant, binding(nil), nil), nil},
		{"binding by the scheduler", guardRequest(t, KindBinding, admissionv1.Create, guardScheduler, binding(mine), nil), nil},
		{"pod group ignored", guardRequest(t, KindPodGroup, admissionv1.Create, guardTenant, guardPod(mine), nil), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGuard(t, g, c.req, c.want) })
	}
	if msg := (&StateGuard{}).Check(guardRequest(t, KindPod, admissionv1.Create, guardScheduler, guardPod(mine), nil)); msg == "" {
		t.Error("a guard without users let somebody write scheduling state")
	}
}

// checkGuard checks that g refuses req with a message holding every want, or lets it
// through when want is nil.
func checkGuard(t *testing.T, g Guard, req *admissionv1.AdmissionRequest, want []string) {
	t.Helper()
	got := g.Check(req)
	if want == nil {
		if got != "" {
			t.Fatalf("denied: %s", got)
		}
		return
	}
	if got == "" {
		t.Fatal("allowed")
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("denial %q does not contain %q", got, w)
		}
	}
}

// The guard runs before the policies, in both handlers, and counts its denials.
func TestHandlerGuard(t *testing.T) {
	mut, val := handlers(t)
	m := NewMetrics(nil)
	for _, h := range []*Handler{mut, val} {
		h.Guards, h.Metrics = []Guard{&StateGuard{Users: []string{guardScheduler}}, EnvGuard{}, ImmutableGuard{}}, m
	}
	forged := map[string]string{tesserav1.AnnotationGPUAssign: `{"node":"n1","containers":[{"container":"main","uuids":["GPU-1"]}]}`}
	resp := mut.Admit(context.Background(), guardRequest(t, KindPod, admissionv1.Create, guardTenant, guardPod(forged), nil))
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "denied by Tessera: metadata.annotations[tessera.dev/gpu-assignment]") {
		t.Fatalf("forged create: %+v", resp.Result)
	}
	resp = val.Admit(context.Background(), guardRequest(t, KindPod, admissionv1.Update, guardTenant, guardPod(forged), guardPod(nil)))
	if resp.Allowed {
		t.Fatal("forged update allowed")
	}
	resp = val.Admit(context.Background(), guardRequest(t, KindPod, admissionv1.Update, guardTenant, guardPod(map[string]string{"x": "y"}), guardPod(nil)))
	if !resp.Allowed {
		t.Fatalf("plain update denied: %+v", resp.Result)
	}
	if n := testutil.ToFloat64(m.requests.WithLabelValues("UPDATE", KindPod, ResultDenied)); n != 1 {
		t.Errorf("denied pod updates counted %v, want 1", n)
	}
}

// The shipped ValidatingWebhookConfiguration sends the webhook every pod update and
// Binding that touches scheduling state, from anybody but the scheduler: its match
// conditions name every key the guard protects and the scheduler's user.
func TestWebhookConfigurationCoversSchedulingState(t *testing.T) {
	hook := shippedWebhook(t, "scheduling-state.tessera.dev", "UPDATE pods,CREATE pods/binding")
	exprs := matchExpressions(hook)
	if !strings.Contains(exprs, `"`+SchedulerUser(DefaultNamespace)+`"`) {
		t.Errorf("match conditions do not exempt the scheduler %s:\n%s", SchedulerUser(DefaultNamespace), exprs)
	}
	for _, key := range tesserav1.SchedulingStateAnnotations {
		if strings.Count(exprs, `"`+key+`"`) != 2 {
			t.Errorf("match conditions do not name %s for both pod updates and Bindings:\n%s", key, exprs)
		}
	}
}

// The shipped ValidatingWebhookConfiguration sends the webhook every update of a pod,
// Job or custom workload that changes a key of ChargeKeys, or a pod's owners, and every create or spec update of the pod
// templates the EnvGuard reads (Jobs go to both webhooks; Pods on create to the mutating one).
func TestWebhookConfigurationCoversImmutableKeysAndTemplates(t *testing.T) {
	exprs := matchExpressions(shippedWebhook(t, "immutable.tessera.dev", "UPDATE pods,UPDATE jobs,UPDATE jobsets,"+
		"UPDATE rayclusters,UPDATE rayjobs,UPDATE leaderworkersets,UPDATE pytorchjobs,UPDATE mpijobs,UPDATE mpijobs"))
	for _, key := range ChargeKeys {
		if !strings.Contains(exprs, `"`+key+`"`) {
			t.Errorf("match conditions do not name %s:\n%s", key, exprs)
		}
	}
	if !strings.Contains(exprs, "ownerReferences") {
		t.Errorf("match conditions do not compare ownerReferences:\n%s", exprs)
	}
	shippedWebhook(t, "pod-templates.tessera.dev", "CREATE deployments,UPDATE deployments,CREATE statefulsets,UPDATE statefulsets,"+
		"CREATE daemonsets,UPDATE daemonsets,CREATE cronjobs,UPDATE cronjobs,CREATE jobsets,UPDATE jobsets,"+
		"CREATE rayclusters,UPDATE rayclusters,CREATE rayjobs,UPDATE rayjobs,CREATE leaderworkersets,UPDATE leaderworkersets,"+
		"CREATE pytorchjobs,UPDATE pytorchjobs,CREATE mpijobs,UPDATE mpijobs,CREATE mpijobs,UPDATE mpijobs,UPDATE pods/ephemeralcontainers")
	if len(podTemplates) != 12 {
		t.Errorf("the EnvGuard reads %d template kinds; send the new ones to pod-templates.tessera.dev", len(podTemplates))
	}
}

// shippedConfigs are the kustomize base's webhook configurations.
func shippedConfigs(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "kustomize", "base", "webhook", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	for _, doc := range strings.Split(string(b), "\n---") {
		var err error
		switch {
		case strings.Contains(doc, "kind: MutatingWebhookConfiguration"):
			err = yaml.UnmarshalStrict([]byte(doc), &m)
		case strings.Contains(doc, "kind: ValidatingWebhookConfiguration"):
			err = yaml.UnmarshalStrict([]byte(doc), &v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &m, &v
}

// shippedWebhook is the kustomize base's validating webhook name; its rules must cover
// exactly rules ("OPERATION resource", in order) and it must fail closed.
func shippedWebhook(t *testing.T, name, rules string) *admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	_, c := shippedConfigs(t)
	var hook *admissionregistrationv1.ValidatingWebhook
	for i := range c.Webhooks {
		if c.Webhooks[i].Name == name {
			hook = &c.Webhooks[i]
		}
	}
	if hook == nil {
		t.Fatalf("no webhook %s in the kustomize base", name)
	}
	var covered []string
	for _, r := range hook.Rules {
		for _, res := range r.Resources {
			for _, op := range r.Operations {
				covered = append(covered, string(op)+" "+res)
			}
		}
	}
	if got := strings.Join(covered, ","); got != rules {
		t.Errorf("%s: rules cover %s, want %s", name, got, rules)
	}
	if hook.FailurePolicy == nil || *hook.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy is not Fail: an unavailable webhook would let what it refuses through", name)
	}
	return hook
}

func matchExpressions(hook *admissionregistrationv1.ValidatingWebhook) string {
	var exprs string
	for _, c := range hook.MatchConditions {
		exprs += c.Expression + "\n"
	}
	return exprs
}

// wantRefusal checks a guard's answer: allowed when want is nil, else refused with a
// message naming every string of want.
func wantRefusal(t *testing.T, name, got string, want []string) {
	t.Helper()
	switch {
	case want == nil && got != "":
		t.Errorf("%s: refused: %s", name, got)
	case want != nil && got == "":
		t.Errorf("%s: allowed, want refused", name)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not name %q", name, got, w)
		}
	}
}
