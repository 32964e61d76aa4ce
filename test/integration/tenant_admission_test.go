package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The tenant tests of admission beyond scheduling state: GPU delivery env, workloads
// moved to another queue or gang after admission, and pods that ask for no GPU.

const deliveryFix = "GPU delivery env is set by Tessera's device plugin; remove it"

func withEnv(p *corev1.Pod, name, value string) *corev1.Pod {
	p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	return p
}

// TestTenantEnvOverride: a GPU pod that sets the env the device plugin sets itself
// (NVIDIA_VISIBLE_DEVICES=all would show it every GPU of the node; the memory limits
// would lift its slice) is refused, in a container, an init container and a Job's pod
// template, and so is an envFrom prefix that produces such names. The same pod without
// them is admitted. Pod templates of other kinds and ephemeral containers are refused
// too.
func TestTenantEnvOverride(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)

	for _, env := range []struct{ name, value string }{
		{"NVIDIA_VISIBLE_DEVICES", "all"},
		{"NVIDIA_VISIBLE_DEVICES", "GPU-of-another-team"},
		{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=80G"},
		{"TESSERA_GPU_MEMORY_LIMIT_MIB", "81920"},
	} {
		pod := withEnv(tenantPod("env-override", 1), env.name, env.value)
		refused(t, "GPU pod with "+env.name+"="+env.value, tenant.Create(ctx, pod),
			`spec.containers[0] (name "main") env `+env.name, deliveryFix)
	}
	job := tenantJob("env-override", withEnv(tenantPod("", 1), "NVIDIA_VISIBLE_DEVICES", "all"))
	refused(t, "Job whose template sets NVIDIA_VISIBLE_DEVICES", tenant.Create(ctx, job),
		`spec.template.spec.containers[0] (name "main") env NVIDIA_VISIBLE_DEVICES`, deliveryFix)
	initPod := tenantPod("env-override-init", 1)
	initPod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox",
		Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}}}
	refused(t, "GPU pod whose init container sets NVIDIA_VISIBLE_DEVICES", tenant.Create(ctx, initPod),
		`spec.initContainers[0] (name "setup") env NVIDIA_VISIBLE_DEVICES`)
	prefixed := tenantPod("env-override-prefix", 1)
	prefixed.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "NVIDIA_",
		ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gpus"}}}}
	refused(t, "GPU pod importing env with prefix NVIDIA_", tenant.Create(ctx, prefixed),
		`spec.containers[0] (name "main") envFrom[0] prefix "NVIDIA_"`, "use another prefix")

	plain := withEnv(tenantPod("env-plain", 1), "CUDA_CACHE_DISABLE", "1")
	must(t, "GPU pod with other env", tenant.Create(ctx, plain))

	// The other template kinds and ephemeral containers.
	labels := map[string]string{"app": "env-override"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: withEnv(tenantPod("", 1), "TESSERA_GPU_MEMORY_LIMIT_MIB", "81920").Spec}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "env-override"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	refused(t, "Deployment whose template sets TESSERA_GPU_MEMORY_LIMIT_MIB", tenant.Create(ctx, deploy),
		`spec.template.spec.containers[0] (name "main") env TESSERA_GPU_MEMORY_LIMIT_MIB`)
	cron := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "env-override"},
		Spec: batchv1.CronJobSpec{Schedule: "@hourly", JobTemplate: batchv1.JobTemplateSpec{Spec: job.Spec}}}
	refused(t, "CronJob whose template sets NVIDIA_VISIBLE_DEVICES", tenant.Create(ctx, cron),
		`spec.jobTemplate.spec.template.spec.containers[0] (name "main") env NVIDIA_VISIBLE_DEVICES`)
	plain.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}}}}
	refused(t, "ephemeral container that sets NVIDIA_VISIBLE_DEVICES", tenant.SubResource("ephemeralcontainers").Update(ctx, plain),
		`spec.ephemeralContainers[0] (name "debug") env NVIDIA_VISIBLE_DEVICES`)
}

// TestTenantCPUPodGPUEnv: a pod that asks for no GPU but runs a CUDA image with
// NVIDIA_VISIBLE_DEVICES=all would see every GPU of any GPU node it lands on; it is
// refused like a GPU pod.
func TestTenantCPUPodGPUEnv(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	pod := withEnv(tenantPod("cpu-gpu-env", 0), "NVIDIA_VISIBLE_DEVICES", "all")
	pod.Spec.Containers[0].Image = "nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04"
	refused(t, "CPU pod with NVIDIA_VISIBLE_DEVICES=all", asTenant(t, e).Create(ctx, pod),
		`spec.containers[0] (name "main") env NVIDIA_VISIBLE_DEVICES`, deliveryFix)
}

// patchMeta merge-patches the object's metadata as c.
func patchMeta(ctx context.Context, t *testing.T, c client.Client, obj client.Object, meta map[string]any) error {
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, mustJSON(t, map[string]any{"metadata": meta})))
}

// TestTenantRelabelPendingPod: once admitted, a pod stays in its queue and its gang: a
// tenant with pods update may not move it to another team's queue (by Tessera's,
// Volcano's or Kueue's key), to another gang, change its gang size or its owners. Other
// updates pass, without reaching the webhook. A PodGroup's queue and size are fixed the
// same way.
func TestTenantRelabelPendingPod(t *testing.T) {
	e, ctx, tenant := tenantWithQueues(t)
	fix := "delete the Pod and create it again with the new value"

	pod := inQueue(tenantPod("relabel-pending", 1), "team-a")
	must(t, "create", tenant.Create(ctx, pod))
	for _, c := range []struct {
		what string
		meta map[string]any
		want string
	}{
		{"moves the pod to team-b's queue", map[string]any{"labels": map[string]any{tesserav1.LabelQueue: "team-b"}},
			`metadata.labels[tessera.dev/queue] (from "team-a" to "team-b") cannot change after the Pod is created`},
		{"names team-b the Volcano way", map[string]any{"annotations": map[string]any{tesserav1.VolcanoQueueName: "team-b"}},
			`metadata.annotations[scheduling.volcano.sh/queue-name] (from "" to "team-b")`},
		{"names team-b the Kueue way", map[string]any{"labels": map[string]any{tesserav1.KueueQueueName: "team-b"}},
			`metadata.labels[kueue.x-k8s.io/queue-name] (from "" to "team-b")`},
		{"moves the pod into another gang", map[string]any{"labels": map[string]any{tesserav1.LabelPodGroup: "team-b-gang"}},
			`metadata.labels[tessera.dev/pod-group] (from "" to "team-b-gang")`},
		{"names a gang the Volcano way", map[string]any{"annotations": map[string]any{tesserav1.VolcanoGroupName: "team-b-gang"}},
			`metadata.annotations[scheduling.k8s.io/group-name]`},
		{"changes the gang size", map[string]any{"annotations": map[string]any{tesserav1.AnnotationMinAvailable: "1"}},
			`metadata.annotations[tessera.dev/min-available]`},
		{"removes the queue label", map[string]any{"labels": map[string]any{tesserav1.LabelQueue: nil}},
			`metadata.labels[tessera.dev/queue] (from "team-a" to "")`},
	} {
		refused(t, "tenant "+c.what, patchMeta(ctx, t, tenant, pod.DeepCopy(), c.meta), c.want, fix)
	}
	owner := tenantJob("relabel-owner", tenantPod("", 0))
	must(t, "create a Job", tenant.Create(ctx, owner))
	refused(t, "tenant gives the pod an owner", patchMeta(ctx, t, tenant, pod.DeepCopy(), map[string]any{"ownerReferences": []any{
		map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": owner.Name, "uid": string(owner.UID), "controller": true}}}),
		"metadata.ownerReferences", fix)

	updates := webhookCalls(webhooks.KindPod, "UPDATE")
	must(t, "tenant updates other labels", patchMeta(ctx, t, tenant, pod.DeepCopy(), map[string]any{"labels": map[string]any{"app": "train"}}))
	if n := webhookCalls(webhooks.KindPod, "UPDATE"); n != updates {
		t.Errorf("a pod update that leaves queue, gang and owners alone was sent to the webhook (%v calls, was %v)", n, updates)
	}
	if got := get(ctx, t, e.Client, pod); got.Labels[tesserav1.LabelQueue] != "team-a" || got.Labels[tesserav1.KueueQueueName] != "" {
		t.Errorf("pod labels now %v", got.Labels)
	}

	pg := &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "relabel-pending"},
		Spec: tesserav1.PodGroupSpec{MinMember: 4, Queue: "team-a"}}
	must(t, "create a PodGroup", tenant.Create(ctx, pg))
	moved := pg.DeepCopy()
	moved.Spec.Queue = "team-b"
	refused(t, "tenant moves the PodGroup to team-b's queue", tenant.Update(ctx, moved),
		`spec.queue (from "team-a" to "team-b") cannot change after the PodGroup is created`, "delete the PodGroup")
	smaller := pg.DeepCopy()
	smaller.Spec.MinMember = 1
	refused(t, "tenant shrinks the gang", tenant.Update(ctx, smaller), "spec.minMember (from 4 to 1)")
	relabelled := pg.DeepCopy()
	relabelled.Labels = map[string]string{tesserav1.LabelQueue: "team-b"}
	refused(t, "tenant labels the PodGroup with team-b's queue", tenant.Update(ctx, relabelled), "metadata.labels[tessera.dev/queue]")
}

// TestTenantRelabelToMissingQueue: a running pod relabelled to a queue that does not
// exist would leave every queue's accounting; the update is refused.
func TestTenantRelabelToMissingQueue(t *testing.T) {
	e, ctx, tenant := tenantWithQueues(t)
	pod := inQueue(tenantPod("relabel-running", 1), "team-a")
	must(t, "create", tenant.Create(ctx, pod))
	must(t, "scheduler binds", bind(ctx, asScheduler(t, e), pod, "n1", nil))
	running := get(ctx, t, e.Client, pod)
	running.Status.Phase = corev1.PodRunning
	must(t, "the pod runs", e.Client.Status().Update(ctx, running))

	refused(t, "tenant relabels the running pod to a missing queue",
		patchMeta(ctx, t, tenant, pod.DeepCopy(), map[string]any{"labels": map[string]any{tesserav1.LabelQueue: "does-not-exist"}}),
		`metadata.labels[tessera.dev/queue] (from "team-a" to "does-not-exist")`, "delete the Pod and create it again")
	if got := get(ctx, t, e.Client, pod); got.Labels[tesserav1.LabelQueue] != "team-a" {
		t.Errorf("queue label now %q", got.Labels[tesserav1.LabelQueue])
	}
}

// TestTenantCPUPodProductionHigh: a pod that asks for no GPU still preempts through
// kube-scheduler with its class; a CPU pod or Job naming production-high is refused
// (the default queue does not allow it). Without a class, or with the default queue's
// batch-normal, it is admitted.
func TestTenantCPUPodProductionHigh(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)
	want := `priorityClassName "production-high" is not allowed in queue`

	high := tenantPod("cpu-high", 0)
	high.Spec.PriorityClassName = "production-high"
	refused(t, "tenant CPU pod with production-high", tenant.Create(ctx, high.DeepCopy()), want)
	refused(t, "tenant CPU Job with production-high", tenant.Create(ctx, tenantJob("cpu-high", high)), want)
	must(t, "tenant CPU pod without a class", tenant.Create(ctx, tenantPod("cpu-no-class", 0)))
}

// gpuNode creates a GPUNode (a node with GPUs, as the node agent publishes it) and waits
// until the webhook knows it: a CPU pod placed there is refused.
// tenantGPUNode is the tenant environment with the GPUNode tenantGPUNodeName, a
// context and the tenant's client.
func tenantGPUNode(t *testing.T) (*testenv.Env, context.Context, client.Client) {
	t.Helper()
	e := tenantEnv(t)
	gpuNode(t, e, tenantGPUNodeName)
	return e, testenv.Context(t, 60*time.Second), asTenant(t, e)
}

// tenantGPUNodeName is the GPU node of tenantGPUNode.
const tenantGPUNodeName = "tenant-gpu-node"

func gpuNode(t *testing.T, e *testenv.Env, name string) {
	t.Helper()
	ctx := testenv.Context(t, 30*time.Second)
	must(t, "GPUNode", client.IgnoreAlreadyExists(e.Client.Create(ctx, &tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}})))
	for {
		p := tenantPod("", 0)
		p.GenerateName, p.Spec.NodeName = "probe-", name
		if err := e.Client.Create(ctx, p, client.DryRunAll); err != nil && strings.Contains(err.Error(), "is a GPU node") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the webhook never learnt GPU node %s", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTenantCPUPodNodeNameOnGPUNode: a pod that asks for no GPU, created with
// spec.nodeName on a GPU node, would use the node outside every queue (and, with a CUDA
// image, its GPUs); it is refused, as a pod and in a Job's template. On a node without
// GPUs it is admitted.
func TestTenantCPUPodNodeNameOnGPUNode(t *testing.T) {
	_, ctx, tenant := tenantGPUNode(t)
	const node = tenantGPUNodeName

	pod := tenantPod("cpu-on-gpu-node", 0)
	pod.Spec.NodeName = node
	want := `spec.nodeName "` + node + `" is a GPU node`
	refused(t, "tenant CPU pod with spec.nodeName on a GPU node", tenant.Create(ctx, pod.DeepCopy()), want, "remove spec.nodeName")
	refused(t, "tenant CPU Job with spec.nodeName on a GPU node", tenant.Create(ctx, tenantJob("cpu-on-gpu-node", pod)), want)
	other := tenantPod("cpu-on-cpu-node", 0)
	other.Spec.NodeName = "tenant-cpu-node"
	must(t, "tenant CPU pod with spec.nodeName on a node without GPUs", tenant.Create(ctx, other))
}

// TestTenantCPUPodToleratesGPUTaint: GPU nodes are tainted nvidia.com/gpu (or
// tessera.dev/gpu) to keep pods without GPUs off them; a CPU pod or Job tolerating that
// taint, or every taint, is refused. A GPU pod may tolerate it.
func TestTenantCPUPodToleratesGPUTaint(t *testing.T) {
	e := tenantEnv(t)
	ctx := testenv.Context(t, 60*time.Second)
	tenant := asTenant(t, e)
	tolerating := func(name string, gpus int64, tol corev1.Toleration) *corev1.Pod {
		p := tenantPod(name, gpus)
		p.Spec.Tolerations = []corev1.Toleration{tol}
		return p
	}
	gpuTaint := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}

	refused(t, "tenant CPU pod tolerating nvidia.com/gpu", tenant.Create(ctx, tolerating("cpu-tolerates-gpu", 0, gpuTaint)),
		"spec.tolerations[0] tolerates the GPU nodes' taint nvidia.com/gpu", "remove the toleration")
	refused(t, "tenant CPU pod tolerating tessera.dev/gpu", tenant.Create(ctx, tolerating("cpu-tolerates-tessera", 0,
		corev1.Toleration{Key: "tessera.dev/gpu", Operator: corev1.TolerationOpEqual, Value: "present", Effect: corev1.TaintEffectNoSchedule})),
		"spec.tolerations[0] tolerates the GPU nodes' taint tessera.dev/gpu")
	refused(t, "tenant CPU pod tolerating every taint", tenant.Create(ctx, tolerating("cpu-tolerates-all", 0, everything)),
		"spec.tolerations[0] tolerates every taint")
	refused(t, "tenant CPU Job tolerating nvidia.com/gpu", tenant.Create(ctx, tenantJob("cpu-tolerates-gpu", tolerating("", 0, gpuTaint))),
		"tolerates the GPU nodes' taint nvidia.com/gpu")

	must(t, "tenant GPU pod tolerating nvidia.com/gpu", tenant.Create(ctx, tolerating("gpu-tolerates-gpu", 1, gpuTaint)))
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}
	must(t, "tenant CPU pod tolerating another taint", tenant.Create(ctx, tolerating("cpu-tolerates-not-ready", 0, notReady)))
}
