package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The platform tests install nothing but Tessera's webhook and create the pods of software
// a GPU cluster already runs, as its controllers would: there is no controller-manager in
// this environment, so each pod is created directly, with the ownerReferences the
// DaemonSet or ReplicaSet controller gives it, and, for the DaemonSet's, as the DaemonSet
// controller's identity.

// asDaemonSetController is a client acting as kube-controller-manager's DaemonSet
// controller (its RBAC is the API server's bootstrap policy).
func asDaemonSetController(t *testing.T, e *testenv.Env) client.Client {
	return as(t, e, webhooks.DaemonSetControllerUser)
}

// platformNamespace creates the namespace ns with labels; existing, it is left alone.
func platformNamespace(ctx context.Context, t *testing.T, e *testenv.Env, ns string, labels map[string]string) {
	t.Helper()
	must(t, "namespace "+ns, client.IgnoreAlreadyExists(e.Client.Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}})))
}

// awaitAdmitted creates pod as c once the webhook admits it: the webhook reads namespaces
// from its cache, which learns a new namespace's labels a moment after the API server.
func awaitAdmitted(ctx context.Context, t *testing.T, c client.Client, what string, pod *corev1.Pod) {
	t.Helper()
	var err error
	for {
		if err = c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err == nil {
			break
		}
		if ctx.Err() != nil || !strings.Contains(err.Error(), "denied") {
			t.Fatalf("%s: refused: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, what, c.Create(ctx, pod))
}

func platformPod(ns, name, class string, owner metav1.Object, kind string) *corev1.Pod {
	gvk := appsv1.SchemeGroupVersion.WithKind(kind)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}},
		Spec: corev1.PodSpec{
			PriorityClassName: class,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/" + name,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
		},
	}
}

// TestPlatformPodsAdmitted: the platform software of a GPU cluster keeps starting once
// Tessera's webhook intercepts its namespaces. A GPU-Operator-like DaemonSet's pod at
// system-node-critical in gpu-operator, tolerating the GPU nodes' taint and privileged,
// created by the DaemonSet controller, is admitted without any setting; a monitoring
// Deployment's pod at system-cluster-critical in monitoring, a namespace the platform
// team labelled tessera.dev/platform=true, and a cert-manager pod without a class in
// cert-manager are admitted too. The line holds for tenants: a pod that only names the
// DaemonSet as its owner, the same monitoring pod in the tenant's namespace, or a CPU pod
// of the tenant at system-node-critical is refused; the tenant may not label its
// namespace; and a GPU pod at system-cluster-critical in the platform namespace is
// refused.
func TestPlatformPodsAdmitted(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 90*time.Second)
	admin := e.Client

	// The GPU Operator: a DaemonSet, and the pod the DaemonSet controller creates for a
	// node, as it creates it (node affinity to its node, the template's tolerations).
	platformNamespace(ctx, t, e, "gpu-operator", nil)
	dsLabels := map[string]string{"app": "nvidia-device-plugin-daemonset"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "nvidia-device-plugin-daemonset"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: dsLabels}, Spec: corev1.PodSpec{
				PriorityClassName: "system-node-critical",
				Tolerations:       []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "main", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
					SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
			}},
		},
	}
	must(t, "GPU Operator DaemonSet", client.IgnoreAlreadyExists(admin.Create(ctx, ds)))
	dsPod := platformPod("gpu-operator", "nvidia-device-plugin-daemonset-x7k2p", "system-node-critical", ds, "DaemonSet")
	dsPod.Labels = dsLabels
	dsPod.Spec.Tolerations = append(ds.Spec.Template.Spec.Tolerations,
		corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	dsPod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	dsPod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-node-1"}}}}}}}}
	awaitAdmitted(ctx, t, asDaemonSetController(t, e), "GPU Operator DaemonSet pod at system-node-critical", dsPod)
	if got := get(ctx, t, admin, dsPod); got.Spec.PriorityClassName != "system-node-critical" || got.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("DaemonSet pod: class %q scheduler %q, want system-node-critical and %s left alone",
			got.Spec.PriorityClassName, got.Spec.SchedulerName, corev1.DefaultSchedulerName)
	}

	// The exemption is the DaemonSet controller's identity, not the ownerReference,
	// which any pod's author may write.
	forged := platformPod("gpu-operator", "nvidia-device-plugin-daemonset-forged", "system-node-critical", ds, "DaemonSet")
	refused(t, "pod claiming the DaemonSet as owner, created by another user", admin.Create(ctx, forged),
		`priorityClassName "system-node-critical" is not allowed in queue "default"`)

	// Monitoring: a namespace the platform team labels, a Deployment's ReplicaSet and
	// the pod the ReplicaSet controller creates.
	platformNamespace(ctx, t, e, "monitoring", map[string]string{tesserav1.LabelPlatform: "true"})
	rs := platformReplicaSet("monitoring", "kube-state-metrics-6d4f8b7c9", "system-cluster-critical")
	must(t, "monitoring ReplicaSet", client.IgnoreAlreadyExists(admin.Create(ctx, rs)))
	monPod := platformPod("monitoring", "kube-state-metrics-6d4f8b7c9-q2w8z", "system-cluster-critical", rs, "ReplicaSet")
	awaitAdmitted(ctx, t, admin, "monitoring pod at system-cluster-critical", monPod)

	// cert-manager: no label, no class.
	platformNamespace(ctx, t, e, "cert-manager", nil)
	cmRS := platformReplicaSet("cert-manager", "cert-manager-webhook-5b8d9c", "")
	must(t, "cert-manager ReplicaSet", client.IgnoreAlreadyExists(admin.Create(ctx, cmRS)))
	awaitAdmitted(ctx, t, admin, "cert-manager pod without a class",
		platformPod("cert-manager", "cert-manager-webhook-5b8d9c-m4n7d", "", cmRS, "ReplicaSet"))

	// Tenants stay on their side of the line.
	want := `priorityClassName "system-cluster-critical" is not allowed in queue "default"`
	tenantRS := platformReplicaSet(tenantNS, "look-critical", "system-cluster-critical")
	must(t, "tenant namespace ReplicaSet", client.IgnoreAlreadyExists(admin.Create(ctx, tenantRS)))
	inTenant := platformPod(tenantNS, "look-critical-abcde", "system-cluster-critical", tenantRS, "ReplicaSet")
	refused(t, "ReplicaSet pod at system-cluster-critical in a tenant namespace", admin.Create(ctx, inTenant.DeepCopy()), want)
	cpu := tenantPod("cpu-system-node-critical", 0)
	cpu.Spec.PriorityClassName = "system-node-critical"
	refused(t, "tenant CPU pod at system-node-critical", asTenant(t, e).Create(ctx, cpu),
		`priorityClassName "system-node-critical" is not allowed in queue "default"`)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}}
	refused(t, "tenant labels its namespace a platform namespace", patchMeta(ctx, t, asTenant(t, e), ns,
		map[string]any{"labels": map[string]any{tesserav1.LabelPlatform: "true"}}), "cannot patch", "namespaces")
	gpu := platformPod("monitoring", "dcgm-probe", "system-cluster-critical", rs, "ReplicaSet")
	gpu.Spec.Containers[0].Resources.Limits = corev1.ResourceList{tesserav1.ResourceGPU: resource.MustParse("1")}
	refused(t, "GPU pod at system-cluster-critical in a platform namespace", admin.Create(ctx, gpu), want)
}

// platformReplicaSet is a Deployment's ReplicaSet of one pod at class.
func platformReplicaSet(ns, name, class string) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				PriorityClassName: class,
				Containers:        []corev1.Container{{Name: "main", Image: "registry.example.com/" + name}},
			}},
		},
	}
}
