package integration

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/autoscale/idlereclaim"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// TestTenantAutoscalerWorkloadWrites: the autoscaler's ServiceAccount, as the kustomize
// base grants and limits it, may do to a tenant's Deployments and Jobs only what idle
// reclaim does: scale a Deployment to zero recording its replicas, suspend a Job. It may
// not create, update or delete them, nor patch anything else of them: a pod template
// changed by the autoscaler would run any image as any ServiceAccount of the namespace.
func TestTenantAutoscalerWorkloadWrites(t *testing.T) {
	e := requireEnv(t)
	ctx := testenv.Context(t, time.Minute)
	applyBase(ctx, t, e, "autoscaler/rbac.yaml", "autoscaler/admission-policy.yaml")
	const ns = "reclaim-a"
	must(t, "namespace", client.IgnoreAlreadyExists(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	labels := map[string]string{"app": "train"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: *template.DeepCopy()}}
	deploy.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"}, Spec: batchv1.JobSpec{Template: template}}
	must(t, "Deployment", e.Client.Create(ctx, deploy))
	must(t, "Job", e.Client.Create(ctx, job))

	c := as(t, e, "system:serviceaccount:"+tessNS+":tessera-autoscaler")
	patch := func(obj client.Object, body string, opts ...client.PatchOption) error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(body)), opts...)
	}
	const image = `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"attacker/miner"}]}}}}`
	err := awaitRefusal(ctx, t, "Deployment pod template", "tessera-autoscaler changes deployments only as idle reclaim does", func() error {
		return patch(deploy.DeepCopy(), image, client.DryRunAll)
	})
	refused(t, "Deployment pod template", err)
	refused(t, "Deployment scaled up", patch(deploy.DeepCopy(), `{"spec":{"replicas":20}}`), "only as idle reclaim does")
	refused(t, "Job left running, deadline changed", patch(job.DeepCopy(), `{"spec":{"activeDeadlineSeconds":1}}`), "only as idle reclaim does")

	// What idle reclaim does (autoscale/idlereclaim): one patch records the replicas and
	// scales to zero; a Job is suspended.
	must(t, "Deployment scaled to zero", patch(deploy, `{"metadata":{"annotations":{"`+idlereclaim.AnnotationReplicas+`":"2"}},"spec":{"replicas":0}}`))
	must(t, "Job suspended", patch(job, `{"spec":{"suspend":true}}`))
	if *deploy.Spec.Replicas != 0 || deploy.Annotations[idlereclaim.AnnotationReplicas] != "2" || !*job.Spec.Suspend {
		t.Errorf("idle reclaim's patches did not land: replicas %d, annotations %v, suspend %v", *deploy.Spec.Replicas, deploy.Annotations, *job.Spec.Suspend)
	}

	// RBAC: get and patch, nothing else of the workloads; no scale subresource.
	for _, a := range []struct {
		verb, group, resource, sub string
		allowed                    bool
	}{
		{"get", "apps", "deployments", "", true},
		{"patch", "apps", "deployments", "", true},
		{"patch", "batch", "jobs", "", true},
		{"update", "apps", "deployments", "", false},
		{"create", "apps", "deployments", "", false},
		{"delete", "apps", "deployments", "", false},
		{"update", "apps", "deployments", "scale", false},
		{"patch", "apps", "daemonsets", "", false},
		{"create", "batch", "jobs", "", false},
		{"delete", "batch", "jobs", "", false},
	} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + tessNS + ":tessera-autoscaler", Groups: []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub},
		}}
		must(t, "SubjectAccessReview", e.Client.Create(ctx, review))
		if review.Status.Allowed != a.allowed {
			t.Errorf("the autoscaler may %s %s/%s %s: %v, want %v", a.verb, a.group, a.resource, a.sub, review.Status.Allowed, a.allowed)
		}
	}
}
