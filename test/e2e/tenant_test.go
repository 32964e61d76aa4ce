package e2e

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// TenantNamespace is where the end-to-end tenant works: the example repository's
// research namespace (queue train-dev).
const TenantNamespace = "research"

// AsTenant returns a client that acts as the ServiceAccount tenant of TenantNamespace,
// allowed by a Role to create, update and delete pods there and nothing else, as a
// team's CI or notebook would be. The API server checks its RBAC and the webhook sees
// it as the request's user.
func (c *Cluster) AsTenant(ctx context.Context) (client.Client, string, error) {
	user := "system:serviceaccount:" + TenantNamespace + ":tenant"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: TenantNamespace, Name: "tenant"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: TenantNamespace, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: TenantNamespace, Name: "tenant"}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Client.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return nil, "", err
		}
	}
	cfg := rest.CopyConfig(c.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + TenantNamespace, "system:authenticated"}}
	cl, err := client.New(cfg, client.Options{Scheme: c.env.Scheme})
	return cl, user, err
}

// tenantBypasses has a tenant try to take a GPU slice another pod holds: a pod that
// names that GPU in its own tessera.dev/gpu-assignment and sets spec.nodeName, the same
// without nodeName, and writing the assignment onto its own pod after the scheduler
// bound it. Each is refused by admission with the field named, so the forged pod never
// exists and never gets the GPU; the victim's GPU keeps exactly the slices it had.
func (s *scenario) tenantBypasses() {
	tenant, user, err := s.c.AsTenant(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	victim, assignment := s.slicedPod()
	before := s.slicesOn(assignment)
	forged := Job(TenantNamespace, "forged", 1, 0, 12*1024, 0).Spec.Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: TenantNamespace, Name: "forged-assignment",
		Annotations: map[string]string{tesserav1.AnnotationGPUAssign: victim.Annotations[tesserav1.AnnotationGPUAssign]}},
		Spec: *forged.Spec.DeepCopy()}
	pod.Spec.NodeName = victim.Spec.NodeName
	pod.Spec.Containers[0].Name = victim.Spec.Containers[0].Name
	s.refused("a pod with a copied GPU assignment and spec.nodeName", tenant.Create(s.ctx, pod.DeepCopy()),
		tesserav1.AnnotationGPUAssign, user)
	pod.Spec.NodeName = ""
	s.refused("the same pod without spec.nodeName", tenant.Create(s.ctx, pod.DeepCopy()), tesserav1.AnnotationGPUAssign)

	// A pod admitted without the annotation cannot have it written afterwards.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: TenantNamespace, Name: "forged-later"}, Spec: *forged.Spec.DeepCopy()}
	if err := tenant.Create(s.ctx, plain); err != nil {
		s.t.Fatalf("tenant pod without an assignment: %v", err)
	}
	patch := client.MergeFrom(plain.DeepCopy())
	plain.Annotations = map[string]string{tesserav1.AnnotationGPUAssign: victim.Annotations[tesserav1.AnnotationGPUAssign]}
	s.refused("writing the assignment onto the tenant's own pod", tenant.Patch(s.ctx, plain, patch), tesserav1.AnnotationGPUAssign)
	if err := tenant.Delete(s.ctx, plain); client.IgnoreNotFound(err) != nil {
		s.t.Fatal(err)
	}

	if err := s.c.Client.Get(s.ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err == nil {
		s.t.Fatalf("the forged pod %s/%s exists", pod.Namespace, pod.Name)
	}
	if after := s.slicesOn(assignment); after != before {
		s.t.Fatalf("GPU %s held %d slices before the attempts and %d after", assignment, before, after)
	}
	s.tl.Logf("tenant %s: forged GPU assignments (with and without spec.nodeName, and onto its own pod) refused by admission; GPU %s still holds its %d slices", user, assignment, before)
}

// slicedPod is a bound pod holding a GPU slice, and the node/GPU it holds.
func (s *scenario) slicedPod() (corev1.Pod, string) {
	var pods corev1.PodList
	if err := s.c.Client.List(s.ctx, &pods); err != nil {
		s.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if Bound([]corev1.Pod{p}) == 0 {
			continue
		}
		a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil || len(a.Containers) == 0 || a.Containers[0].MemoryMiB == 0 || len(a.Containers[0].UUIDs) == 0 {
			continue
		}
		return p, a.Node + "/" + a.Containers[0].UUIDs[0]
	}
	s.t.Fatal("no bound pod holds a GPU slice")
	return corev1.Pod{}, ""
}

// slicesOn counts the bound pods whose assignment names gpu (node/UUID).
func (s *scenario) slicesOn(gpu string) int {
	var pods corev1.PodList
	if err := s.c.Client.List(s.ctx, &pods); err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil || Bound([]corev1.Pod{p}) == 0 {
			continue
		}
		for _, c := range a.Containers {
			for _, u := range c.UUIDs {
				if a.Node+"/"+u == gpu {
					n++
				}
			}
		}
	}
	return n
}

// refused fails the test unless err is an admission denial whose message names every
// one of want.
func (s *scenario) refused(what string, err error, want ...string) {
	s.t.Helper()
	if err == nil {
		s.t.Fatalf("%s: admitted, want a denial", what)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			s.t.Fatalf("%s: %v; want a message naming %q", what, err, w)
		}
	}
	s.tl.Logf("refused: %s: %s", what, firstLine(err.Error()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
