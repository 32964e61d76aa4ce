package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/webhooks"
)

// The workload controllers' custom resources against a real API server with their
// CRDs (hack/workload-crds.sh) and the kustomize base's webhook configurations: the
// webhook defaults and checks them as a whole when they are created.

const (
	mlNS       = "ml"
	mlQueue    = "train"                       // capability 32 nvidia.com/gpu
	mlAlias    = "scheduler-plugins-scheduler" // the webhook is told it means tessera
	mlNotAlias = "volcano"
)

// mlTenant is the tenant of namespace ml (tenantAccess: what tenants get in practice).
const mlTenant = "system:serviceaccount:" + mlNS + ":tenant"

// customWorkloadEnv starts an API server with the workload CRDs, serves the webhooks
// with mlAlias as an alias of tessera, and makes namespace ml, whose default queue is
// train, with its tenant (mlTenant).
func customWorkloadEnv(t *testing.T) *testenv.Env {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(root, "deploy", "kustomize", "base")
	opts, err := webhookOptions(filepath.Join(base, "webhook", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds, err := exec.Command(filepath.Join(root, "hack", "workload-crds.sh")).Output()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Errorf("the workload CRDs (hack/workload-crds.sh): %w", err))
	}
	opts.ExtraCRDDirs = []string{strings.TrimSpace(string(crds))}
	e, err := testenv.New(opts)
	if err != nil {
		testenv.SkipOrFail(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = e.Stop() })
	wh, err := serveWebhooks(ctx, e, webhooks.Options{SchedulerNameAliases: []string{mlAlias}})
	if err != nil {
		t.Fatal(err)
	}
	setup := testenv.Context(t, 60*time.Second)
	must(t, "priority classes", e.Apply(setup, filepath.Join(base, "priorityclasses.yaml")))
	must(t, "namespace", e.Client.Create(setup, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mlNS,
		Annotations: map[string]string{tesserav1.AnnotationQueue: mlQueue}}}))
	for _, o := range tenantAccess(mlNS) {
		must(t, "tenant access", e.Client.Create(setup, o))
	}
	awaitAllowed(setup, t, e, mlTenant, authorizationv1.ResourceAttributes{Namespace: mlNS, Verb: "create", Group: "jobset.x-k8s.io", Resource: "jobsets"})
	must(t, "webhook", waitWebhook(setup, e, wh))
	must(t, "queue", e.Client.Create(setup, &tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: mlQueue}, Spec: tesserav1.QueueSpec{
		Capability:             corev1.ResourceList{tesserav1.ResourceNvidiaGPU: resource.MustParse("32")},
		AllowedPriorityClasses: []string{"batch-normal", "offline-low"},
	}}))
	for {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: mlNS, GenerateName: "probe-", Labels: map[string]string{tesserav1.LabelQueue: mlQueue}},
			Spec: gpuPod(1).Spec}
		err := e.Client.Create(setup, probe, client.DryRunAll)
		if err == nil {
			break
		}
		if setup.Err() != nil {
			t.Fatalf("the webhook never took queue %s: %v", mlQueue, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return e
}

// gpuPod is a one-container pod asking gpus nvidia.com/gpu.
func gpuPod(gpus int64) *corev1.Pod {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{tesserav1.ResourceNvidiaGPU: q}}}}}}
}

// template is pod's spec as a pod template, with env set in its container.
func template(t *testing.T, pod *corev1.Pod, schedulerName string, env ...corev1.EnvVar) map[string]any {
	t.Helper()
	spec := pod.Spec.DeepCopy()
	spec.SchedulerName = schedulerName
	spec.Containers[0].Env = env
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{Spec: *spec})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func customWorkload(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(mlNS)
	u.SetName(name)
	return u
}

func jobSet(t *testing.T, name string, jobs, podsPerJob, gpus int64, env ...corev1.EnvVar) *unstructured.Unstructured {
	var replicated []any
	for i := range jobs {
		replicated = append(replicated, map[string]any{"name": fmt.Sprintf("workers-%d", i), "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"parallelism": podsPerJob, "completions": podsPerJob,
				"template": template(t, gpuPod(gpus), "", env...)}}})
	}
	return customWorkload("jobset.x-k8s.io/v1alpha2", "JobSet", name, map[string]any{"replicatedJobs": replicated})
}

// at is the map at path in obj; a numeric segment indexes a list.
func at(obj any, path ...string) map[string]any {
	for _, seg := range path {
		switch o := obj.(type) {
		case map[string]any:
			obj = o[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i >= len(o) {
				return nil
			}
			obj = o[i]
		}
	}
	m, _ := obj.(map[string]any)
	return m
}

// stored is u as the API server keeps it.
func stored(ctx context.Context, t *testing.T, c client.Client, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	must(t, "get "+u.GetName(), c.Get(ctx, client.ObjectKeyFromObject(u), got))
	return got
}

// defaulted checks that the stored object's queue label, and the queue label, scheduler
// name and priority class of the pod template at each of paths, were set, and that no
// gang size was stamped.
func defaulted(ctx context.Context, t *testing.T, c client.Client, u *unstructured.Unstructured, paths ...[]string) {
	t.Helper()
	got := stored(ctx, t, c, u)
	if q := got.GetLabels()[tesserav1.LabelQueue]; q != mlQueue {
		t.Errorf("%s: queue label %q, want %s", u.GetKind(), q, mlQueue)
	}
	for _, p := range paths {
		tm := at(got.Object, p...)
		labels, _, _ := unstructured.NestedStringMap(tm, "metadata", "labels")
		sched, _, _ := unstructured.NestedString(tm, "spec", "schedulerName")
		class, _, _ := unstructured.NestedString(tm, "spec", "priorityClassName")
		if labels[tesserav1.LabelQueue] != mlQueue || sched != tesserav1.SchedulerName || class != "batch-normal" {
			t.Errorf("%s %s: queue %q, schedulerName %q, priorityClassName %q; want %s, tessera, batch-normal",
				u.GetKind(), strings.Join(p, "."), labels[tesserav1.LabelQueue], sched, class, mlQueue)
		}
	}
	if b, _ := json.Marshal(got.Object); strings.Contains(string(b), tesserav1.AnnotationMinAvailable) {
		t.Errorf("%s: a gang size was stamped: %s", u.GetKind(), b)
	}
}

// TestTenantCustomWorkloadAdmission: the tenant's JobSets, RayClusters, RayJobs,
// LeaderWorkerSets, PyTorchJobs and MPIJobs are defaulted in every pod template when
// created; one whose pods together need more GPUs than its queue may ever hold is
// refused with the figure, and GPU delivery env or privileged access to the node's
// devices in any template is refused on create and update. A gang mode's scheduler name
// is rewritten where it is an alias, refused on GPU pods where it is not; a JobSet's
// child Job gets no gang size of its own. Every request is the tenant's.
func TestTenantCustomWorkloadAdmission(t *testing.T) {
	e := customWorkloadEnv(t)
	ctx := testenv.Context(t, 90*time.Second)
	c := as(t, e, mlTenant)
	env := corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}

	refused(t, "JobSet of 2 x 4 pods x 8 GPUs in a queue of 32", c.Create(ctx, jobSet(t, "too-big", 2, 4, 8)),
		`gang of 8 pod(s) needs 64 nvidia.com/gpu but queue "train" has a capability of 32`, "lower the replicas or the per-pod request")
	js := jobSet(t, "fits", 2, 2, 8)
	must(t, "JobSet of 2 x 2 pods x 8 GPUs", c.Create(ctx, js))
	defaulted(ctx, t, c, js, []string{"spec", "replicatedJobs", "0", "template", "spec", "template"},
		[]string{"spec", "replicatedJobs", "1", "template", "spec", "template"})
	refused(t, "JobSet whose template sets NVIDIA_VISIBLE_DEVICES", c.Create(ctx, jobSet(t, "env", 1, 1, 1, env)),
		`spec.replicatedJobs[0].template.spec.template.spec.containers[0] (name "main") env NVIDIA_VISIBLE_DEVICES`)
	privileged := jobSet(t, "privileged", 1, 1, 1)
	at(privileged.Object, "spec", "replicatedJobs", "0", "template", "spec", "template", "spec", "containers", "0")["securityContext"] = map[string]any{"privileged": true}
	refused(t, "JobSet whose template is privileged", c.Create(ctx, privileged),
		`spec.replicatedJobs[0].template.spec.template.spec.containers[0] (name "main") securityContext.privileged`)

	// A Ray cluster in KubeRay's coscheduling gang mode: the alias becomes tessera in
	// the CPU head's template too. Another gang mode's name is refused, naming the settings.
	ray := func(schedulerName string) map[string]any {
		head := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "rayproject/ray"}}}}
		return map[string]any{
			"headGroupSpec": map[string]any{"template": template(t, head, schedulerName)},
			"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(2), "minReplicas": int64(2), "maxReplicas": int64(4),
				"template": template(t, gpuPod(8), schedulerName)}},
		}
	}
	rayPaths := func(spec ...string) [][]string {
		return [][]string{slices.Concat(spec, []string{"headGroupSpec", "template"}), slices.Concat(spec, []string{"workerGroupSpecs", "0", "template"})}
	}
	rc := customWorkload("ray.io/v1", "RayCluster", "coscheduled", ray(mlAlias))
	must(t, "RayCluster naming "+mlAlias, c.Create(ctx, rc))
	defaulted(ctx, t, c, rc, rayPaths("spec")...)
	refused(t, "RayCluster naming "+mlNotAlias, c.Create(ctx, customWorkload("ray.io/v1", "RayCluster", "volcano", ray(mlNotAlias))),
		`spec.schedulerName "volcano"`, "webhook.schedulerNameAliases (--scheduler-name-alias)", "webhook.allowedSchedulers (--allowed-scheduler)")
	rj := customWorkload("ray.io/v1", "RayJob", "job", map[string]any{"entrypoint": "python train.py", "rayClusterSpec": ray("")})
	must(t, "RayJob", c.Create(ctx, rj))
	defaulted(ctx, t, c, rj, rayPaths("spec", "rayClusterSpec")...)

	// Updates are checked for GPU delivery env too.
	update := stored(ctx, t, c, rc)
	at(update.Object, "spec", "workerGroupSpecs", "0", "template", "spec", "containers", "0")["env"] = []any{map[string]any{"name": env.Name, "value": env.Value}}
	refused(t, "RayCluster update that sets NVIDIA_VISIBLE_DEVICES", c.Update(ctx, update),
		`spec.workerGroupSpecs[0].template.spec.containers[0] (name "main") env NVIDIA_VISIBLE_DEVICES`)

	// A LeaderWorkerSet without a leader template makes its leaders from the worker's.
	lws := func(name string, replicas, size int64) *unstructured.Unstructured {
		return customWorkload("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", name, map[string]any{"replicas": replicas,
			"leaderWorkerTemplate": map[string]any{"size": size, "workerTemplate": template(t, gpuPod(8), "")}})
	}
	inference := lws("inference", 2, 2)
	must(t, "LeaderWorkerSet of 2 groups of 2 pods x 8 GPUs", c.Create(ctx, inference))
	defaulted(ctx, t, c, inference, []string{"spec", "leaderWorkerTemplate", "workerTemplate"})
	if at(stored(ctx, t, c, inference).Object, "spec", "leaderWorkerTemplate", "leaderTemplate") != nil {
		t.Error("the webhook made a leader template")
	}
	// Each group is a gang: 5 groups of one pod fit a queue of 32 GPUs, one group of 5 does not.
	must(t, "LeaderWorkerSet of 5 groups of 1 pod x 8 GPUs", c.Create(ctx, lws("many", 5, 1)))
	refused(t, "LeaderWorkerSet of 1 group of 5 pods x 8 GPUs", c.Create(ctx, lws("too-big", 1, 5)), "gang of 5 pod(s) needs 40 nvidia.com/gpu")
	hostPID := lws("host-pid", 1, 1)
	at(hostPID.Object, "spec", "leaderWorkerTemplate", "workerTemplate", "spec")["hostPID"] = true
	refused(t, "LeaderWorkerSet whose template shares the host's PID namespace", c.Create(ctx, hostPID),
		"spec.leaderWorkerTemplate.workerTemplate.spec.hostPID")

	pt := customWorkload("kubeflow.org/v1", "PyTorchJob", "ddp", map[string]any{"pytorchReplicaSpecs": map[string]any{
		"Master": map[string]any{"replicas": int64(1), "template": template(t, gpuPod(8), "")},
		"Worker": map[string]any{"replicas": int64(3), "template": template(t, gpuPod(8), "")},
	}})
	must(t, "PyTorchJob of 4 x 8 GPUs", c.Create(ctx, pt))
	defaulted(ctx, t, c, pt, []string{"spec", "pytorchReplicaSpecs", "Master", "template"}, []string{"spec", "pytorchReplicaSpecs", "Worker", "template"})
	launcher := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "mpi"}}}}
	mpi := func(name string, env ...corev1.EnvVar) *unstructured.Unstructured {
		return customWorkload("kubeflow.org/v2beta1", "MPIJob", name, map[string]any{"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"template": template(t, launcher, "")},
			"Worker":   map[string]any{"replicas": int64(4), "template": template(t, gpuPod(8), "", env...)},
		}})
	}
	allreduce := mpi("allreduce")
	must(t, "MPIJob of 4 x 8 GPUs", c.Create(ctx, allreduce))
	defaulted(ctx, t, c, allreduce, []string{"spec", "mpiReplicaSpecs", "Launcher", "template"}, []string{"spec", "mpiReplicaSpecs", "Worker", "template"})
	refused(t, "MPIJob whose worker sets NVIDIA_VISIBLE_DEVICES", c.Create(ctx, mpi("env", env)),
		`spec.mpiReplicaSpecs.Worker.template.spec.containers[0] (name "main") env NVIDIA_VISIBLE_DEVICES`)

	// Pods: the alias is rewritten; a gang mode's name that is not an alias is refused on
	// a GPU pod.
	aliased := gpuPod(1)
	aliased.Namespace, aliased.Name, aliased.Spec.SchedulerName = mlNS, "aliased", mlAlias
	must(t, "GPU pod naming "+mlAlias, c.Create(ctx, aliased))
	if aliased.Spec.SchedulerName != tesserav1.SchedulerName || aliased.Labels[tesserav1.LabelQueue] != mlQueue {
		t.Errorf("pod naming %s: schedulerName %q, labels %v; want tessera and the queue", mlAlias, aliased.Spec.SchedulerName, aliased.Labels)
	}
	notAliased := gpuPod(1)
	notAliased.Namespace, notAliased.Name, notAliased.Spec.SchedulerName = mlNS, "not-aliased", mlNotAlias
	refused(t, "GPU pod naming "+mlNotAlias, c.Create(ctx, notAliased), `spec.schedulerName "volcano"`, "webhook.schedulerNameAliases")

	// A JobSet's child Job is a part of the JobSet's gang: no gang size of its own, where
	// a plain Job gets one.
	for _, j := range []struct {
		name   string
		labels map[string]string
		want   string
	}{{"fits-workers-0", map[string]string{"jobset.sigs.k8s.io/jobset-name": "fits"}, ""}, {"plain", nil, "2"}} {
		job := tenantJob(j.name, gpuPod(1))
		job.Namespace, job.Labels, job.Spec.Parallelism = mlNS, j.labels, ptr.To(int32(2))
		must(t, "Job "+j.name, c.Create(ctx, job))
		if got := job.Annotations[tesserav1.AnnotationMinAvailable]; got != j.want {
			t.Errorf("Job %s: %s=%q, want %q", j.name, tesserav1.AnnotationMinAvailable, got, j.want)
		}
	}
}
