package integration

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The claim paths to Tessera's GPUs (Dynamic Resource Allocation): a tenant may create
// ResourceClaims and ResourceClaimTemplates, never write their status, never ask admin
// access to Tessera's GPUs outside a platform namespace, and no scheduler but Tessera's
// allocates Tessera's devices or adds a consumer to a claim that holds them. The
// admission policies are the kustomize base's (rendered from the chart).

// kubeScheduler is the user kube-scheduler authenticates as; the API server's bootstrap
// RBAC lets it write claims' status and allocation (resourceclaims/binding).
const kubeScheduler = "system:kube-scheduler"

// resourceClaimController is kube-controller-manager's resource claim controller: it
// removes ended pods from a claim's consumers and clears the allocation of a claim
// nobody uses.
const resourceClaimController = "system:serviceaccount:kube-system:resource-claim-controller"

// gpuClaim is a ResourceClaim in ns with one request "gpu" of class; admin asks admin
// access.
func gpuClaim(ns, name, class string, admin bool) *resourcev1.ResourceClaim {
	req := resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}
	if admin {
		req.Exactly.AdminAccess = ptr.To(true)
	}
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{req}}},
	}
}

// allocation is an allocation of the claim's request "gpu" to device of driver on node.
func allocation(driver, node, device string) *resourcev1.AllocationResult {
	return &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: driver, Pool: node, Device: device},
		}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
}

func consumer(pod string) resourcev1.ResourceClaimConsumerReference {
	return resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: pod, UID: types.UID("uid-" + pod)}
}

// asUser is a client acting as user, authenticated, in no other group.
func asUser(t *testing.T, e *testenv.Env, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	must(t, "client as "+user, err)
	return c
}

// writeStatus sets the claim's status as c, from the stored claim.
func writeStatus(ctx context.Context, c client.Client, claim *resourcev1.ResourceClaim, status func(*resourcev1.ResourceClaimStatus)) error {
	var cur resourcev1.ResourceClaim
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &cur); err != nil {
		return err
	}
	status(&cur.Status)
	return c.Status().Update(ctx, &cur)
}

// tenantNamespace creates namespace ns with labels, and the tenant's Role (tenantRules)
// and RoleBinding in it.
func tenantNamespace(ctx context.Context, t *testing.T, e *testenv.Env, ns string, labels map[string]string) {
	t.Helper()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: tenantRules},
		roleBinding(ns, "tenant", "tenant", rbacv1.Subject{Kind: "ServiceAccount", Namespace: tenantNS, Name: "tenant"}),
	} {
		must(t, "create "+o.GetName(), client.IgnoreAlreadyExists(e.Client.Create(ctx, o)))
	}
}

// TestTenantClaimStatusWrite: the tenant creates a claim for a Tessera GPU, but cannot
// write its status (no resourceclaims/status in its role), so it cannot allocate a GPU
// to itself or reserve the claim for a pod; a status given at create is dropped.
func TestTenantClaimStatusWrite(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, time.Minute)
	tenant := asTenant(t, e)

	forged := gpuClaim(tenantNS, "forged-status", tesserav1.DeviceClassGPU, false)
	forged.Status = resourcev1.ResourceClaimStatus{Allocation: allocation(tesserav1.DRADriver, "n1", "gpu-0"), ReservedFor: []resourcev1.ResourceClaimConsumerReference{consumer("train")}}
	must(t, "tenant creates a claim carrying a status", tenant.Create(ctx, forged))
	var stored resourcev1.ResourceClaim
	must(t, "get claim", e.Client.Get(ctx, client.ObjectKeyFromObject(forged), &stored))
	if stored.Status.Allocation != nil || len(stored.Status.ReservedFor) > 0 {
		t.Fatalf("the status given at create was stored: %+v", stored.Status)
	}

	refused(t, "tenant allocates its claim", writeStatus(ctx, tenant, forged, func(s *resourcev1.ResourceClaimStatus) {
		s.Allocation = allocation(tesserav1.DRADriver, "n1", "gpu-0")
	}), `cannot update resource "resourceclaims/status"`, tenantUser)
	patch := client.RawPatch(types.MergePatchType, mustJSON(t, map[string]any{"status": map[string]any{
		"reservedFor": []any{map[string]any{"resource": "pods", "name": "train", "uid": "uid-train"}}}}))
	refused(t, "tenant reserves its claim", tenant.Status().Patch(ctx, stored.DeepCopy(), patch),
		`cannot patch resource "resourceclaims/status"`)
	must(t, "tenant deletes its claim", tenant.Delete(ctx, forged))
}

// TestTenantClaimAdminAccess: admin access to Tessera's GPUs (a request of its device
// classes, or with a selector naming its driver) only in platform namespaces. Kubernetes
// refuses adminAccess in a namespace without resource.kubernetes.io/admin-access:
// "true"; the chart's policy refuses it on Tessera's GPUs where that label is set but
// tessera.dev/platform: "true" is not. Admin access to other drivers' devices is left to
// Kubernetes.
func TestTenantClaimAdminAccess(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, time.Minute)
	applyBase(ctx, t, e, "dra/admission-policy.yaml")
	tenant := asTenant(t, e)
	const adminNS, platformNS = "tenant-a-admin", "gpu-monitoring"
	tenantNamespace(ctx, t, e, adminNS, map[string]string{resourcev1.DRAAdminNamespaceLabelKey: "true"})
	must(t, "platform namespace", client.IgnoreAlreadyExists(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: platformNS, Labels: map[string]string{resourcev1.DRAAdminNamespaceLabelKey: "true", "tessera.dev/platform": "true"}}})))

	// Kubernetes on its own, in the tenant's unlabelled namespace.
	refused(t, "admin access in an unlabelled namespace", tenant.Create(ctx, gpuClaim(tenantNS, "admin", tesserav1.DeviceClassGPU, true)),
		"admin access to devices requires the `resource.kubernetes.io/admin-access: true` label")

	// The label alone: Kubernetes allows it, the policy does not (once it is loaded).
	want := "only platform namespaces, labelled both resource.kubernetes.io/admin-access: \"true\" and tessera.dev/platform: \"true\", may; namespace " + adminNS + " is not"
	err := awaitRefusal(ctx, t, "admin access to a whole GPU", want, func() error {
		return tenant.Create(ctx, gpuClaim(adminNS, "admin-gpu", tesserav1.DeviceClassGPU, true), client.DryRunAll)
	})
	refused(t, "admin access to a whole GPU", err, "ResourceClaim "+adminNS+"/admin-gpu: spec.devices.requests gpu ask adminAccess to Tessera GPUs")
	share := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: adminNS, Name: "admin-share"},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: gpuClaim(adminNS, "", tesserav1.DeviceClassGPUShare, true).Spec},
	}
	refused(t, "admin access to a share, in a template", tenant.Create(ctx, share),
		"ResourceClaimTemplate "+adminNS+"/admin-share: spec.spec.devices.requests gpu ask adminAccess", want)
	bySelector := gpuClaim(adminNS, "admin-selector", "any-gpu.example.com", true)
	bySelector.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: `device.driver == "` + tesserav1.DRADriver + `"`}}}
	refused(t, "admin access to Tessera's devices through a selector", tenant.Create(ctx, bySelector), want)

	must(t, "admin access to another driver's devices", tenant.Create(ctx, gpuClaim(adminNS, "admin-nic", "nic.example.com", true)))
	must(t, "a claim without admin access", tenant.Create(ctx, gpuClaim(adminNS, "plain", tesserav1.DeviceClassGPU, false)))
	must(t, "admin access to Tessera's GPUs in a platform namespace", e.Client.Create(ctx, gpuClaim(platformNS, "dcgm", tesserav1.DeviceClassGPU, true)))
}

// TestTenantClaimAllocatedByOtherScheduler: a pod that names another scheduler would
// have it allocate its claims. kube-scheduler, whose RBAC allows claim allocation,
// cannot allocate Tessera's devices, nor add a pod to the consumers of a claim Tessera
// allocated; Tessera's scheduler can, and the resource claim controller may still
// release the claim. Other drivers' claims are left to kube-scheduler.
func TestTenantClaimAllocatedByOtherScheduler(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, time.Minute)
	applyBase(ctx, t, e, "dra/admission-policy.yaml")
	grantSchedulerClaims(ctx, t, e)
	tenant, kube := asTenant(t, e), asUser(t, e, kubeScheduler)
	sched, controller := asScheduler(t, e), asUser(t, e, resourceClaimController)

	claim := gpuClaim(tenantNS, "other-scheduler", tesserav1.DeviceClassGPU, false)
	must(t, "tenant creates a claim", tenant.Create(ctx, claim))
	allocate := func(s *resourcev1.ResourceClaimStatus) {
		s.Allocation = allocation(tesserav1.DRADriver, "n1", "gpu-0")
		s.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer("train-0")}
	}
	onlyTessera := "ResourceClaim " + tenantNS + "/other-scheduler holds devices of " + tesserav1.DRADriver +
		": only Tessera's scheduler (" + webhooks.SchedulerUser(tessNS) + ") allocates and reserves them, and " + kubeScheduler
	err := awaitRefusal(ctx, t, "kube-scheduler allocates a Tessera GPU", onlyTessera, func() error {
		return writeStatus(ctx, kube, claim, allocate)
	})
	refused(t, "kube-scheduler allocates a Tessera GPU", err, "may only clear status.allocation, not set it",
		"must set spec.schedulerName: tessera")

	must(t, "Tessera's scheduler allocates the claim", writeStatus(ctx, sched, claim, allocate))
	refused(t, "kube-scheduler adds a pod to the claim", writeStatus(ctx, kube, claim, func(s *resourcev1.ResourceClaimStatus) {
		s.ReservedFor = append(s.ReservedFor, consumer("intruder"))
	}), onlyTessera, "may only remove consumers from status.reservedFor, not add pods intruder")
	// Kubernetes itself keeps an allocation from changing once set.
	refused(t, "kube-scheduler moves the claim to another GPU", writeStatus(ctx, kube, claim, func(s *resourcev1.ResourceClaimStatus) {
		s.Allocation.Devices.Results[0].Device = "gpu-1"
	}), "status.allocation", "field cannot be modified once set")

	must(t, "the resource claim controller removes the ended pod", writeStatus(ctx, controller, claim, func(s *resourcev1.ResourceClaimStatus) {
		s.ReservedFor = nil
	}))
	must(t, "the resource claim controller clears the allocation", writeStatus(ctx, controller, claim, func(s *resourcev1.ResourceClaimStatus) {
		s.Allocation = nil
	}))

	nic := gpuClaim(tenantNS, "nic", "nic.example.com", false)
	must(t, "tenant creates a claim of another driver", tenant.Create(ctx, nic))
	must(t, "kube-scheduler allocates another driver's device", writeStatus(ctx, kube, nic, func(s *resourcev1.ResourceClaimStatus) {
		s.Allocation = allocation("nic.example.com", "n1", "nic-0")
		s.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer("web")}
	}))
}

// grantSchedulerClaims lets Tessera's scheduler write claims' allocation and consumers
// (resourceclaims/status, and the resourceclaims/binding permission the API server asks
// for that), as the scheduler's RBAC grants it, and waits until the authorizer allows it.
func grantSchedulerClaims(ctx context.Context, t *testing.T, e *testenv.Env) {
	t.Helper()
	const name = "test-scheduler-allocates-claims"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{resourcev1.GroupName}, Resources: []string{"resourceclaims"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{resourcev1.GroupName}, Resources: []string{"resourceclaims/status", "resourceclaims/binding"}, Verbs: []string{"update", "patch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: tessNS, Name: webhooks.SchedulerServiceAccount}}}
	for _, o := range []client.Object{role, binding} {
		must(t, "create "+name, client.IgnoreAlreadyExists(e.Client.Create(ctx, o)))
	}
	awaitAllowed(ctx, t, e, webhooks.SchedulerUser(tessNS), authorizationv1.ResourceAttributes{
		Group: resourcev1.GroupName, Verb: "update", Resource: "resourceclaims", Subresource: "binding"})
}
