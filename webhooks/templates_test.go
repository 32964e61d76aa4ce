package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/rego"
)

// customObj is a custom workload of kind, w in namespace team, with spec.
func customObj(kind string, spec map[string]any) *unstructured.Unstructured {
	g := gvk(kind)
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(g.Group + "/" + g.Version)
	u.SetKind(kind)
	u.SetNamespace("team")
	u.SetName("w")
	return u
}

// podTemplate is pod's labels and spec as a pod template of an unstructured object.
func podTemplate(t testing.TB, pod *corev1.Pod) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type customExample struct {
	name  string
	obj   *unstructured.Unstructured
	pods  int64    // every pod of every template
	gang  int64    // the pods one gang holds (gangSize), or its declared minimum
	gpus  int64    // nvidia.com/gpu the gang needs at least
	paths []string // the templates, as the input names them
}

// customExamples are one or two of each kind of CustomWorkloads: CPU-only head,
// driver, launcher and leader templates beside GPU workers.
func customExamples(t testing.TB) []customExample {
	gpu := func(n int64) map[string]any { return podTemplate(t, apitest.MakePod("", "team").NvidiaGPU(n).Obj()) }
	cpu := func() map[string]any {
		return podTemplate(t, apitest.MakePod("", "team").RequestAndLimit(corev1.ResourceCPU, "1").Obj())
	}
	ray := func() map[string]any {
		return map[string]any{
			"headGroupSpec": map[string]any{"template": cpu()},
			"workerGroupSpecs": []any{
				// KubeRay raises replicas to minReplicas; a host is a pod.
				map[string]any{"groupName": "big", "replicas": int64(1), "minReplicas": int64(2), "numOfHosts": int64(2), "template": gpu(4)},
				map[string]any{"groupName": "small", "replicas": int64(1), "template": gpu(1)},
			},
		}
	}
	// An autoscaling cluster: its gang is the head and minReplicas workers; KubeRay
	// lowers replicas to maxReplicas and makes none for a suspended group.
	autoscaling := map[string]any{
		"enableInTreeAutoscaling": true,
		"headGroupSpec":           map[string]any{"template": cpu()},
		"workerGroupSpecs": []any{
			map[string]any{"groupName": "gpu", "replicas": int64(9), "minReplicas": int64(2), "maxReplicas": int64(4), "template": gpu(8)},
			map[string]any{"groupName": "parked", "replicas": int64(2), "suspend": true, "template": gpu(8)},
		},
	}
	workers := func(replicas, parallelism int64) map[string]any {
		return map[string]any{"name": "workers", "replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"parallelism": parallelism, "template": gpu(8)}}}
	}
	declared := customObj(KindJobSet, map[string]any{"replicatedJobs": []any{workers(2, 4),
		map[string]any{"name": "driver", "template": map[string]any{"spec": map[string]any{"template": cpu()}}}}})
	declared.SetAnnotations(map[string]string{tesserav1.AnnotationMinAvailable: "3"})
	return []customExample{
		{"JobSet", customObj(KindJobSet, map[string]any{"replicatedJobs": []any{workers(2, 4),
			map[string]any{"name": "driver", "template": map[string]any{"spec": map[string]any{"template": cpu()}}},
		}}), 9, 9, 64, []string{"spec.replicatedJobs[0].template.spec.template", "spec.replicatedJobs[1].template.spec.template"}},
		// The least 3 of its pods ask: the driver and two workers.
		{"JobSet declaring its gang's size", declared, 9, 3, 16,
			[]string{"spec.replicatedJobs[0].template.spec.template", "spec.replicatedJobs[1].template.spec.template"}},
		{"JobSet whose Jobs complete before all run", customObj(KindJobSet, map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "workers", "template": map[string]any{"spec": map[string]any{"parallelism": int64(4), "completions": int64(2), "template": gpu(8)}}},
		}}), 2, 2, 16, []string{"spec.replicatedJobs[0].template.spec.template"}},
		{"RayCluster", customObj(KindRayCluster, ray()), 6, 6, 17,
			[]string{"spec.headGroupSpec.template", "spec.workerGroupSpecs[0].template", "spec.workerGroupSpecs[1].template"}},
		{"RayCluster that autoscales", customObj(KindRayCluster, autoscaling), 5, 3, 16,
			[]string{"spec.headGroupSpec.template", "spec.workerGroupSpecs[0].template", "spec.workerGroupSpecs[1].template"}},
		// The submitter is a gang of its own.
		{"RayJob", customObj(KindRayJob, map[string]any{"rayClusterSpec": ray(), "submitterPodTemplate": cpu()}), 7, 6, 17,
			[]string{"spec.rayClusterSpec.headGroupSpec.template", "spec.rayClusterSpec.workerGroupSpecs[0].template",
				"spec.rayClusterSpec.workerGroupSpecs[1].template", "spec.submitterPodTemplate"}},
		// Each group of 4 is a gang: 2 × 32 GPUs in all, 32 per gang.
		{"LeaderWorkerSet, leaders from the worker template", customObj(KindLeaderWorkerSet, map[string]any{"replicas": int64(2),
			"leaderWorkerTemplate": map[string]any{"size": int64(4), "workerTemplate": gpu(8)}}), 8, 4, 32,
			[]string{"spec.leaderWorkerTemplate.workerTemplate", "spec.leaderWorkerTemplate.workerTemplate"}},
		{"LeaderWorkerSet with a leader template", customObj(KindLeaderWorkerSet, map[string]any{"replicas": int64(2),
			"leaderWorkerTemplate": map[string]any{"size": int64(4), "leaderTemplate": cpu(), "workerTemplate": gpu(8)}}), 8, 4, 24,
			[]string{"spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate"}},
		{"LeaderWorkerSet of small groups", customObj(KindLeaderWorkerSet, map[string]any{"replicas": int64(4),
			"leaderWorkerTemplate": map[string]any{"size": int64(2), "workerTemplate": gpu(8)}}), 8, 2, 16,
			[]string{"spec.leaderWorkerTemplate.workerTemplate", "spec.leaderWorkerTemplate.workerTemplate"}},
		{"PyTorchJob", customObj(KindPyTorchJob, map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Worker": map[string]any{"replicas": int64(3), "template": gpu(8)},
			"Master": map[string]any{"replicas": int64(1), "template": gpu(8)},
		}}), 4, 4, 32, []string{"spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template"}},
		{"PyTorchJob with a minAvailable", customObj(KindPyTorchJob, map[string]any{
			"runPolicy": map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(2)}},
			"pytorchReplicaSpecs": map[string]any{
				"Worker": map[string]any{"replicas": int64(3), "template": gpu(8)},
				"Master": map[string]any{"replicas": int64(1), "template": gpu(8)},
			}}), 4, 2, 16, []string{"spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template"}},
		{"MPIJob", customObj(KindMPIJob, map[string]any{"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"template": cpu()},
			"Worker":   map[string]any{"replicas": int64(2), "template": gpu(8)},
		}}), 3, 3, 16, []string{"spec.mpiReplicaSpecs.Launcher.template", "spec.mpiReplicaSpecs.Worker.template"}},
		// The launcher is made once the workers run: they are the gang.
		{"MPIJob waiting for its workers", customObj(KindMPIJob, map[string]any{"launcherCreationPolicy": "WaitForWorkersReady",
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{"template": gpu(1)},
				"Worker":   map[string]any{"replicas": int64(3), "template": gpu(8)},
			}}), 4, 3, 24, []string{"spec.mpiReplicaSpecs.Launcher.template", "spec.mpiReplicaSpecs.Worker.template"}},
	}
}

// The input of a custom workload counts every pod of every template.
func TestCustomWorkloadInput(t *testing.T) {
	for _, ex := range customExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			doc, err := BuildInput(request(t, admissionv1.Create, ex.obj), nil)
			if err != nil {
				t.Fatal(err)
			}
			w := doc["workload"].(map[string]any)
			if w["replicas"] != ex.pods {
				t.Errorf("replicas %v, want %d", w["replicas"], ex.pods)
			}
			if got := w["gangRequests"].(map[string]any)["nvidia.com/gpu"]; got != ex.gpus {
				t.Errorf("gangRequests nvidia.com/gpu %v, want %d", got, ex.gpus)
			}
			if size, ok := w["minAvailable"]; !ok {
				size = w["gangSize"]
				if size != ex.gang {
					t.Errorf("gangSize %v, want %d", size, ex.gang)
				}
			} else if size != ex.gang {
				t.Errorf("minAvailable %v, want %d", size, ex.gang)
			}
			var paths []string
			var pods int64
			for _, tm := range w["templates"].([]any) {
				paths = append(paths, tm.(map[string]any)["path"].(string))
				pods += tm.(map[string]any)["replicas"].(int64)
			}
			if !slices.Equal(paths, ex.paths) || pods != ex.pods {
				t.Errorf("templates %v of %d pods, want %v", paths, pods, ex.paths)
			}
		})
	}
}

// admitCreate runs a create through both handlers as the API server does: the mutating
// handler's patch applied, then the validating handler on the result.
func admitCreate(t *testing.T, mut, val *Handler, obj runtime.Object) (patched []byte, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	req := request(t, admissionv1.Create, obj)
	m := mut.Admit(context.Background(), req)
	if !m.Allowed {
		return req.Object.Raw, m
	}
	if len(m.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(m.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if req.Object.Raw, err = p.Apply(req.Object.Raw); err != nil {
			t.Fatalf("patch does not apply: %v", err)
		}
		if again := mut.Admit(context.Background(), req); len(again.Patch) != 0 {
			t.Fatalf("second pass patched again: %s", again.Patch)
		}
	}
	return req.Object.Raw, val.Admit(context.Background(), req)
}

// A custom workload's defaults land on it and in every pod template; none stamps a gang
// size. One that can never fit its queue is denied, naming the queue and the figure.
func TestCustomWorkloadAdmission(t *testing.T) {
	mut, val := handlers(t)
	for _, ex := range customExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			raw, resp := admitCreate(t, mut, val, ex.obj)
			var obj map[string]any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			if q := lookupPath(obj, "metadata.labels").(map[string]any)[tesserav1.LabelQueue]; q != "train" {
				t.Errorf("queue label %v, want train", q)
			}
			for _, tm := range templatesOf(ex.obj.GetKind(), obj, false) {
				labels, _ := lookupPath(tm.tmpl, "metadata.labels").(map[string]any)
				if labels[tesserav1.LabelQueue] != "train" || lookupPath(tm.tmpl, "spec.schedulerName") != "tessera" ||
					lookupPath(tm.tmpl, "spec.priorityClassName") != "batch-normal" {
					t.Errorf("%s not defaulted: %v", tm.path, tm.tmpl)
				}
			}
			if strings.Contains(string(raw), tesserav1.AnnotationMinAvailable) != (ex.obj.GetAnnotations()[tesserav1.AnnotationMinAvailable] != "") {
				t.Errorf("a gang size was stamped: %s", raw)
			}
			// The queue train has a capability of 16 nvidia.com/gpu.
			if ex.gpus <= 16 {
				if !resp.Allowed {
					t.Fatalf("denied: %v", resp.Result)
				}
				return
			}
			want := fmt.Sprintf(`gang of %d pod(s) needs %d nvidia.com/gpu but queue "train" has a capability of 16; `+
				"lower the replicas or the per-pod request", ex.gang, ex.gpus)
			if resp.Allowed || !strings.Contains(resp.Result.Message, want) {
				t.Fatalf("allowed %v, %v; want denied: %s", resp.Allowed, resp.Result, want)
			}
		})
	}
}

// Aliases of tessera are rewritten in pods and in every pod template, GPU or not; a gang
// mode's scheduler name that is neither an alias nor allowed is refused on GPU workloads
// and warned of on the others Tessera manages.
func TestSchedulerNameAliases(t *testing.T) {
	e := defaultEngine(t)
	c := settingsCluster(t, Settings{SchedulerNameAliases: []string{"volcano"}})
	mut := &Handler{Mutating: true, ValidateOnMutate: map[string]bool{KindPod: true}, Evaluator: e, Cluster: c}
	val := &Handler{Evaluator: e, Cluster: c}

	cpu := apitest.MakePod("cpu", "plain").RequestAndLimit(corev1.ResourceCPU, "1").SchedulerName("volcano").Obj()
	resp := mut.Admit(context.Background(), request(t, admissionv1.Create, cpu))
	if got := patchOf(t, resp); !resp.Allowed || got["add /spec/schedulerName"] != nil || got["replace /spec/schedulerName"] != "tessera" {
		t.Errorf("CPU pod naming an alias: allowed %v, patch %v; want schedulerName replaced by tessera", resp.Allowed, got)
	}

	var ray *unstructured.Unstructured
	for _, ex := range customExamples(t) {
		if ex.name == "RayCluster" {
			ray = ex.obj
		}
	}
	for _, tm := range templatesOf(KindRayCluster, ray.Object, false) {
		tm.tmpl["spec"].(map[string]any)["schedulerName"] = "volcano"
	}
	raw, resp := admitCreate(t, mut, val, ray)
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	for _, tm := range templatesOf(KindRayCluster, obj, false) {
		if s := lookupPath(tm.tmpl, "spec.schedulerName"); s != "tessera" {
			t.Errorf("%s: schedulerName %v, want tessera", tm.path, s)
		}
	}
	if resp.Result == nil || !strings.Contains(resp.Result.Message, "needs 17 nvidia.com/gpu") {
		t.Errorf("the aliased RayCluster is decided as Tessera's: %v", resp.Result)
	}

	gpu := apitest.MakePod("gpu", "team").NvidiaGPU(1).SchedulerName("scheduler-plugins-scheduler").Obj()
	resp = mut.Admit(context.Background(), request(t, admissionv1.Create, gpu))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "webhook.schedulerNameAliases (--scheduler-name-alias)") {
		t.Errorf("GPU pod naming a gang mode's scheduler: allowed %v, %v; want denied naming the alias setting", resp.Allowed, resp.Result)
	}
	managed := apitest.MakePod("cpu", "team").RequestAndLimit(corev1.ResourceCPU, "1").SchedulerName("scheduler-plugins-scheduler").Obj()
	resp = mut.Admit(context.Background(), request(t, admissionv1.Create, managed))
	if !resp.Allowed || !strings.Contains(strings.Join(resp.Warnings, "\n"), "the pods wait for that scheduler, not tessera") {
		t.Errorf("managed CPU pod naming a gang mode's scheduler: allowed %v, warnings %q; want a warning", resp.Allowed, resp.Warnings)
	}
}

func TestSettingsValidate(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{SchedulerNameAliases: []string{"volcano", "scheduler-plugins-scheduler"}, AllowedSchedulers: []string{"yunikorn"}}, ""},
		{Settings{SchedulerNameAliases: []string{""}}, `--scheduler-name-alias=""`},
		{Settings{SchedulerNameAliases: []string{"tessera"}}, `--scheduler-name-alias="tessera"`},
		{Settings{SchedulerNameAliases: []string{"default-scheduler"}}, "every pod that names no scheduler"},
		{Settings{SchedulerNameAliases: []string{"volcano"}, AllowedSchedulers: []string{"volcano"}}, `"volcano" is in both`},
	} {
		err := c.s.Validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
}

// The default policies decide on every custom workload the webhooks admit.
func TestDefaultPoliciesTargetCustomWorkloads(t *testing.T) {
	set, err := rego.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Policies {
		if p.Name == "queues" {
			continue
		}
		for _, k := range CustomWorkloads {
			if !slices.Contains(p.Targets, k) {
				t.Errorf("default policy %s does not target %s", p.Name, k)
			}
		}
	}
}

// The shipped webhook configurations send every custom workload's create to the mutating
// webhook, and its creates and updates to the validating one (policies and EnvGuard).
func TestWebhookConfigurationCoversCustomWorkloads(t *testing.T) {
	mutating, validating := shippedConfigs(t)
	covers := func(rules []admissionregistrationv1.RuleWithOperations, r metav1.GroupVersionResource, op admissionregistrationv1.OperationType) bool {
		for _, rule := range rules {
			if slices.Contains(rule.APIGroups, r.Group) && slices.Contains(rule.APIVersions, r.Version) &&
				slices.Contains(rule.Resources, r.Resource) && slices.Contains(rule.Operations, op) {
				return true
			}
		}
		return false
	}
	var templates []admissionregistrationv1.RuleWithOperations
	for _, h := range validating.Webhooks {
		if h.Name == "pod-templates.tessera.dev" {
			templates = h.Rules
		}
	}
	for _, kind := range CustomWorkloads {
		r := customResources[kind]
		if len(mutating.Webhooks) != 1 || !covers(mutating.Webhooks[0].Rules, r, admissionregistrationv1.Create) {
			t.Errorf("mutate.tessera.dev does not send CREATE %s", r)
		}
		for _, op := range []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update} {
			if !covers(templates, r, op) {
				t.Errorf("pod-templates.tessera.dev does not send %s %s", op, r)
			}
		}
	}
}
