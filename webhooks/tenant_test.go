package webhooks

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
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

// Queues' namespaceSelector and allowedPriorityClasses reach the policies as the Queue
// says: a workload from a namespace the selector does not select, or with a class the
// queue does not list, is denied; an invalid selector lets no namespace in.
func TestQueueAccess(t *testing.T) {
	queues := []tesserav1.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: tesserav1.QueueSpec{
			NamespaceSelector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"team": "a"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"scratch"}}},
			},
			AllowedPriorityClasses: []string{"batch-normal", "offline-low"},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: tesserav1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}},
		}}},
	}
	c, err := NewStaticCluster(queues, testNodes(), testClasses(),
		&Namespace{Name: "a", Labels: map[string]string{"team": "a"}},
		&Namespace{Name: "a-scratch", Labels: map[string]string{"team": "a", "tier": "scratch"}},
		&Namespace{Name: "b", Labels: map[string]string{"team": "b"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	mut := &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: defaultEngine(t), Cluster: c}
	admit := func(ns, queue, class string) *admissionv1.AdmissionResponse {
		p := guardPod(nil)
		p.Namespace, p.Labels, p.Spec.PriorityClassName = ns, map[string]string{tesserav1.LabelQueue: queue}, class
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"tessera.dev/gpu": resource.MustParse("1")}
		return mut.Admit(context.Background(), request(t, admissionv1.Create, p))
	}
	for _, c := range []struct {
		ns, queue, class, want string
	}{
		{"a", "team-a", "", ""},
		{"a", "team-a", "offline-low", ""},
		{"b", "team-a", "", `queue "team-a" does not take workloads from namespace "b"`},
		{"a-scratch", "team-a", "", `queue "team-a" does not take workloads from namespace "a-scratch"`},
		{"a", "team-a", "production-high", `priorityClassName "production-high" is not allowed in queue "team-a"`},
		{"a", "broken", "", `queue "broken" has an invalid spec.namespaceSelector`},
	} {
		resp := admit(c.ns, c.queue, c.class)
		switch {
		case c.want == "" && !resp.Allowed:
			t.Errorf("%s/%s/%s denied: %s", c.ns, c.queue, c.class, resp.Result.Message)
		case c.want != "" && (resp.Allowed || !strings.Contains(resp.Result.Message, c.want)):
			t.Errorf("%s/%s/%s: allowed %v %+v; want denied with %q", c.ns, c.queue, c.class, resp.Allowed, resp.Result, c.want)
		}
	}
	// The Queue itself: the invalid selector is named when the Queue is applied.
	_, val := handlers(t)
	q := queues[1].DeepCopy()
	q.TypeMeta = metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: KindQueue}
	resp := val.Admit(context.Background(), request(t, admissionv1.Create, q))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.namespaceSelector is invalid") {
		t.Errorf("Queue with an invalid selector: allowed %v %+v", resp.Allowed, resp.Result)
	}
}

// Pods that ask for no GPU are checked too: no hand placement on a GPU node (n1 has a
// GPUNode), no toleration of the GPU nodes' taint, and no priority class beyond the
// default queue's.
func TestCPUPodsChecked(t *testing.T) {
	mut := &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: defaultEngine(t), Cluster: testCluster(t)}
	cpu := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := guardPod(nil)
		p.Namespace = "plain"
		mod(p)
		return p
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want string // "": allowed
	}{
		{"plain", cpu(func(*corev1.Pod) {}), ""},
		{"nodeName on a GPU node", cpu(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), `spec.nodeName "n1" is a GPU node`},
		{"nodeName on another node", cpu(func(p *corev1.Pod) { p.Spec.NodeName = "cpu-1" }), ""},
		{"GPU taint tolerated", cpu(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
		}), "spec.tolerations[0] tolerates the GPU nodes' taint nvidia.com/gpu"},
		{"production-high", cpu(func(p *corev1.Pod) { p.Spec.PriorityClassName = "production-high" }),
			`priorityClassName "production-high" is not allowed in queue "default"`},
		{"the default class", cpu(func(p *corev1.Pod) { p.Spec.PriorityClassName = "batch-normal" }), ""},
	} {
		resp := mut.Admit(context.Background(), request(t, admissionv1.Create, c.pod))
		switch {
		case c.want == "" && !resp.Allowed:
			t.Errorf("%s: denied: %s", c.name, resp.Result.Message)
		case c.want != "" && (resp.Allowed || !strings.Contains(resp.Result.Message, c.want)):
			t.Errorf("%s: allowed %v %+v; want denied with %q", c.name, resp.Allowed, resp.Result, c.want)
		}
	}
	// The API server gives pods that name no class the globalDefault one before the
	// webhooks see them: it is allowed everywhere.
	global := *apitest.MakePriorityClass("cluster-normal", 10).Obj()
	global.GlobalDefault = true
	gc, err := NewStaticCluster(testQueues(), testNodes(), append(testClasses(), global))
	if err != nil {
		t.Fatal(err)
	}
	mut.Cluster = gc
	if resp := mut.Admit(context.Background(), request(t, admissionv1.Create, cpu(func(p *corev1.Pod) { p.Spec.PriorityClassName = "cluster-normal" }))); !resp.Allowed {
		t.Errorf("the globalDefault class: %+v", resp.Result)
	}
}
