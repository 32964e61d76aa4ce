package webhooks

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tessera-gpu/tessera/policy"
)

// settingsCluster is testCluster's data with settings, as CachedCluster serves them.
func settingsCluster(t *testing.T, s Settings) *StaticCluster {
	t.Helper()
	doc, pcs := ClusterDoc(testQueues(), testNodes(), testClasses())
	doc["settings"] = s.doc()
	shared, err := policy.NewShared(doc)
	if err != nil {
		t.Fatal(err)
	}
	c := testCluster(t)
	c.Data = &Cluster{Shared: shared, PriorityClasses: pcs}
	return c
}

// The policies see the request's user and the pod's spec.nodeName: a GPU pod placed by
// hand is denied unless the scheduler's identity creates it; another schedulerName
// unless the operator allows it.
func TestTenantBypassesDenied(t *testing.T) {
	e := defaultEngine(t)
	c := settingsCluster(t, Settings{SchedulerUsers: []string{guardScheduler}, AllowedSchedulers: []string{"volcano"}})
	mut := &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: e, Cluster: c}
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := guardPod(nil)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"tessera.dev/gpu": resource.MustParse("1")}
		mod(p)
		return p
	}
	admit := func(p *corev1.Pod, user string) *admissionv1.AdmissionResponse {
		req := request(t, admissionv1.Create, p)
		req.UserInfo = authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}}
		return mut.Admit(context.Background(), req)
	}
	nodeName := pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1" })
	other := pod(func(p *corev1.Pod) { p.Spec.SchedulerName = "my-scheduler" })
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"nodeName", nodeName, `spec.nodeName is preset to "n1"`},
		{"schedulerName", other, `spec.schedulerName "my-scheduler"`},
	} {
		resp := admit(c.pod, guardTenant)
		if resp.Allowed || !strings.Contains(resp.Result.Message, c.want) {
			t.Errorf("%s by a tenant: allowed %v, %+v; want denied with %q", c.name, resp.Allowed, resp.Result, c.want)
		}
		if resp := admit(c.pod, guardScheduler); !resp.Allowed {
			t.Errorf("%s by the scheduler: %+v", c.name, resp.Result)
		}
	}
	if resp := admit(pod(func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }), guardTenant); !resp.Allowed {
		t.Errorf("allowed scheduler: %+v", resp.Result)
	}
}
