package volcano_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/volcano"
)

// vcjob is a Volcano Job with the given spec fields (indented two spaces) before one
// task of the given fields (indented six spaces).
func vcjob(spec, task string) string {
	return "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: train\n  namespace: research\nspec:\n  queue: q\n" + spec +
		"  tasks:\n    - name: worker\n" + task + "      template:\n        spec:\n          containers:\n            - {name: main, image: trainer}\n"
}

const vcqueue = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: q\nspec:\n"

// TestConvertCases: each case of input is converted, refused with an error naming the
// field, or noted, as the API server and the operator need.
func TestConvertCases(t *testing.T) {
	for _, tc := range []conversionCase{
		{name: "restartPolicy set when the Volcano Job has none",
			input: vcjob("", "      replicas: 2\n"),
			notes: []string{"spec.tasks[0].template.spec.restartPolicy: not set", "set to OnFailure"},
			check: func(o []runtime.Object) bool {
				j := o[1].(*batchv1.Job)
				return j.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && *j.Spec.Parallelism == 2
			}},
		{name: "restartPolicy Always becomes OnFailure",
			input: strings.Replace(vcjob("", "      replicas: 2\n"), "          containers:", "          restartPolicy: Always\n          containers:", 1),
			notes: []string{"Always is not allowed in a batch/v1 Job"},
			check: func(o []runtime.Object) bool {
				return o[1].(*batchv1.Job).Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure
			}},
		{name: "restartPolicy Never kept",
			input: strings.Replace(vcjob("", "      replicas: 2\n"), "          containers:", "          restartPolicy: Never\n          containers:", 1),
			check: func(o []runtime.Object) bool {
				return o[1].(*batchv1.Job).Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyNever
			}},
		{name: "replicas 2^31", input: vcjob("", "      replicas: 2147483648\n"), err: "spec.tasks[0].replicas: 2147483648 is out of range; use 0 to 2147483647"},
		{name: "replicas 1e30", input: vcjob("", "      replicas: 1e30\n"), err: "spec.tasks[0].replicas: 9223372036854775807 is out of range"},
		{name: "replicas negative", input: vcjob("", "      replicas: -4\n"), err: "spec.tasks[0].replicas: -4 is out of range"},
		{name: "replicas not a number", input: vcjob("", "      replicas: two\n"), err: "spec.tasks[0].replicas: two is not a whole number"},
		{name: "replicas a fraction", input: vcjob("", "      replicas: 1.5\n"), err: "is not a whole number"},
		{name: "no replicas at all", input: vcjob("", ""), err: "no task has replicas"},
		{name: "minAvailable above the replicas", input: vcjob("  minAvailable: 10\n", "      replicas: 4\n"),
			err: "spec.minAvailable: 10 is more than the 4 replicas of the tasks together; the gang could never start"},
		{name: "minAvailable 0", input: vcjob("  minAvailable: 0\n", "      replicas: 4\n"), err: "spec.minAvailable: 0 is out of range"},
		{name: "minAvailable equal to the replicas", input: vcjob("  minAvailable: 4\n", "      replicas: 4\n"),
			check: func(o []runtime.Object) bool { return o[0].(*tesserav1.PodGroup).Spec.MinMember == 4 }},
		{name: "gang larger than Tessera's PodGroup allows", input: vcjob("", "      replicas: 200000\n"), err: "the Tessera PodGroup it becomes would be rejected: spec.minMember"},
		{name: "unknown Volcano Job version", input: strings.Replace(vcjob("", "      replicas: 1\n"), "v1alpha1", "v9", 1),
			err: "apiVersion batch.volcano.sh/v9: convert reads batch.volcano.sh/v1alpha1 only"},
		{name: "unknown Queue version", input: strings.Replace(vcqueue, "v1beta1", "v1", 1) + "  weight: 1\n", err: "apiVersion scheduling.volcano.sh/v1: convert reads scheduling.volcano.sh/v1beta1 only"},
		{name: "other Volcano kinds are left out with a note", input: "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata:\n  name: f\n",
			notes: []string{"JobFlow f: kind: Volcano's JobFlow (flow.volcano.sh/v1alpha1) has no Tessera equivalent; left out"},
			check: func(o []runtime.Object) bool { return len(o) == 0 }},
		{name: "queue weight negative", input: vcqueue + "  weight: -3\n", err: "spec.weight: -3 is out of range; use 1 to 2147483647 (a queue's weight is at least 1)"},
		{name: "queue weight 0", input: vcqueue + "  weight: 0\n", err: "spec.weight: 0 is out of range"},
		{name: "queue weight above Tessera's maximum", input: vcqueue + "  weight: 5000\n", err: "the Tessera Queue it becomes would be rejected: spec.weight"},
		{name: "queue negative capability", input: vcqueue + "  capability:\n    nvidia.com/gpu: -2\n", err: "spec.capability[nvidia.com/gpu]: -2 is negative"},
		{name: "queue with every field", input: vcqueue + "  weight: 3\n  priority: 5\n  reclaimable: false\n  parent: root\n  capability: {nvidia.com/gpu: 8}\n  deserved: {nvidia.com/gpu: 4}\n  guarantee: {resource: {nvidia.com/gpu: 2}}\n  affinity: {}\n",
			notes: []string{"Queue q: spec.affinity: Tessera has no equivalent"},
			check: func(o []runtime.Object) bool {
				q := o[0].(*tesserav1.Queue)
				return q.Spec.Weight == 3 && q.Spec.Priority == 5 && !*q.Spec.Reclaimable && q.Spec.Parent == "" && q.Spec.Guarantee.Name("nvidia.com/gpu", "").Value() == 2
			}},
		{name: "podgroup minMember 0", input: "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: g\n  namespace: a\nspec:\n  minMember: 0\n", err: "spec.minMember: 0 is out of range"},
		{name: "dependsOn dropped with a note", input: vcjob("", "      replicas: 1\n      dependsOn:\n        name: [master]\n"),
			notes: []string{"spec.tasks[0].dependsOn: left out: the task's Job starts with the others instead of after master"}},
		{name: "other task fields noted", input: vcjob("", "      replicas: 1\n      topologyPolicy: best-effort\n"),
			notes: []string{"spec.tasks[0].topologyPolicy: Tessera has no equivalent"}},
		{name: "task maxRetry becomes that Job's backoffLimit", input: vcjob("  maxRetry: 3\n", "      replicas: 1\n      maxRetry: 5\n"),
			check: func(o []runtime.Object) bool { return *o[1].(*batchv1.Job).Spec.BackoffLimit == 5 }},
		{name: "maxRetry negative", input: vcjob("  maxRetry: -1\n", "      replicas: 1\n"), err: "spec.maxRetry: -1 is out of range"},
		{name: "Volcano annotations Tessera does not read are noted", input: strings.Replace(vcjob("", "      replicas: 1\n"), "  namespace: research\n",
			"  namespace: research\n  annotations:\n    scheduling.volcano.sh/preemptable: \"false\"\n    example.com/keep: x\n", 1),
			notes: []string{"metadata.annotations[scheduling.volcano.sh/preemptable]: Volcano's annotation, which Tessera does not read"},
			check: func(o []runtime.Object) bool {
				return o[0].(*tesserav1.PodGroup).Annotations["scheduling.volcano.sh/preemptable"] == "false"
			}},
		{name: "TTL becomes ttlSecondsAfterFinished", input: vcjob("  ttlSecondsAfterFinished: 600\n", "      replicas: 1\n"),
			check: func(o []runtime.Object) bool { return *o[1].(*batchv1.Job).Spec.TTLSecondsAfterFinished == 600 }},
		{name: "TTL negative", input: vcjob("  ttlSecondsAfterFinished: -1\n", "      replicas: 1\n"), err: "spec.ttlSecondsAfterFinished: -1 is out of range"},
		{name: "the policies note names the file's own policies", input: vcjob("  policies:\n    - {event: PodFailed, action: AbortJob}\n    - {exitCode: 3, action: CompleteJob}\n", "      replicas: 1\n      policies:\n        - {events: [PodEvicted, Unknown], action: RestartTask, timeout: 10m}\n"),
			notes: []string{"spec.policies: Volcano job policies [PodFailed: AbortJob, exitCode 3: CompleteJob]", "spec.tasks[0].policies: Volcano task policies [PodEvicted|Unknown: RestartTask after 10m]"}},
		{name: "a task without containers", input: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, namespace: a}\nspec:\n  tasks:\n    - {name: w, replicas: 1, template: {spec: {}}}\n",
			err: "spec.tasks[0].template.spec.containers: a task's pods need at least one container"},
		{name: "a task name that makes no Job name", input: strings.Replace(vcjob("", "      replicas: 1\n"), "name: worker", "name: Worker_1", 1), err: "is not a valid Job name"},
		{name: "two tasks of one name", input: strings.Replace(vcjob("", "      replicas: 1\n"), "  tasks:\n", "  tasks:\n    - {name: worker, replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}\n", 1), err: "two tasks are named worker"},
		{name: "batch Job gang above its parallelism", input: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: a}\nspec:\n  parallelism: 2\n  template:\n    metadata:\n      annotations: {scheduling.volcano.sh/group-min-member: \"4\"}\n    spec:\n      schedulerName: volcano\n      restartPolicy: Never\n      containers: [{name: c, image: i}]\n",
			err: "4 is more than the Job's parallelism 2"},
		{name: "batch Job without restartPolicy", input: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: a}\nspec:\n  template:\n    spec:\n      schedulerName: volcano\n      containers: [{name: c, image: i}]\n",
			notes: []string{"spec.template.spec.restartPolicy: not set"},
			check: func(o []runtime.Object) bool {
				return o[0].(*batchv1.Job).Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure
			}},
		{name: "a kubectl List of queues", input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: scheduling.volcano.sh/v1beta1\n  kind: Queue\n  metadata: {name: a}\n  spec: {weight: 2}\n- apiVersion: scheduling.volcano.sh/v1beta1\n  kind: Queue\n  metadata: {name: b}\n",
			check: func(o []runtime.Object) bool {
				return len(o) == 2 && o[0].(*tesserav1.Queue).Spec.Weight == 2 && o[1].(*tesserav1.Queue).Name == "b"
			}},
		{name: "an empty file", input: "", err: "f.yaml: no objects"},
		{name: "a file of comments", input: "# nothing\n---\n", err: "f.yaml: no objects"},
		{name: "a YAML bomb", input: "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n",
			err: "YAML aliases expand to more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := tc.convert(t, volcano.Options{})
			if !ok {
				return
			}
			if tc.check != nil && !tc.check(out) {
				t.Errorf("unexpected output %+v", out)
			}
			strictDecode(t, out)
		})
	}
}

// conversionCase is one input of a table of conversions and what converting it gives.
type conversionCase struct {
	name  string
	input string
	err   string                      // the error contains it; "" for none
	notes []string                    // each in some note
	check func([]runtime.Object) bool // on the output
}

// convert reads tc's input as f.yaml and converts it with opts. With tc.err the case
// must fail with an error containing it, and ok is false; else every one of tc.notes
// must be in a note.
func (tc conversionCase) convert(t *testing.T, opts volcano.Options) (out []runtime.Object, ok bool) {
	t.Helper()
	objs, err := volcano.Read([]byte(tc.input), "f.yaml")
	var notes []volcano.Note
	if err == nil {
		out, notes, err = volcano.Convert(objs, opts)
	}
	if tc.err != "" {
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("got error %v, want one containing %q", err, tc.err)
		}
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, n := range notes {
		all = append(all, n.String())
	}
	text := strings.Join(all, "\n")
	for _, w := range tc.notes {
		if !strings.Contains(text, w) {
			t.Errorf("no note containing %q in:\n%s", w, text)
		}
	}
	return out, true
}
