package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The tenant tests of pod updates that move a pod towards GPU nodes, and of privileged
// access to the node's devices.

// patchSpec merge-patches the pod's spec as c.
func patchSpec(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod, spec map[string]any) error {
	return c.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, mustJSON(t, map[string]any{"spec": spec})))
}

// addToleration adds tol to the pod's tolerations as c (the API server allows only
// additions; the pod already has the default ones for not-ready and unreachable nodes).
func addToleration(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod, tol map[string]any) error {
	return c.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.JSONPatchType,
		mustJSON(t, []any{map[string]any{"op": "add", "path": "/spec/tolerations/-", "value": tol}})))
}

var tolerateEverything = map[string]any{"operator": "Exists"}

// TestTenantTolerationPatch: a pending CPU pod created with a nodeSelector for a GPU node
// (admitted: the GPU taint keeps it off) patched to tolerate every taint would be bound
// there by kube-scheduler; the update is refused. So is the same patch on an admitted GPU
// pod. A toleration of another taint, and a label, may still be added.
func TestTenantTolerationPatch(t *testing.T) {
	e, ctx, tenant := tenantGPUNode(t)
	const node = tenantGPUNodeName

	cpu := tenantPod("toleration-patch-cpu", 0)
	cpu.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	must(t, "tenant CPU pod with a nodeSelector for a GPU node", tenant.Create(ctx, cpu))
	refused(t, "tenant patches the pending CPU pod to tolerate every taint", addToleration(ctx, t, tenant, cpu, tolerateEverything),
		"tolerates every taint, the GPU nodes' among them", "remove the toleration", "pod update changing tolerations")
	refused(t, "tenant patches the pending CPU pod to tolerate the GPU taint", addToleration(ctx, t, tenant, cpu,
		map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}),
		"tolerates the GPU nodes' taint nvidia.com/gpu")

	gpu := tenantPod("toleration-patch-gpu", 1)
	must(t, "tenant GPU pod", tenant.Create(ctx, gpu))
	refused(t, "tenant patches the admitted GPU pod to tolerate every taint", addToleration(ctx, t, tenant, gpu, tolerateEverything),
		"tolerates every taint: it may not be added to a pod after the pod is created")

	if got := get(ctx, t, e.Client, cpu); len(got.Spec.Tolerations) != len(cpu.Spec.Tolerations) {
		t.Errorf("CPU pod tolerations now %v", got.Spec.Tolerations)
	}
	updates := webhookCalls(webhooks.KindPod, "UPDATE")
	must(t, "tenant labels the CPU pod", patchMeta(ctx, t, tenant, cpu.DeepCopy(), map[string]any{"labels": map[string]any{"app": "train"}}))
	if n := webhookCalls(webhooks.KindPod, "UPDATE"); n != updates {
		t.Errorf("a label update was sent to the webhook (%v calls, was %v)", n, updates)
	}
	must(t, "tenant adds a toleration of another taint", addToleration(ctx, t, tenant, cpu,
		map[string]any{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"}))
	if n := webhookCalls(webhooks.KindPod, "UPDATE"); n == updates {
		t.Errorf("a toleration update did not reach the webhook")
	}
}

// TestTenantGatedPodNodeSelector: a scheduling-gated CPU pod's nodeSelector may change;
// pointing it at a GPU node by name is refused, at another node admitted.
func TestTenantGatedPodNodeSelector(t *testing.T) {
	_, ctx, tenant := tenantGPUNode(t)
	const node = tenantGPUNodeName

	pod := tenantPod("gated-node-selector", 0)
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	must(t, "tenant gated CPU pod", tenant.Create(ctx, pod))
	refused(t, "tenant points the gated CPU pod at a GPU node", patchSpec(ctx, t, tenant, pod, map[string]any{
		"nodeSelector": map[string]any{corev1.LabelHostname: node}}),
		`spec.nodeSelector[kubernetes.io/hostname] "`+node+`" is a GPU node`, "select nodes without GPUs", "pod update changing nodeSelector")
	must(t, "tenant points the gated CPU pod at a node without GPUs", patchSpec(ctx, t, tenant, pod, map[string]any{
		"nodeSelector": map[string]any{corev1.LabelHostname: "tenant-cpu-node"}}))
}

// TestTenantPrivilegedPod: a pod that reaches the node's devices around the device plugin
// is refused: a privileged container, SYS_ADMIN, a hostPath at /dev, the host's PID
// namespace; in an init container, an ephemeral container added later and a Job's pod
// template too.
func TestTenantPrivilegedPod(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)
	pod := func(name string, mod func(*corev1.PodSpec)) *corev1.Pod {
		p := tenantPod(name, 1)
		mod(&p.Spec)
		return p
	}
	privileged := func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}

	refused(t, "tenant privileged container", tenant.Create(ctx, pod("privileged", privileged)),
		`spec.containers[0] (name "main") securityContext.privileged`, "remove it and request GPUs")
	refused(t, "tenant SYS_ADMIN", tenant.Create(ctx, pod("sys-admin", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
	})), `spec.containers[0] (name "main") securityContext.capabilities.add SYS_ADMIN`, "remove the capability")
	refused(t, "tenant hostPath /dev", tenant.Create(ctx, pod("host-dev", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev"}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dev", MountPath: "/host-dev"}}
	})), `spec.volumes[0] (name "dev") hostPath "/dev"`, "remove the volume")
	refused(t, "tenant hostPID", tenant.Create(ctx, pod("host-pid", func(s *corev1.PodSpec) { s.HostPID = true })),
		"spec.hostPID", "remove hostPID")
	refused(t, "tenant privileged init container", tenant.Create(ctx, pod("privileged-init", func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
	})), `spec.initContainers[0] (name "setup") securityContext.privileged`)
	refused(t, "tenant Job with a privileged template", tenant.Create(ctx, tenantJob("privileged", pod("", privileged))),
		`spec.template.spec.containers[0] (name "main") securityContext.privileged`)
	logs := pod("host-logs", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/train"}}}}
	})
	must(t, "tenant pod with a hostPath elsewhere", tenant.Create(ctx, logs))
	logs.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
	refused(t, "tenant privileged ephemeral container", tenant.SubResource("ephemeralcontainers").Update(ctx, logs),
		`spec.ephemeralContainers[0] (name "debug") securityContext.privileged`)
}
