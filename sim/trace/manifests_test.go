package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const validManifests = `# a small cluster
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels:
    tessera.dev/gpu-model: A100-80GB
status:
  allocatable:
    cpu: "64"
    memory: 512Gi
    tessera.dev/gpu: "8"
---
apiVersion: tessera.dev/v1alpha1
kind: Queue
metadata:
  name: train
spec:
  weight: 2
  deserved:
    tessera.dev/gpu: "4"
---
apiVersion: tessera.dev/v1alpha1
kind: PodGroup
metadata:
  name: job-a
spec:
  minMember: 2
  queue: train
---
# only a comment
---
apiVersion: v1
kind: Pod
metadata:
  name: job-a-0
  namespace: team
  labels:
    tessera.dev/pod-group: job-a
spec:
  schedulerName: tessera
  containers:
  - name: main
    resources:
      requests:
        tessera.dev/gpu-memory: "20480"
---
apiVersion: v1
kind: Namespace
metadata:
  name: team
  annotations:
    tessera.dev/queue: train
---
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer
        resources:
          limits:
            cpu: "2"
---
apiVersion: tessera.dev/v1alpha1
kind: AdmissionPolicy
metadata:
  name: no-latest
spec:
  targets: [Pod]
  rego: |
    package tessera.nolatest
---
apiVersion: tessera.dev/v1alpha1
kind: ScaleDownPolicy
metadata:
  name: idle
spec:
  idleAfter: 30m
`

func TestDecodeManifests(t *testing.T) {
	m, err := DecodeManifests(strings.NewReader(validManifests), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The Job sweep's 2 pods are made from its template.
	if len(m.Nodes) != 1 || len(m.Queues) != 1 || len(m.PodGroups) != 1 || len(m.Pods) != 3 ||
		len(m.Namespaces) != 1 || len(m.Jobs) != 1 || len(m.AdmissionPolicies) != 1 {
		t.Fatalf("decoded %d nodes, %d queues, %d podgroups, %d pods, %d namespaces, %d jobs, %d admission policies",
			len(m.Nodes), len(m.Queues), len(m.PodGroups), len(m.Pods), len(m.Namespaces), len(m.Jobs), len(m.AdmissionPolicies))
	}
	if j := m.Jobs[0]; j.Namespace != "default" || *j.Spec.Parallelism != 2 ||
		!j.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("2")) {
		t.Errorf("job %s/%s %+v", j.Namespace, j.Name, j.Spec)
	}
	if ns := m.Namespaces[0]; ns.Annotations["tessera.dev/queue"] != "train" {
		t.Errorf("namespace %+v", ns.ObjectMeta)
	}
	// Defaulted by the CRD's schema, as the API server would.
	if sp := m.ScaleDownPolicies; len(sp) != 1 || sp[0].Spec.IdleAfter.Duration != 30*time.Minute || sp[0].Spec.Cooldown.Duration != 10*time.Minute {
		t.Errorf("scale-down policies %+v", sp)
	}
	if ap := m.AdmissionPolicies[0]; ap.Name != "no-latest" || !strings.HasPrefix(ap.Spec.Rego, "package tessera.nolatest") {
		t.Errorf("admission policy %+v", ap.Spec)
	}
	if got := m.Nodes[0].Status.Allocatable["tessera.dev/gpu"]; got.Cmp(resource.MustParse("8")) != 0 {
		t.Errorf("node GPUs %v", got)
	}
	if q := m.Queues[0]; q.Name != "train" || q.Spec.Weight != 2 {
		t.Errorf("queue %+v", q.Spec)
	}
	if pg := m.PodGroups[0]; pg.Namespace != "default" || pg.Spec.MinMember != 2 || pg.Spec.Queue != "train" {
		t.Errorf("podgroup %s/%s %+v", pg.Namespace, pg.Name, pg.Spec)
	}
	p := m.Pods[0]
	if p.Namespace != "team" || p.Spec.SchedulerName != "tessera" ||
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceName("tessera.dev/gpu-memory")] != resource.MustParse("20480") {
		t.Errorf("pod %+v", p)
	}

	// kubectl get -o yaml writes a v1 List.
	l, err := DecodeManifests(strings.NewReader("apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n"+
		"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: b\n"), "l.yaml")
	if err != nil || len(l.Nodes) != 2 || l.Nodes[1].Name != "b" {
		t.Fatalf("List: %v %+v", err, l)
	}

	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(validManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if m2, err := ReadManifests(path); err != nil || len(m2.Pods) != 3 {
		t.Fatalf("ReadManifests: %v", err)
	}
}

// jobYAML is a batch/v1 Job with the given spec fields (indented two spaces) and pod spec
// fields (indented six).
func jobYAML(name, spec, podSpec string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\nspec:\n" + spec + "  template:\n    spec:\n      restartPolicy: Never\n" + podSpec
}

func TestDecodeManifestsErrors(t *testing.T) {
	node := "apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\n"
	pg := "apiVersion: tessera.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: g\nspec:\n"
	cases := []struct{ name, in, want string }{
		{"unknown field", node + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containerz: []\n",
			`c.yaml:doc 2 (Pod/p): unknown field "containerz"`},
		{"unknown kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n", `c.yaml:doc 1 (Deployment/d): unknown kind "Deployment"`},
		{"missing kind", "apiVersion: v1\nmetadata:\n  name: x\n", "c.yaml:doc 1 (?/x): missing kind"},
		{"wrong apiVersion", "apiVersion: tessera.dev/v1\nkind: Queue\nmetadata:\n  name: q\n", `c.yaml:doc 1 (Queue/q): apiVersion "tessera.dev/v1"; Queue needs apiVersion tessera.dev/v1alpha1`},
		{"missing name", "apiVersion: v1\nkind: Node\nmetadata: {}\n", "c.yaml:doc 1 (Node/): missing metadata.name"},
		{"duplicate", node + "---\n" + node, "c.yaml:doc 2 (Node/n0): duplicate Node/n0 (first in doc 1)"},
		{"duplicate key", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\n  name: n1\n", `c.yaml:doc 1`},
		{"bad quantity", "apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q\nspec:\n  deserved:\n    tessera.dev/gpu: lots\n",
			`c.yaml:doc 1 (Queue/q): spec.deserved.tessera.dev/gpu: Invalid value: "lots": spec.deserved.tessera.dev/gpu in body should match`},
		{"unknown Queue field", "apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q\nspec:\n  weigth: 2\n",
			`c.yaml:doc 1 (Queue/q): unknown field "weigth"`},
		{"counts non-empty docs", "---\n# nothing\n---\n" + node + "---\nkind: Queue\napiVersion: v1\nmetadata:\n  name: q\n",
			`c.yaml:doc 2 (Queue/q): apiVersion "v1"`},
		{"bad List item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: b\n  spec:\n    podCIDRz: x\n",
			`c.yaml:doc 1 item 2 (Node/b): unknown field "podCIDRz"`},
		{"duplicate across List and doc", node + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n0\n",
			"c.yaml:doc 2 item 1 (Node/n0): duplicate Node/n0 (first in doc 1)"},
		{"unknown List field", "apiVersion: v1\nkind: List\nitemz: []\n", `c.yaml:doc 1 (List): unknown field "itemz"`},
		{"not yaml", "a: [b\n", "c.yaml:doc 1"},
		{"empty", "# nothing here\n", "c.yaml: no objects; use Node, Namespace, Pod"},
		// Custom resources are defaulted and validated by their CRDs' schemas and CEL
		// rules, with the API server's messages.
		{"PodGroup minMember 0", pg + "  minMember: 0\n",
			"c.yaml:doc 1 (PodGroup/g): spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1"},
		{"PodGroup minMember -1", pg + "  minMember: -1\n",
			"c.yaml:doc 1 (PodGroup/g): spec.minMember: Invalid value: -1: spec.minMember in body should be greater than or equal to 1"},
		{"PodGroup topology without levels", pg + "  minMember: 2\n  topology: {}\n",
			"c.yaml:doc 1 (PodGroup/g): spec.topology: Invalid value: spec.topology needs required or preferred"},
		{"AdmissionPolicy unknown target", "apiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata:\n  name: p\nspec:\n  targets: [Widget]\n  rego: package tessera.p\n",
			`c.yaml:doc 1 (AdmissionPolicy/p): spec.targets[0]: Unsupported value: "Widget": supported values: "Pod", "Job", "PodGroup", "Queue"`},
		{"AdmissionPolicy without targets", "apiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata:\n  name: p\nspec:\n  rego: package tessera.p\n",
			`c.yaml:doc 1 (AdmissionPolicy/p): spec.targets: Required value`},
		{"ScaleDownPolicy negative cooldown", "apiVersion: tessera.dev/v1alpha1\nkind: ScaleDownPolicy\nmetadata:\n  name: s\nspec:\n  cooldown: -5m\n",
			`c.yaml:doc 1 (ScaleDownPolicy/s): spec.cooldown: Invalid value: "-5m": spec.cooldown in body should match`},
		{"Queue its own parent", "apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: q\nspec:\n  parent: q\n",
			`c.yaml:doc 1 (Queue/q): <nil>: Invalid value: spec.parent must name another queue`},
		{"job with the core apiVersion", "apiVersion: v1\nkind: Job\nmetadata:\n  name: j\n", `c.yaml:doc 1 (Job/j): apiVersion "v1"; Job needs apiVersion batch/v1`},
		// What the API server refuses of the fields the simulator reads is refused,
		// naming the field, instead of making no pod.
		{"negative parallelism", node + "---\n" + jobYAML("neg", "  parallelism: -3\n", "      containers: [{name: c, image: i}]\n"),
			"c.yaml:doc 2 (Job/neg): spec.parallelism: -3 is negative"},
		{"negative completions", jobYAML("neg", "  completions: -1\n", "      containers: [{name: c, image: i}]\n"), "c.yaml:doc 1 (Job/neg): spec.completions: -1 is negative"},
		{"negative parallelism of a Job scheduled by Volcano", jobYAML("neg", "  parallelism: -3\n", "      schedulerName: volcano\n      containers: [{name: c, image: i}]\n"),
			"c.yaml:doc 1 (Job/neg): spec.parallelism: -3 is negative"},
		{"job without containers", jobYAML("j", "", "      containers: []\n"), "c.yaml:doc 1 (Job/j): spec.template.spec.containers: a pod needs at least one container"},
		{"pod without containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: []\n", "c.yaml:doc 1 (Pod/p): spec.containers: a pod needs at least one container"},
		{"pod without spec", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n", "c.yaml:doc 1 (Pod/p): spec.containers: a pod needs at least one container"},
		{"negative request", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: [{name: c, resources: {requests: {tessera.dev/gpu: \"-1\"}}}]\n",
			"c.yaml:doc 1 (Pod/p): spec.containers[0].resources.requests[tessera.dev/gpu]: -1 is negative"},
		{"request above its limit", jobYAML("j", "", "      containers: [{name: c, resources: {requests: {cpu: \"4\"}, limits: {cpu: \"2\"}}}]\n"),
			"c.yaml:doc 1 (Job/j): spec.template.spec.containers[0].resources.requests[cpu]: 4 is more than its limit 2"},
		{"Volcano Job the converter refuses", "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: train}\nspec:\n  tasks:\n    - {name: w, replicas: -4, template: {spec: {containers: [{name: c}]}}}\n",
			"c.yaml:doc 1 (Job/train): spec.tasks[0].replicas: -4 is out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeManifests(strings.NewReader(c.in), "c.yaml")
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want prefix %q", err, c.want)
			}
		})
	}
}

// TestVolcanoScheduledJobsConverted: a batch/v1 Job scheduled by Volcano becomes what
// tessera convert volcano makes of it (Tessera's scheduler, the gang and queue labels),
// and its pods are made from that, so that the simulator places them.
func TestVolcanoScheduledJobsConverted(t *testing.T) {
	in := "apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\n---\n" +
		jobYAML("vb", "  parallelism: 2\n", "      schedulerName: volcano\n      containers: [{name: c, image: i, resources: {limits: {tessera.dev/gpu: \"1\"}}}]\n") +
		"---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: annotated\n  namespace: ml\n  annotations: {scheduling.volcano.sh/queue-name: train}\nspec:\n  template:\n" +
		"    metadata:\n      annotations: {scheduling.k8s.io/group-name: annotated}\n    spec:\n      containers: [{name: c, image: i}]\n"
	m, err := DecodeManifests(strings.NewReader(in), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Jobs) != 2 || len(m.Pods) != 3 {
		t.Fatalf("%d jobs, %d pods", len(m.Jobs), len(m.Pods))
	}
	for _, p := range m.Pods {
		if p.Spec.SchedulerName != "tessera" || p.Namespace == "" {
			t.Errorf("pod %s/%s: scheduler %q", p.Namespace, p.Name, p.Spec.SchedulerName)
		}
		if p.Spec.Containers[0].Resources.Requests == nil && p.Name != "annotated-0" {
			t.Errorf("pod %s: requests not defaulted from limits", p.Name)
		}
	}
	a := m.Jobs[1]
	if a.Namespace != "ml" || a.Spec.Template.Labels["tessera.dev/queue"] != "train" || a.Spec.Template.Labels["tessera.dev/pod-group"] != "annotated" ||
		a.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("annotated job %+v", a)
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "Job annotated: spec.template.spec.restartPolicy: not set") &&
		!strings.Contains(strings.Join(m.Notes, "\n"), "Job ml/annotated: spec.template.spec.restartPolicy: not set") {
		t.Errorf("notes %q", m.Notes)
	}
}

// TestReadManifestsFiles: several files and directories read as one cluster; an
// object repeated in another file is named with both places; a named file or a
// directory without objects is refused.
func TestReadManifestsFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	node := "apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n"
	nodes := write("nodes.yaml", fmt.Sprintf(node, "n0")+"---\n"+fmt.Sprintf(node, "n1"))
	write("work/a.yaml", jobYAML("a", "  parallelism: 2\n", "      containers: [{name: c, image: i}]\n"))
	write("work/b.yml", "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  tasks:\n    - {name: w, replicas: 3, template: {spec: {containers: [{name: c}]}}}\n")
	write("work/empty.yaml", "# nothing yet\n")
	write("work/notes.txt", "not a manifest")
	m, err := ReadManifests(nodes, filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 2 || len(m.Jobs) != 2 || len(m.Pods) != 5 || len(m.PodGroups) != 1 {
		t.Fatalf("%d nodes, %d jobs, %d pods, %d podgroups", len(m.Nodes), len(m.Jobs), len(m.Pods), len(m.PodGroups))
	}
	dup := write("more.yaml", fmt.Sprintf(node, "n2")+"---\n"+fmt.Sprintf(node, "n1"))
	if _, err := ReadManifests(nodes, dup); err == nil || err.Error() != dup+":doc 2 (Node/n1): duplicate Node/n1 (first in "+nodes+":doc 2)" {
		t.Errorf("duplicate across files: %v", err)
	}
	empty := write("empty.yaml", "")
	if _, err := ReadManifests(nodes, empty); err == nil || !strings.HasPrefix(err.Error(), empty+": no objects") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := ReadManifests(nodes, t.TempDir()); err == nil || !strings.Contains(err.Error(), "a directory without .yaml, .yml or .json files") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := ReadManifests(nodes, filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// A PodGroup without spec is a gang of one, as the scheduler reads it.
func TestPodGroupWithoutSpec(t *testing.T) {
	m, err := DecodeManifests(strings.NewReader("apiVersion: tessera.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: g\n"), "f.yaml")
	if err != nil || len(m.PodGroups) != 1 || m.PodGroups[0].Spec.MinMember != 1 {
		t.Fatalf("%v %+v", err, m)
	}
}
