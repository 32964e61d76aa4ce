package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/internal/golden"
	"github.com/tessera-gpu/tessera/policy"
)

// policyInputReference is docs/reference/policy-input.md, generated from the code that
// builds the policies' input and applies their mutations.
const policyInputReference = "../docs/reference/policy-input.md"

// TestPolicyInputReference keeps docs/reference/policy-input.md equal to what BuildInput,
// ClusterDoc and the patcher do: the input document of each kind, built from an example
// request, input.cluster, and where each mutation key lands. Regenerate it with `make
// generate` (TESSERA_UPDATE_REFERENCE=1).
func TestPolicyInputReference(t *testing.T) {
	golden.Check(t, policyInputReference, []byte(renderPolicyInputReference(t)))
}

func renderPolicyInputReference(t *testing.T) string {
	var b bytes.Buffer
	b.WriteString(`# Policy input reference

<!-- Generated from webhooks/ by ` + "`make generate`" + `; do not edit. -->

An admission policy is a Rego package below ` + "`tessera`" + ` that defines any of three rules:

| rule | value | effect |
|---|---|---|
| ` + "`" + policy.RuleMutate + "`" + ` | an object of workload fields to set | the webhook patches the object (table below); later policies see the new values in ` + "`input.workload`" + ` |
| ` + "`" + policy.RuleDeny + "`" + ` | a set of messages | the request is rejected with them (or only warned of or recorded, by the policy's enforcement: deny, warn, dryrun) |
| ` + "`" + policy.RuleWarn + "`" + ` | a set of messages | the request is admitted with them as warnings |

Quantities are numbers: whole values as integers, fractions as decimals (CPU ` + "`0.5`" + `), ` + "`tessera.dev/gpu-memory`" + ` in MiB as declared. Fields a workload does not have are left out, so read them with ` + "`object.get`" + `. The default policies are in [rego/policies](../../rego/policies); how a policy reaches the cluster: [../operating.md](../operating.md).

## Mutations

Where each key of ` + "`mutate`" + ` lands, per kind; ` + "`T`" + ` is each pod template of a custom workload (next section). A key a kind does not have is left alone (logged at -v 1).

| key | Pod | Job | PodGroup | custom workloads |
|---|---|---|---|---|
`)
	keys := slices.Collect(maps.Keys(templateFields))
	for _, byKey := range fields {
		for k := range byKey {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "| `%s` |", k)
		for _, kind := range []string{KindPod, KindJob, KindPodGroup, KindJobSet} {
			own, inTemplates := targets(kind, k)
			var paths []string
			for _, tg := range own {
				paths = append(paths, "`"+strings.Join(tg.path, ".")+"`")
			}
			for _, site := range podTemplates[kind] {
				prefix := site.path
				if isCustomWorkload[kind] {
					prefix = "T"
				}
				for _, tg := range inTemplates {
					paths = append(paths, "`"+join(prefix, strings.Join(tg.path, "."))+"`")
				}
			}
			if len(paths) == 0 {
				paths = []string{"—"}
			}
			fmt.Fprintf(&b, " %s |", strings.Join(slices.Compact(paths), ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| `%s` | `true` rewrites `%s` into `%s` in every container's requests and limits | the same in the pod template | — | the same in every pod template |\n",
		MutateGPURewrite, tesserav1.ResourceNvidiaGPU, tesserav1.ResourceGPU)

	b.WriteString("\n## Custom workloads\n\n" +
		"The workload controllers' custom resources are decided on when they are created, as a whole. Their input " +
		"(example below) has one entry of `templates` per pod template, with the pods it makes; `*` is every element " +
		"of a list or member of a map, and the counts of a template below one are read in that element.\n\n| kind | pod templates `T` | pods per template |\n|---|---|---|\n")
	for _, kind := range CustomWorkloads {
		for i, site := range podTemplates[kind] {
			name := ""
			if i == 0 {
				name = kind
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", name, site.path, describePods(site))
		}
	}

	b.WriteString("\n## The input document\n\n" +
		"`input` holds `operation` (CREATE, UPDATE), `kind`, `namespace` (name, labels, annotations), " +
		"`user` (the requester's username and groups), `workload` (the object, by kind, below), " +
		"`recommendation` (a GPU pod of a queue that right-sizes, section input.recommendation) and " +
		"`cluster` (shared by all requests, last section). Each example is the input the webhook builds " +
		"for the object shown.\n")
	for _, ex := range policyInputExamples() {
		req := referenceRequest(t, ex.obj)
		doc, err := BuildInput(req, &Namespace{Name: req.Namespace, Labels: map[string]string{"team": "vision"}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n```json\n%s\n```\n", ex.title, ex.note, indentJSON(t, doc))
	}

	writeRecommendationReference(t, &b)

	cluster, _ := ClusterDoc(
		[]tesserav1.Queue{*apitest.MakeQueue("train").Deserved(tesserav1.ResourceGPU, "16").Capability(tesserav1.ResourceGPU, "32").
			Annotation(AnnotationPriorityClass, "batch-normal").Annotation(AnnotationRuntime, "long").Obj()},
		[]tesserav1.GPUNode{*apitest.MakeGPUNode("gpu-1").GPUs(8, "NVIDIA-A100-SXM4-80GB", 81920).Obj()},
		testClasses())
	cluster["settings"] = Settings{SchedulerUsers: []string{"system:serviceaccount:tessera-system:tessera-scheduler"}}.doc()
	fmt.Fprintf(&b, "\n## input.cluster\n\n"+
		"The cluster's queues (with the `%s` and `%s` annotations), the largest GPU's memory and the healthy "+
		"GPUs over all GPUNodes, the GPU nodes by name, the PriorityClasses (and `defaultPriorityClass`, the "+
		"`globalDefault` one, when there is one), and the webhook's settings (`--scheduler-user`, "+
		"`--allowed-scheduler`, `--scheduler-name-alias`). One queue and one 8-GPU node:\n\n```json\n%s\n```\n",
		AnnotationPriorityClass, AnnotationRuntime, indentJSON(t, cluster))
	return b.String()
}

// writeRecommendationReference describes input.recommendation, with the document
// the webhook builds for a one-GPU pod of an Auto queue whose workload has a
// recommendation.
func writeRecommendationReference(t *testing.T, b *bytes.Buffer) {
	queue := apitest.MakeQueue("train").Obj()
	queue.Spec.GPURightSizing = &tesserav1.GPURightSizing{Mode: tesserav1.RightSizingAuto}
	cluster, err := NewStaticCluster([]tesserav1.Queue{*queue}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Mutating: true, Cluster: cluster, Profiles: StaticProfiles{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "vision", Name: "job-resnet"},
		Spec:       tesserav1.GPUProfileSpec{Workload: "Job/resnet"},
		Status: tesserav1.GPUProfileStatus{Runs: 12, MaxPeakMiB: 18120, RecommendedMiB: 20480,
			Reason: "p95 of 12 runs' peaks (17612 MiB) + 15%, rounded up"},
	}}}
	pod := apitest.MakePod("resnet-0", "vision").Queue("train").ControlledBy("Job", "resnet").GPU(1).Obj()
	pod.Spec.Containers[0].Name = "trainer"
	req := referenceRequest(t, pod)
	data, _ := cluster.Cluster(context.Background())
	candidate, err := h.rightSizingCandidate(req, data)
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := h.input(context.Background(), req, &Namespace{Name: "vision"}, data, candidate, "")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(b, "\n## input.recommendation\n\n"+
		"A GPU pod created in a queue whose `spec.gpuRightSizing.mode` is `Recommend` or `Auto` also has "+
		"`recommendation`: the queue and its `mode`, the pod's `workload` (its `%s` label, else its owner's kind and "+
		"name), the `profile` (the GPUProfile of the workload in the pod's namespace; absent while there is none) with "+
		"its `runs`, the recommended `gpuMemoryMiB` (0: none) and the `reason`. In `Auto`, `container` names the "+
		"container whose one whole GPU became a slice of that size and `from` the request it replaced; `input.workload` "+
		"is then the pod as right-sized, so that the gang and capability checks see the slice. Where `Auto` keeps the "+
		"request of a pod with a recommendation, `kept` says why. Pods of other queues have no `recommendation`. The "+
		"pod also gets the annotations `%s` (the recommendation and its reason) and, when right-sized, `%s`. A one-GPU "+
		"pod of Job `resnet` in an `Auto` queue:\n\n```json\n%s\n```\n",
		tesserav1.LabelWorkload, tesserav1.AnnotationGPUMemoryRecommendation, tesserav1.AnnotationRightSizedFrom,
		indentJSON(t, doc["recommendation"]))
}

type policyInputExample struct {
	title, note string
	obj         runtime.Object
}

func policyInputExamples() []policyInputExample {
	worker := apitest.MakePod("", "vision").Queue("train").SchedulerName("tessera").PriorityClass("batch-normal").
		CPU("4").Memory("32Gi").RequestAndLimit(tesserav1.ResourceGPU, "1").RequestAndLimit(tesserav1.ResourceGPUMemory, "40960").Obj()
	worker.Spec.Containers[0].Name, worker.Spec.Containers[0].Image = "trainer", "registry.example/trainer:1.4"
	pod := worker.DeepCopy()
	pod.Name = "resnet-0"
	pod.Annotations = map[string]string{tesserav1.AnnotationMinAvailable: "4"}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: tesserav1.ResourceGPU.String(), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return []policyInputExample{
		{"Job", "`replicas` is `spec.parallelism`; `queue` the Job's label or its template's; " +
			"`podRequests` the pod's effective requests (the largest init container or the sum of the containers, plus overhead).",
			apitest.MakeJob("resnet", "vision").Queue("train").Parallelism(4).Template(worker).
				Annotation(tesserav1.AnnotationMinAvailable, "4").Obj()},
		{"Pod", "`minAvailable` comes from the `" + tesserav1.AnnotationMinAvailable + "` annotation; `tolerations` is `spec.tolerations`. " +
			"A pod that names resource claims also has `claimRequests`: what the claims (or their templates) ask of Tessera's device classes, " +
			"`" + tesserav1.ResourceGPU.String() + "` whole GPUs and `" + tesserav1.ResourceGPUMemory.String() + "` the MiB of a share; " +
			"the default policies count it as they count `podRequests` to tell a GPU workload.", pod},
		{"PodGroup", "`replicas` comes from the `" + AnnotationReplicas + "` annotation; `gangRequests` is `spec.minResources`.",
			apitest.MakePodGroup("resnet", "vision").Queue("train").MinMember(4).PriorityClass("batch-normal").
				MinResources(tesserav1.ResourceGPU, "4").Annotation(AnnotationReplicas, "4").Obj()},
		{"Queue", "`namespaceSelector` and `allowedPriorityClasses` say who may use it.",
			queueWithAccess()},
		{"JobSet", "A custom workload: `labels` and `annotations` are its own; `templates` one entry per pod template " +
			"(the pod fields above, `path` and `replicas`, the pods it makes); `replicas` all its pods; `gangSize` those one " +
			"of its gangs holds as the scheduler forms it (one LeaderWorkerSet group; an autoscaling Ray cluster's minimum; " +
			"not a RayJob's submitter, nor an MPIJob's launcher under `WaitForWorkersReady`); `minAvailable` the size it " +
			"declares (its `tessera.dev/min-available`, a Kubeflow job's `runPolicy.schedulingPolicy.minAvailable`); " +
			"`gangRequests` the least one gang asks, per resource: the sum over its `minAvailable` (else `gangSize`) smallest " +
			"pods; `podRequests` the largest pod's, per resource; `containers` those of every template; `queue` its label, " +
			"else a template's; `schedulerName` a template's other than `tessera` and `default-scheduler`, else the one all " +
			"share; `priorityClassName` and `nodeName` the first template's that is set.",
			jobSetExample(worker)},
	}
}

// jobSetExample runs 2 replicas of a 2-pod Job of worker, and a driver.
func jobSetExample(worker *corev1.Pod) runtime.Object {
	job := func(name string, replicas, parallelism int64, pod *corev1.Pod) map[string]any {
		tmpl, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec})
		return map[string]any{"name": name, "replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"parallelism": parallelism, "template": tmpl}}}
	}
	driver := apitest.MakePod("", "vision").CPU("1").Obj()
	driver.Spec.Containers[0].Name, driver.Spec.Containers[0].Image = "driver", "registry.example/driver:1.4"
	js := customObj(KindJobSet, map[string]any{"replicatedJobs": []any{job("workers", 2, 2, worker), job("driver", 1, 1, driver)}})
	js.SetNamespace("vision")
	js.SetName("resnet")
	js.SetLabels(map[string]string{tesserav1.LabelQueue: "train"})
	return js
}

// describePods says how many pods a template site makes.
func describePods(s templateSite) string {
	out := s.about
	if s.podsOf == nil {
		out = describeCounts(s.pods)
	}
	if s.orPath != "" {
		out += fmt.Sprintf("; made from `%s` when there is none", s.orPath)
	}
	return out
}

// describeCounts says how many pods the product of counts is.
func describeCounts(counts []count) string {
	parts := make([]string, 0, len(counts))
	for _, c := range counts {
		terms := make([]string, len(c.terms))
		for i, t := range c.terms {
			terms[i] = fmt.Sprintf("`%s` (absent: %d)", t.path, t.def)
			if t.optional {
				terms[i] = fmt.Sprintf("`%s` (if set)", t.path)
			}
		}
		p := strings.Join(terms, ", ")
		switch {
		case len(terms) > 1 && c.smallest:
			p = "min(" + p + ")"
		case len(terms) > 1:
			p = "max(" + p + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = []string{"1"}
	}
	return strings.Join(parts, " × ")
}

func queueWithAccess() *tesserav1.Queue {
	q := apitest.MakeQueue("vision").Parent("research").Deserved(tesserav1.ResourceGPU, "8").
		Capability(tesserav1.ResourceGPU, "16").Obj()
	q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "vision"}}
	q.Spec.AllowedPriorityClasses = []string{"batch-normal", "offline-low"}
	return q
}

func referenceRequest(t *testing.T, obj runtime.Object) *admissionv1.AdmissionRequest {
	req := request(t, admissionv1.Create, obj)
	req.UserInfo.Username, req.UserInfo.Groups = "alice@example.com", []string{"vision", "system:authenticated"}
	return req
}

func indentJSON(t *testing.T, v any) string {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
