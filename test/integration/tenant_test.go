package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	authorizationv1 "k8s.io/api/authorization/v1"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The tenant tests run against their own API server: the webhook configurations,
// priority classes and scheduler RBAC of the kustomize base (rendered from the chart),
// and Tessera's webhook served from this process. They act as a tenant — the
// ServiceAccount tenant in namespace tenant-a, allowed by RBAC to create and update
// what tenants get there in practice (tenantRules) and nothing else — and as the
// scheduler's ServiceAccount, through impersonation.
const (
	tenantNS         = "tenant-a"
	tenantUser       = "system:serviceaccount:" + tenantNS + ":tenant"
	tessNS           = webhooks.DefaultNamespace
	otherScheduler   = "other-scheduler"
	allowedScheduler = "batch-scheduler" // the webhook is told to allow it
)

var (
	tenantOnce sync.Once
	tenantE    *testenv.Env
	tenantErr  error
	tenantStop func()
	tenantWH   *webhooks.Webhooks
)

// stopTenantEnv ends the tenant tests' API server and webhook (TestMain).
func stopTenantEnv() {
	if tenantStop != nil {
		tenantStop()
	}
}

func tenantEnv(t *testing.T) *testenv.Env {
	t.Helper()
	tenantOnce.Do(func() { tenantE, tenantErr = startTenantEnv() })
	if tenantErr != nil {
		testenv.SkipOrFail(t, tenantErr)
	}
	return tenantE
}

// tenantRules are what a tenant gets in its namespace in practice (much of the
// cluster's edit role): its workloads of every kind, their pods with ephemeral
// containers, ConfigMaps, disruption budgets and resource claims, all with update and
// patch; never a status subresource.
var tenantRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers", "configmaps"}, Verbs: tenantVerbs},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: tenantVerbs},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: tenantVerbs},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: tenantVerbs},
	{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: tenantVerbs},
	{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters", "rayjobs"}, Verbs: tenantVerbs},
	{APIGroups: []string{"leaderworkerset.x-k8s.io"}, Resources: []string{"leaderworkersets"}, Verbs: tenantVerbs},
	{APIGroups: []string{"kubeflow.org"}, Resources: []string{"pytorchjobs", "mpijobs"}, Verbs: tenantVerbs},
	{APIGroups: []string{tesserav1.GroupVersion.Group}, Resources: []string{"podgroups"}, Verbs: tenantVerbs},
	{APIGroups: []string{resourcev1.GroupName}, Resources: []string{"resourceclaims", "resourceclaimtemplates"}, Verbs: tenantVerbs},
}

var tenantVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

func startTenantEnv() (*testenv.Env, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(root, "deploy", "kustomize", "base")
	opts, err := webhookOptions(filepath.Join(base, "webhook", "webhooks.yaml"))
	if err != nil {
		return nil, err
	}
	e, err := testenv.New(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	tenantStop = func() { cancel(); _ = e.Stop() }
	fail := func(err error) (*testenv.Env, error) { tenantStop(); tenantStop = nil; return nil, err }

	wh, err := serveWebhooks(ctx, e, webhooks.Options{AllowedSchedulers: []string{allowedScheduler}})
	if err != nil {
		return fail(err)
	}
	tenantWH = wh

	// Tessera's namespace with the scheduler's ServiceAccount and RBAC, the priority
	// classes, and the tenant's namespace, ServiceAccount and Role.
	c := e.Client
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: tessNS}},
		{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{"team": "a"}}},
	} {
		if err := c.Create(ctx, ns); err != nil {
			return fail(err)
		}
	}
	if err := e.Apply(ctx, filepath.Join(base, "scheduler", "rbac.yaml"), filepath.Join(base, "priorityclasses.yaml")); err != nil {
		return fail(err)
	}
	for _, o := range tenantAccess(tenantNS) {
		if err := c.Create(ctx, o); err != nil {
			return fail(err)
		}
	}

	if err := waitWebhook(ctx, e, wh); err != nil {
		return fail(err)
	}
	return e, nil
}

// serveWebhooks serves Tessera's webhooks, set up with opts, on e's local webhook server
// until ctx ends.
func serveWebhooks(ctx context.Context, e *testenv.Env, opts webhooks.Options) (*webhooks.Webhooks, error) {
	mgr, err := e.WebhookManager(e.Webhook)
	if err != nil {
		return nil, err
	}
	wh, err := webhooks.Setup(ctx, mgr, opts)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "webhook manager:", err)
		}
	}()
	return wh, nil
}

// webhookOptions reads the webhook configurations of the kustomize base; envtest points
// them at the local webhook server.
func webhookOptions(path string) (testenv.Options, error) {
	var opts testenv.Options
	b, err := os.ReadFile(path)
	if err != nil {
		return opts, err
	}
	for _, d := range strings.Split(string(b), "\n---") {
		switch {
		case strings.Contains(d, "kind: MutatingWebhookConfiguration"):
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict([]byte(d), &c); err != nil {
				return opts, err
			}
			opts.Webhooks = append(opts.Webhooks, &c)
		case strings.Contains(d, "kind: ValidatingWebhookConfiguration"):
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict([]byte(d), &c); err != nil {
				return opts, err
			}
			opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, &c)
		}
	}
	return opts, nil
}

// waitWebhook waits until the webhook serves TLS and its informers know the priority
// classes.
func waitWebhook(ctx context.Context, e *testenv.Env, wh *webhooks.Webhooks) error {
	deadline := time.Now().Add(60 * time.Second)
	addr := net.JoinHostPort(e.Webhook.LocalServingHost, strconv.Itoa(e.Webhook.LocalServingPort))
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness probe only
		if err == nil {
			_ = conn.Close()
			wh.Cluster.Invalidate()
			var cl *webhooks.Cluster
			if cl, err = wh.Cluster.Cluster(ctx); err == nil && len(cl.PriorityClasses) < 3 {
				err = fmt.Errorf("the webhook knows %d priority classes", len(cl.PriorityClasses))
			}
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook not ready: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tenantAccess are the ServiceAccount tenant of namespace ns, a Role of tenantRules and
// its binding.
func tenantAccess(ns string) []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: tenantRules},
		roleBinding(ns, "tenant", "tenant", rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}),
	}
}

func roleBinding(ns, name, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}

// as is a client that acts as the ServiceAccount user (the API server checks its RBAC
// and the webhook sees it as the request's user).
func as(t *testing.T, e *testenv.Env, user string) client.Client {
	t.Helper()
	c, err := client.New(e.ServiceAccountConfig(user, nil), client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func asTenant(t *testing.T, e *testenv.Env) client.Client { return as(t, e, tenantUser) }

func asScheduler(t *testing.T, e *testenv.Env) client.Client {
	return as(t, e, webhooks.SchedulerUser(tessNS))
}

// grantScheduler lets the scheduler's ServiceAccount create and update pods in the
// tenant's namespace. The chart never grants that (the scheduler only binds); the tests
// use it to show that the webhook lets the scheduler's identity do what it refuses the
// tenant.
func grantScheduler(t *testing.T, e *testenv.Env) {
	t.Helper()
	ctx := testenv.Context(t, 10*time.Second)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "test-scheduler-writes-pods"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "update", "patch", "delete"}},
	}}
	rb := roleBinding(tenantNS, role.Name, role.Name, rbacv1.Subject{Kind: "ServiceAccount", Namespace: tessNS, Name: webhooks.SchedulerServiceAccount})
	for _, o := range []client.Object{role, rb} {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	awaitAllowed(ctx, t, e, "system:serviceaccount:"+tessNS+":"+webhooks.SchedulerServiceAccount,
		authorizationv1.ResourceAttributes{Namespace: tenantNS, Verb: "create", Resource: "pods"})
}

// awaitAllowed waits until the API server allows user what attrs say. Its RBAC
// authorizer learns of new bindings from its informers, a moment after they are written.
func awaitAllowed(ctx context.Context, t *testing.T, e *testenv.Env, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
	for !review.Status.Allowed {
		review.Status = authorizationv1.SubjectAccessReviewStatus{}
		review.ResourceVersion, review.Name = "", ""
		if err := e.Client.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		if !review.Status.Allowed {
			select {
			case <-ctx.Done():
				t.Fatalf("%s is never allowed to %s %s/%s", user, attrs.Verb, attrs.Resource, attrs.Subresource)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// tenantPod is a one-container pod in the tenant's namespace asking for gpus whole GPUs.
func tenantPod(name string, gpus int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{tesserav1.ResourceGPU: q}
	}
	return p
}

// forgedAssignment names GPUs of another team on node n1.
func forgedAssignment() string {
	return tesserav1.GPUAssignment{Node: "n1", Containers: []tesserav1.ContainerGPUs{
		{Container: "main", UUIDs: []string{"GPU-of-another-team"}, MemoryMiB: 40960},
	}}.Encode()
}

func withAnnotation(p *corev1.Pod, k, v string) *corev1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

// refused checks that err is the API server's refusal carrying every want.
func refused(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: allowed, want refused", what)
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want a Forbidden refusal", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: refusal %q does not name %q", what, err, w)
		}
	}
	t.Logf("%s: %v", what, err)
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// bind binds the pod to node as c, carrying annotations, as the scheduler's binder does.
func bind(ctx context.Context, c client.Client, pod *corev1.Pod, node string, annotations map[string]string) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: annotations},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	return c.SubResource("binding").Create(ctx, pod, b)
}

func get(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	var got corev1.Pod
	must(t, "get pod", c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, &got))
	return &got
}

// TestTenantForgedAssignmentOnCreate: a tenant's pod created with its own
// tessera.dev/gpu-assignment (naming another team's GPU) is refused, as is a Job whose
// pod template carries one; the scheduler's identity may write the annotation, and does
// so when it binds a pod.
func TestTenantForgedAssignmentOnCreate(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant, sched := asTenant(t, e), asScheduler(t, e)

	pod := withAnnotation(tenantPod("forged-create", 1), tesserav1.AnnotationGPUAssign, forgedAssignment())
	refused(t, "tenant pod with its own GPU assignment", tenant.Create(ctx, pod),
		"metadata.annotations[tessera.dev/gpu-assignment]", "only the tessera scheduler", tenantUser, "remove it")
	marked := withAnnotation(tenantPod("forged-marker", 1), tesserav1.AnnotationBoundPodUID, "guessed")
	refused(t, "tenant pod with the scheduler's binding marker", tenant.Create(ctx, marked),
		"metadata.annotations[tessera.dev/bound-pod-uid]")

	// The same pod without the annotation is admitted; the scheduler binds it with the
	// assignment, through the Binding its RBAC allows.
	pod = tenantPod("plain-create", 1)
	must(t, "tenant pod without an assignment", tenant.Create(ctx, pod))
	assignment := tesserav1.GPUAssignment{Node: "n1", Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{"GPU-1"}}}}.Encode()
	must(t, "scheduler binds with the assignment", bind(ctx, sched, pod, "n1", map[string]string{
		tesserav1.AnnotationGPUAssign: assignment, tesserav1.AnnotationBoundPodUID: string(pod.UID)}))
	if got := get(ctx, t, e.Client, pod); got.Annotations[tesserav1.AnnotationGPUAssign] != assignment || got.Spec.NodeName != "n1" ||
		got.Annotations[tesserav1.AnnotationBoundPodUID] != string(got.UID) {
		t.Errorf("bound pod: node %q annotations %v", got.Spec.NodeName, got.Annotations)
	}

	// The scheduler's identity passes the webhook with the annotation on create too.
	grantScheduler(t, e)
	byScheduler := withAnnotation(tenantPod("scheduler-create", 1), tesserav1.AnnotationGPUAssign, assignment)
	must(t, "scheduler creates a pod with an assignment", sched.Create(ctx, byScheduler))
}

// TestTenantForgedAssignmentInJobTemplate: a Job whose pod template carries a GPU
// assignment is refused at create, before its pods are.
func TestTenantForgedAssignmentInJobTemplate(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	job := tenantJob("forged-job", withAnnotation(tenantPod("", 1), tesserav1.AnnotationGPUAssign, forgedAssignment()))
	refused(t, "Job with a GPU assignment in its template", asTenant(t, e).Create(ctx, job),
		"spec.template.metadata.annotations[tessera.dev/gpu-assignment]", "remove it")
}

// TestTenantForgedAssignmentOnUpdate: a tenant may not add, change or remove the
// assignment of an existing pod; other updates of the same pod go through, and the
// scheduler's identity may change it.
func TestTenantForgedAssignmentOnUpdate(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant, sched := asTenant(t, e), asScheduler(t, e)
	pod := tenantPod("forged-update", 1)
	must(t, "create", tenant.Create(ctx, pod))

	patch := func(c client.Client, annotations map[string]any) error {
		return c.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, mustJSON(t, map[string]any{"metadata": map[string]any{"annotations": annotations}})))
	}
	refused(t, "tenant adds an assignment", patch(tenant, map[string]any{tesserav1.AnnotationGPUAssign: forgedAssignment()}),
		"metadata.annotations[tessera.dev/gpu-assignment]", tenantUser, "may not add, change or remove it")

	assignment := tesserav1.GPUAssignment{Node: "n1", Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{"GPU-1"}}}}.Encode()
	binds := webhookCalls(webhooks.KindBinding, "CREATE")
	must(t, "scheduler binds", bind(ctx, sched, pod, "n1", map[string]string{tesserav1.AnnotationGPUAssign: assignment}))
	if n := webhookCalls(webhooks.KindBinding, "CREATE"); n != binds {
		t.Errorf("the scheduler's Binding was sent to the webhook (%v calls, was %v); the match conditions should spare it", n, binds)
	}
	refused(t, "tenant changes the assignment", patch(tenant, map[string]any{tesserav1.AnnotationGPUAssign: forgedAssignment()}),
		"metadata.annotations[tessera.dev/gpu-assignment]", "leave it as the scheduler wrote it")
	refused(t, "tenant removes the assignment", patch(tenant, map[string]any{tesserav1.AnnotationGPUAssign: nil}),
		"metadata.annotations[tessera.dev/gpu-assignment]")
	updates := webhookCalls(webhooks.KindPod, "UPDATE")
	must(t, "tenant updates another annotation", patch(tenant, map[string]any{"team.example/note": "hello"}))
	if n := webhookCalls(webhooks.KindPod, "UPDATE"); n != updates {
		t.Errorf("a pod update that leaves the assignment alone was sent to the webhook (%v calls, was %v)", n, updates)
	}
	// A full update that carries the assignment unchanged is fine.
	cur := get(ctx, t, tenant, pod)
	cur.Labels["touched"] = "yes" // its queue label (set at create) stays: it is fixed
	must(t, "tenant updates the pod, assignment unchanged", tenant.Update(ctx, cur))
	if got := get(ctx, t, e.Client, pod); got.Annotations[tesserav1.AnnotationGPUAssign] != assignment {
		t.Fatalf("assignment is now %q", got.Annotations[tesserav1.AnnotationGPUAssign])
	}

	grantScheduler(t, e)
	must(t, "scheduler changes the assignment", patch(sched, map[string]any{tesserav1.AnnotationGPUAssign: forgedAssignment()}))
}

// TestTenantForgedBinding: a tenant whose RBAC lets it bind pods (a mistake the chart
// does not make) still cannot bind with Tessera's annotations: the Binding's annotations
// would reach the pod without a pod update.
func TestTenantForgedBinding(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "test-tenant-binds"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/binding"}, Verbs: []string{"create"}},
	}}
	must(t, "role", e.Client.Create(ctx, role))
	must(t, "binding", e.Client.Create(ctx, roleBinding(tenantNS, role.Name, role.Name, rbacv1.Subject{Kind: "ServiceAccount", Namespace: tenantNS, Name: "tenant"})))
	pod := tenantPod("forged-binding", 1)
	must(t, "create", tenant.Create(ctx, pod))
	var err error
	// RBAC changes reach the authorizer's cache shortly after they are written.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err = bind(ctx, tenant, pod, "n1", map[string]string{tesserav1.AnnotationGPUAssign: forgedAssignment()})
		if err == nil || !strings.Contains(err.Error(), "cannot create resource") || time.Now().After(deadline) {
			break
		}
	}
	refused(t, "tenant binds with an assignment", err, "the Binding's metadata.annotations[tessera.dev/gpu-assignment]", tenantUser)
	if got := get(ctx, t, e.Client, pod); got.Spec.NodeName != "" || got.Annotations[tesserav1.AnnotationGPUAssign] != "" {
		t.Fatalf("pod bound to %q with %q", got.Spec.NodeName, got.Annotations[tesserav1.AnnotationGPUAssign])
	}
}

// webhookCalls counts the requests of kind and operation the validating handler
// answered (the match conditions keep the others from it).
func webhookCalls(kind, op string) float64 {
	var n float64
	for _, r := range []string{webhooks.ResultAllowed, webhooks.ResultPatched, webhooks.ResultWarned, webhooks.ResultDenied, webhooks.ResultError} {
		n += testutil.ToFloat64(tenantWH.Validating.Metrics.Requests().WithLabelValues(op, kind, r))
	}
	return n
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tenantJob is a Job in the tenant's namespace running pod's template once.
func tenantJob(name string, pod *corev1.Pod) *batchv1.Job {
	spec := *pod.Spec.DeepCopy()
	spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name, Labels: pod.Labels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
			Spec:       spec,
		}},
	}
}

// TestTenantNodeNamePreset: a GPU pod (or a Job's GPU pod template) with spec.nodeName
// preset would skip the scheduler and its queue; it is refused. The scheduler's identity
// may create one.
func TestTenantNodeNamePreset(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant, sched := asTenant(t, e), asScheduler(t, e)

	pod := tenantPod("preset-node", 1)
	pod.Spec.NodeName = "n1"
	refused(t, "tenant GPU pod with spec.nodeName", tenant.Create(ctx, pod.DeepCopy()),
		`spec.nodeName is preset to "n1"`, "let the tessera scheduler place it")
	refused(t, "tenant GPU Job with spec.nodeName", tenant.Create(ctx, tenantJob("preset-node", pod)),
		`spec.nodeName is preset to "n1"`)

	cpu := tenantPod("preset-node-cpu", 0)
	cpu.Spec.NodeName = "n1"
	must(t, "tenant CPU pod with spec.nodeName (not Tessera's to place)", tenant.Create(ctx, cpu))

	grantScheduler(t, e)
	must(t, "scheduler creates a GPU pod with spec.nodeName", sched.Create(ctx, pod.DeepCopy()))
}

// TestTenantOtherSchedulerName: a GPU pod naming a scheduler the operator did not allow
// would never be queued; it is refused. An allowed one is admitted, "default-scheduler"
// becomes tessera, and the scheduler's identity may name any.
func TestTenantOtherSchedulerName(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant, sched := asTenant(t, e), asScheduler(t, e)

	pod := tenantPod("other-scheduler", 1)
	pod.Spec.SchedulerName = otherScheduler
	refused(t, "tenant GPU pod with another scheduler", tenant.Create(ctx, pod.DeepCopy()),
		`spec.schedulerName "`+otherScheduler+`"`, "set it to tessera", "["+allowedScheduler+", tessera]")
	refused(t, "tenant GPU Job with another scheduler", tenant.Create(ctx, tenantJob("other-scheduler", pod)),
		`spec.schedulerName "`+otherScheduler+`"`)

	allowed := tenantPod("allowed-scheduler", 1)
	allowed.Spec.SchedulerName = allowedScheduler
	must(t, "tenant GPU pod with a scheduler the operator allows", tenant.Create(ctx, allowed))
	def := tenantPod("default-scheduler", 1)
	def.Spec.SchedulerName = corev1.DefaultSchedulerName
	must(t, "tenant GPU pod with the default scheduler", tenant.Create(ctx, def))
	if def.Spec.SchedulerName != tesserav1.SchedulerName {
		t.Errorf("default-scheduler became %q, want tessera", def.Spec.SchedulerName)
	}

	grantScheduler(t, e)
	must(t, "scheduler creates a GPU pod with another scheduler", sched.Create(ctx, pod.DeepCopy()))
}

// tenantQueues creates team-a's queue (namespaces labelled team=a; classes batch-normal
// and offline-low) and team-b's (namespaces labelled team=b), and waits until the
// webhook knows them: a pod in each, from a namespace it takes, is admitted. The queues
// are deleted when the test ends: they own the tenants' namespaces.
func tenantQueues(t *testing.T, e *testenv.Env) {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Labels: map[string]string{"team": "b"}}},
		&tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: tesserav1.QueueSpec{
			NamespaceSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			AllowedPriorityClasses: []string{"batch-normal", "offline-low"},
		}},
		&tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}, Spec: tesserav1.QueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}},
		}},
	} {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if _, queue := o.(*tesserav1.Queue); queue { // they own the tenants' namespaces
			t.Cleanup(func() { _ = e.Client.Delete(context.Background(), o) })
		}
	}
	for _, probe := range []struct{ ns, queue string }{{tenantNS, "team-a"}, {"tenant-b", "team-b"}} {
		for {
			p := tenantPod("", 1)
			p.GenerateName, p.Namespace, p.Labels = "probe-", probe.ns, map[string]string{tesserav1.LabelQueue: probe.queue}
			err := e.Client.Create(ctx, p, client.DryRunAll)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the webhook never took queue %s: %v", probe.queue, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// tenantWithQueues is the tenant environment with tenantQueues' objects, a context of a
// minute and a client acting as the tenant.
func tenantWithQueues(t *testing.T) (*testenv.Env, context.Context, client.Client) {
	t.Helper()
	e := tenantEnv(t)
	tenantQueues(t, e)
	return e, testenv.Context(t, 60*time.Second), asTenant(t, e)
}

func inQueue(p *corev1.Pod, queue string) *corev1.Pod {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[tesserav1.LabelQueue] = queue
	return p
}

// TestTenantQueueFromOtherNamespace: team-b's queue takes only namespaces labelled
// team=b; the tenant of tenant-a (team=a) cannot submit to it, by Tessera's label or by
// Volcano's or Kueue's queue names, as a pod, a Job or a PodGroup. Its own queue works.
func TestTenantQueueFromOtherNamespace(t *testing.T) {
	e, ctx, tenant := tenantWithQueues(t)
	want := []string{`queue "team-b" does not take workloads from namespace "` + tenantNS + `"`, "spec.namespaceSelector", "[team-a]"}

	refused(t, "tenant pod in another team's queue", tenant.Create(ctx, inQueue(tenantPod("other-queue", 1), "team-b")), want...)
	volcano := tenantPod("other-queue-volcano", 1)
	volcano.Annotations = map[string]string{tesserav1.VolcanoQueueName: "team-b"}
	refused(t, "tenant pod naming the queue the Volcano way", tenant.Create(ctx, volcano), want...)
	kueue := tenantPod("other-queue-kueue", 1)
	kueue.Labels = map[string]string{tesserav1.KueueQueueName: "team-b"}
	refused(t, "tenant pod naming the queue the Kueue way", tenant.Create(ctx, kueue), want...)
	refused(t, "tenant Job in another team's queue", tenant.Create(ctx, tenantJob("other-queue", inQueue(tenantPod("", 1), "team-b"))), want...)
	pg := &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "other-queue"}, Spec: tesserav1.PodGroupSpec{MinMember: 1, Queue: "team-b"}}
	refused(t, "tenant PodGroup in another team's queue", tenant.Create(ctx, pg), want...)

	must(t, "tenant pod in its own queue", tenant.Create(ctx, inQueue(tenantPod("own-queue", 1), "team-a")))
	must(t, "pod of team b in its queue", e.Client.Create(ctx, func() *corev1.Pod {
		p := inQueue(tenantPod("team-b-pod", 1), "team-b")
		p.Namespace = "tenant-b"
		return p
	}()))
}

// TestTenantPriorityClassNotAllowed: team-a's queue allows batch-normal and offline-low;
// a tenant pod, Job or PodGroup in it asking for production-high (which preempts
// everybody's work) is refused. The allowed classes and the default work.
func TestTenantPriorityClassNotAllowed(t *testing.T) {
	_, ctx, tenant := tenantWithQueues(t)
	want := []string{`priorityClassName "production-high" is not allowed in queue "team-a"`, "[batch-normal, offline-low]"}

	high := inQueue(tenantPod("high", 1), "team-a")
	high.Spec.PriorityClassName = "production-high"
	refused(t, "tenant pod with a class its queue does not allow", tenant.Create(ctx, high.DeepCopy()), want...)
	refused(t, "tenant Job with a class its queue does not allow", tenant.Create(ctx, tenantJob("high", high)), want...)
	pg := &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "high"},
		Spec: tesserav1.PodGroupSpec{MinMember: 1, Queue: "team-a", PriorityClassName: "production-high"}}
	refused(t, "tenant PodGroup with a class its queue does not allow", tenant.Create(ctx, pg), want...)

	low := inQueue(tenantPod("low", 1), "team-a")
	low.Spec.PriorityClassName = "offline-low"
	must(t, "tenant pod with an allowed class", tenant.Create(ctx, low))
	def := inQueue(tenantPod("default-class", 1), "team-a")
	must(t, "tenant pod with no class", tenant.Create(ctx, def))
	if def.Spec.PriorityClassName != "batch-normal" {
		t.Errorf("default class %q, want batch-normal", def.Spec.PriorityClassName)
	}
}
