package volcano

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/deploy/crds"
)

// Options tune the conversion.
type Options struct {
	// RewriteNvidiaGPU turns nvidia.com/gpu requests and limits into tessera.dev/gpu.
	RewriteNvidiaGPU bool
	// JobSet writes a Volcano Job of several tasks as one JobSet (jobset.x-k8s.io/v1alpha2)
	// that carries its svc, ssh and env plugins, TaskCompleted: CompleteJob policies
	// and dependsOn, with a Secret and a ConfigMap for the plugins, instead of a
	// PodGroup and a batch/v1 Job per task.
	JobSet bool
}

// Note is something the conversion could not carry over, or changed.
type Note struct {
	Object string // Kind namespace/name
	Field  string
	Text   string
}

func (n Note) String() string { return n.Object + ": " + n.Field + ": " + n.Text }

// volcanoGPUMemory is Volcano's GPU-sharing resource (MiB of one GPU).
const volcanoGPUMemory corev1.ResourceName = "volcano.sh/gpu-memory"

// versions are the Volcano kinds Convert reads, at the one version it reads each.
var versions = map[schema.GroupKind]string{
	{Group: "scheduling.volcano.sh", Kind: "Queue"}:    "v1beta1",
	{Group: "scheduling.volcano.sh", Kind: "PodGroup"}: "v1beta1",
	{Group: "batch.volcano.sh", Kind: "Job"}:           "v1alpha1",
}

// Convert converts the objects; objects of other kinds pass through unchanged, other
// Volcano kinds (volcano.sh API groups) are left out with a note. Errors are objects
// that cannot be read, or would become objects the API server rejects: an apiVersion
// Convert does not read, a number out of range, a gang larger than its Job, a Job
// without containers.
func Convert(objs []*unstructured.Unstructured, opts Options) ([]runtime.Object, []Note, error) {
	c := &converter{opts: opts}
	var out []runtime.Object
	for _, u := range objs {
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: apiVersion: %w", u.GetKind(), name(u), err)
		}
		gk := gv.WithKind(u.GetKind()).GroupKind()
		if want, ok := versions[gk]; ok && gv.Version != want {
			return nil, nil, fmt.Errorf("%s %s: apiVersion %s: convert reads %s only; convert the object to %s/%s first",
				u.GetKind(), name(u), u.GetAPIVersion(), gk.Group+"/"+want, gk.Group, want)
		}
		var got []runtime.Object
		switch {
		case gk == schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "Queue"}:
			got, err = c.queue(u)
		case gk == schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "PodGroup"}:
			got, err = c.podGroup(u)
		case gk == schema.GroupKind{Group: "batch.volcano.sh", Kind: "Job"}:
			got, err = c.volcanoJob(u)
		case gk == schema.GroupKind{Group: "batch", Kind: "Job"}:
			got, err = c.batchJob(u)
		case gv.Group == "volcano.sh" || strings.HasSuffix(gv.Group, ".volcano.sh"):
			c.note(u, "kind", "Volcano's %s (%s) has no Tessera equivalent; left out", u.GetKind(), u.GetAPIVersion())
		default:
			got = []runtime.Object{u}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", u.GetKind(), name(u), err)
		}
		out = append(out, got...)
	}
	return out, c.notes, nil
}

type converter struct {
	opts  Options
	notes []Note
}

func name(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

func (c *converter) note(u *unstructured.Unstructured, field, format string, args ...any) {
	c.notes = append(c.notes, Note{Object: u.GetKind() + " " + name(u), Field: field, Text: fmt.Sprintf(format, args...)})
}

// noteUnknown notes every field of m (at field, "spec" or "spec.tasks[0]") not in known.
func (c *converter) noteUnknown(u *unstructured.Unstructured, field string, m map[string]any, known ...string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(known, k) {
			c.note(u, field+"."+k, "Tessera has no equivalent; left out")
		}
	}
}

// understood are the Volcano annotations the conversion turns into Tessera's.
var understood = []string{tesserav1.VolcanoQueueName, tesserav1.VolcanoGroupName, tesserav1.VolcanoGroupMinMember}

// noteAnnotations notes the Volcano annotations (volcano.sh/...) that Tessera does not
// read; they are kept as they are.
func (c *converter) noteAnnotations(u *unstructured.Unstructured, field string, annotations map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if strings.Contains(k, "volcano.sh/") && !slices.Contains(understood, k) {
			c.note(u, field+"["+k+"]", "Volcano's annotation, which Tessera does not read; kept as it is, with no effect")
		}
	}
}

func meta(u *unstructured.Unstructured, namespaced bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: u.GetName(), Labels: u.GetLabels(), Annotations: u.GetAnnotations()}
	if namespaced {
		m.Namespace = u.GetNamespace()
	}
	return m
}

// resources reads a ResourceList field, renaming Volcano's and (when asked) NVIDIA's GPU
// resources to Tessera's.
func (c *converter) resources(u *unstructured.Unstructured, field string, v any) (corev1.ResourceList, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, nil
	}
	rl := corev1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		qty, err := resource.ParseQuantity(fmt.Sprint(m[k]))
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", field, k, err)
		}
		if qty.Sign() < 0 {
			return nil, fmt.Errorf("%s[%s]: %s is negative", field, k, qty.String())
		}
		rl[c.resourceName(u, field, corev1.ResourceName(k))] = qty
	}
	return rl, nil
}

func (c *converter) resourceName(u *unstructured.Unstructured, field string, n corev1.ResourceName) corev1.ResourceName {
	switch {
	case n == volcanoGPUMemory:
		return tesserav1.ResourceGPUMemory
	case n == tesserav1.ResourceNvidiaGPU && c.opts.RewriteNvidiaGPU:
		c.note(u, field, "nvidia.com/gpu became tessera.dev/gpu")
		return tesserav1.ResourceGPU
	}
	return n
}

// number reads an optional whole number of field in [lo, hi]; set is false when the
// field is absent.
func number(m map[string]any, key, field string, lo, hi int64) (n int32, set bool, err error) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	x, ok := intOf(v)
	if !ok {
		return 0, false, fmt.Errorf("%s: %v is not a whole number", field, v)
	}
	if x < lo || x > hi {
		return 0, false, fmt.Errorf("%s: %d is out of range; use %d to %d", field, x, lo, hi)
	}
	return int32(x), true, nil
}

// intOf reads a whole number decoded from YAML or JSON; numbers beyond int64 read as
// its bounds, so that range checks refuse them.
func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float64:
		switch {
		case math.IsNaN(x) || x != math.Trunc(x):
			return 0, false
		case x >= math.MaxInt64:
			return math.MaxInt64, true
		case x <= math.MinInt64:
			return math.MinInt64, true
		}
		return int64(x), true
	}
	return 0, false
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// validate checks a converted Tessera object as the API server would (the CRD's
// schema and CEL rules).
func validate(obj runtime.Object, apiVersion, kind string) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	if errs := crds.DefaultAndValidate(context.Background(), apiVersion, kind, m); len(errs) > 0 {
		return fmt.Errorf("the Tessera %s it becomes would be rejected: %v", kind, errs.ToAggregate())
	}
	return nil
}

func (c *converter) queue(u *unstructured.Unstructured) ([]runtime.Object, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	q := &tesserav1.Queue{TypeMeta: metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: "Queue"}, ObjectMeta: meta(u, false)}
	var err error
	if q.Spec.Weight, _, err = number(spec, "weight", "spec.weight", 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("%w (a queue's weight is at least 1)", err)
	}
	if q.Spec.Capability, err = c.resources(u, "spec.capability", spec["capability"]); err != nil {
		return nil, err
	}
	if q.Spec.Deserved, err = c.resources(u, "spec.deserved", spec["deserved"]); err != nil {
		return nil, err
	}
	if g, ok := spec["guarantee"].(map[string]any); ok {
		if q.Spec.Guarantee, err = c.resources(u, "spec.guarantee.resource", g["resource"]); err != nil {
			return nil, err
		}
	}
	if r, ok := spec["reclaimable"].(bool); ok {
		q.Spec.Reclaimable = &r
	}
	if p, ok := spec["parent"].(string); ok && p != "root" {
		q.Spec.Parent = p
	}
	if q.Spec.Priority, _, err = number(spec, "priority", "spec.priority", math.MinInt32, math.MaxInt32); err != nil {
		return nil, err
	}
	c.noteUnknown(u, "spec", spec, "weight", "capability", "deserved", "guarantee", "reclaimable", "parent", "priority")
	c.noteAnnotations(u, "metadata.annotations", u.GetAnnotations())
	if err := validate(q, q.APIVersion, q.Kind); err != nil {
		return nil, err
	}
	return []runtime.Object{q}, nil
}

func (c *converter) podGroup(u *unstructured.Unstructured) ([]runtime.Object, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	pg := &tesserav1.PodGroup{TypeMeta: metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: "PodGroup"}, ObjectMeta: meta(u, true)}
	var err error
	if pg.Spec.MinMember, _, err = number(spec, "minMember", "spec.minMember", 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("%w (a gang has at least one member)", err)
	}
	pg.Spec.Queue, _ = spec["queue"].(string)
	pg.Spec.PriorityClassName, _ = spec["priorityClassName"].(string)
	if pg.Spec.MinResources, err = c.resources(u, "spec.minResources", spec["minResources"]); err != nil {
		return nil, err
	}
	c.noteUnknown(u, "spec", spec, "minMember", "queue", "priorityClassName", "minResources")
	c.noteAnnotations(u, "metadata.annotations", u.GetAnnotations())
	if err := validate(pg, pg.APIVersion, pg.Kind); err != nil {
		return nil, err
	}
	return []runtime.Object{pg}, nil
}

// policies prints Volcano lifecycle policies as the file spells them:
// "PodEvicted: RestartJob, exitCode 3: AbortJob".
func policies(v any) string {
	list, _ := v.([]any)
	var out []string
	for _, p := range list {
		m := mapOf(p)
		var when []string
		if e, ok := m["event"].(string); ok {
			when = append(when, e)
		}
		if es, ok := m["events"].([]any); ok {
			for _, e := range es {
				when = append(when, fmt.Sprint(e))
			}
		}
		if code, ok := m["exitCode"]; ok {
			when = append(when, fmt.Sprintf("exitCode %v", code))
		}
		if len(when) == 0 {
			when = []string{"*"}
		}
		action, _ := m["action"].(string)
		s := strings.Join(when, "|") + ": " + action
		if t, ok := m["timeout"]; ok {
			s += fmt.Sprintf(" after %v", t)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// dependsOn prints a task's dependsOn: "master, ps (all)".
func dependsOn(v any) string {
	m := mapOf(v)
	var names []string
	if ns, ok := m["name"].([]any); ok {
		for _, n := range ns {
			names = append(names, fmt.Sprint(n))
		}
	}
	s := strings.Join(names, ", ")
	if it, ok := m["iteration"].(string); ok && it != "" {
		s += " (" + it + ")"
	}
	return s
}

// vcJob is a Volcano Job read and checked: what both of its conversions start from.
type vcJob struct {
	u        *unstructured.Unstructured
	spec     map[string]any
	queue    string
	priority string // priorityClassName
	tasks    []vcTask
	total    int32 // the pods of all tasks
	gang     int32 // minAvailable, else total
	maxRetry *int32
	ttl      *int32
}

// vcTask is one task of a Volcano Job.
type vcTask struct {
	field    string // spec.tasks[i]
	name     string
	replicas int32
	maxRetry *int32 // the task's, else the Job's
	template corev1.PodTemplateSpec
	spec     map[string]any // the task as written
}

// The notes on Volcano policies that nothing carries.
const (
	jobPoliciesNote  = "Volcano job policies [%s] have no Tessera equivalent; evicted pods are recreated by their Job and the gang restarts whole"
	taskPoliciesNote = "Volcano task policies [%s] have no Tessera equivalent; use the Job's podFailurePolicy and backoffLimit"
)

// optional reads an optional whole number as number does; nil when absent.
func optional(m map[string]any, key, field string, lo, hi int64) (*int32, error) {
	n, set, err := number(m, key, field, lo, hi)
	if !set || err != nil {
		return nil, err
	}
	return &n, nil
}

// readJob reads a Volcano Job's spec and tasks, refusing what could become no valid
// object: no task, a task without containers, replicas out of range, a gang larger
// than the tasks' replicas.
func readJob(u *unstructured.Unstructured) (*vcJob, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	j := &vcJob{u: u, spec: spec}
	j.queue, _ = spec["queue"].(string)
	j.priority, _ = spec["priorityClassName"].(string)
	tasks, _ := spec["tasks"].([]any)
	if len(tasks) == 0 {
		return nil, fmt.Errorf("spec.tasks: a Volcano Job has at least one task")
	}
	var err error
	if j.maxRetry, err = optional(spec, "maxRetry", "spec.maxRetry", 0, math.MaxInt32); err != nil {
		return nil, err
	}
	if j.ttl, err = optional(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished", 0, math.MaxInt32); err != nil {
		return nil, err
	}
	total := int64(0)
	for i, raw := range tasks {
		t := vcTask{field: fmt.Sprintf("spec.tasks[%d]", i)}
		var ok bool
		if t.spec, ok = raw.(map[string]any); !ok {
			return nil, fmt.Errorf("%s: a task is an object", t.field)
		}
		if t.replicas, _, err = number(t.spec, "replicas", t.field+".replicas", 0, math.MaxInt32); err != nil {
			return nil, err
		}
		total += int64(t.replicas)
		if t.name, _ = t.spec["name"].(string); t.name == "" {
			t.name = fmt.Sprintf("task%d", i)
		}
		if slices.ContainsFunc(j.tasks, func(o vcTask) bool { return o.name == t.name }) {
			return nil, fmt.Errorf("%s.name: two tasks are named %s", t.field, t.name)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mapOf(t.spec["template"]), &t.template); err != nil {
			return nil, fmt.Errorf("%s.template: %w", t.field, err)
		}
		if len(t.template.Spec.Containers) == 0 {
			return nil, fmt.Errorf("%s.template.spec.containers: a task's pods need at least one container", t.field)
		}
		if t.maxRetry, err = optional(t.spec, "maxRetry", t.field+".maxRetry", 0, math.MaxInt32); err != nil {
			return nil, err
		}
		if t.maxRetry == nil {
			t.maxRetry = j.maxRetry
		}
		j.tasks = append(j.tasks, t)
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("spec.tasks: %d replicas together, more than a gang can hold (%d)", total, math.MaxInt32)
	}
	j.total, j.gang = int32(total), int32(total)
	if m, set, err := number(spec, "minAvailable", "spec.minAvailable", 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("%w (a gang has at least one member)", err)
	} else if set {
		if int64(m) > total {
			return nil, fmt.Errorf("spec.minAvailable: %d is more than the %d replicas of the tasks together; the gang could never start: lower minAvailable or raise replicas", m, total)
		}
		j.gang = m
	}
	if total == 0 {
		return nil, fmt.Errorf("spec.tasks: no task has replicas, so the Job would run no pod")
	}
	return j, nil
}

// volcanoJob converts a Volcano Job: to one JobSet when it has several tasks and
// Options.JobSet asks for it, else to a PodGroup and a batch/v1 Job per task.
func (c *converter) volcanoJob(u *unstructured.Unstructured) ([]runtime.Object, error) {
	j, err := readJob(u)
	if err != nil {
		return nil, err
	}
	if c.opts.JobSet && len(j.tasks) > 1 {
		return c.jobSet(j)
	}
	return c.batchJobs(j)
}

// batchJobs writes a Volcano Job as one PodGroup (minAvailable, queue, priority) and
// one batch/v1 Job per task, whose pods carry the gang's label.
func (c *converter) batchJobs(j *vcJob) ([]runtime.Object, error) {
	u := j.u
	pg := &tesserav1.PodGroup{TypeMeta: metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: "PodGroup"}, ObjectMeta: meta(u, true)}
	pg.Spec.Queue, pg.Spec.PriorityClassName, pg.Spec.MinMember = j.queue, j.priority, j.gang
	out := []runtime.Object{pg}
	for _, t := range j.tasks {
		jobName := u.GetName() + "-" + t.name
		if errs := validation.IsDNS1123Label(jobName); len(errs) > 0 {
			return nil, fmt.Errorf("%s.name: the batch/v1 Job it becomes, %s, is not a valid Job name: %s", t.field, jobName, strings.Join(errs, "; "))
		}
		if p, ok := t.spec["policies"]; ok {
			c.note(u, t.field+".policies", taskPoliciesNote, policies(p))
		}
		if d, ok := t.spec["dependsOn"]; ok {
			c.note(u, t.field+".dependsOn", "left out: the task's Job starts with the others instead of after %s; start it when they finish (a workflow tool, or an init container that waits)", dependsOn(d))
		}
		c.noteTask(u, t)
		r := t.replicas
		job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Name: jobName, Namespace: u.GetNamespace(), Labels: u.GetLabels()},
			Spec:       batchv1.JobSpec{Parallelism: &r, Completions: &r, BackoffLimit: t.maxRetry, TTLSecondsAfterFinished: j.ttl, Template: t.template}}
		c.podTemplate(u, t.field+".template", &job.Spec.Template, u.GetName(), j.queue)
		out = append(out, job)
	}
	if p, ok := j.spec["policies"]; ok {
		c.note(u, "spec.policies", jobPoliciesNote, policies(p))
	}
	if _, ok := j.spec["plugins"]; ok {
		c.note(u, "spec.plugins", "Volcano job plugins (%s) are not carried; add a headless Service and the environment the tasks need", strings.Join(slices.Sorted(maps.Keys(mapOf(j.spec["plugins"]))), ", "))
	}
	c.noteJob(j)
	if err := validate(pg, pg.APIVersion, pg.Kind); err != nil {
		return nil, err
	}
	return out, nil
}

// noteTask notes what neither conversion carries of a task.
func (c *converter) noteTask(u *unstructured.Unstructured, t vcTask) {
	if mr, ok := t.spec["minAvailable"]; ok {
		c.note(u, t.field+".minAvailable", "per-task minAvailable (%v) is not carried; the gang's minMember counts all tasks", mr)
	}
	c.noteUnknown(u, t.field, t.spec, "name", "replicas", "template", "policies", "minAvailable", "dependsOn", "maxRetry")
}

// noteJob notes what neither conversion carries of a Volcano Job's spec and annotations.
func (c *converter) noteJob(j *vcJob) {
	if j.maxRetry != nil {
		c.note(j.u, "spec.maxRetry", "became each Job's backoffLimit")
	}
	c.noteUnknown(j.u, "spec", j.spec, "minAvailable", "queue", "priorityClassName", "tasks", "schedulerName", "policies", "plugins", "maxRetry", "ttlSecondsAfterFinished")
	c.noteAnnotations(j.u, "metadata.annotations", j.u.GetAnnotations())
}

// batchJob moves Volcano's annotations on a batch/v1 Job onto Tessera's labels.
func (c *converter) batchJob(u *unstructured.Unstructured) ([]runtime.Object, error) {
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job); err != nil {
		return nil, err
	}
	queue := job.Annotations[tesserav1.VolcanoQueueName]
	if queue == "" {
		queue = job.Spec.Template.Annotations[tesserav1.VolcanoQueueName]
	}
	group := job.Spec.Template.Annotations[tesserav1.VolcanoGroupName]
	if queue == "" && group == "" && job.Spec.Template.Spec.SchedulerName != "volcano" {
		return []runtime.Object{u}, nil
	}
	parallelism := int32(1)
	if p := job.Spec.Parallelism; p != nil {
		if *p < 0 {
			return nil, fmt.Errorf("spec.parallelism: %d is negative", *p)
		}
		parallelism = *p
	}
	if min := job.Spec.Template.Annotations[tesserav1.VolcanoGroupMinMember]; min != "" {
		var n int64
		if _, err := fmt.Sscan(min, &n); err != nil || fmt.Sprint(n) != min || n < 1 {
			return nil, fmt.Errorf("spec.template.metadata.annotations[%s]: %q is not a whole number of at least 1", tesserav1.VolcanoGroupMinMember, min)
		}
		if n > int64(parallelism) {
			return nil, fmt.Errorf("spec.template.metadata.annotations[%s]: %d is more than the Job's parallelism %d; the gang could never start", tesserav1.VolcanoGroupMinMember, n, parallelism)
		}
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[tesserav1.AnnotationMinAvailable] = min
	}
	if len(job.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("spec.template.spec.containers: a Job's pods need at least one container")
	}
	c.noteAnnotations(u, "metadata.annotations", job.Annotations)
	c.noteAnnotations(u, "spec.template.metadata.annotations", job.Spec.Template.Annotations)
	c.podTemplate(u, "spec.template", &job.Spec.Template, group, queue)
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	delete(job.Annotations, tesserav1.VolcanoQueueName)
	return []runtime.Object{&job}, nil
}

// podTemplate points a pod template at Tessera: scheduler, gang label, queue label,
// GPU resources renamed, and a restart policy a batch/v1 Job accepts.
func (c *converter) podTemplate(u *unstructured.Unstructured, field string, t *corev1.PodTemplateSpec, group, queue string) {
	t.Spec.SchedulerName = tesserav1.SchedulerName
	switch t.Spec.RestartPolicy {
	case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case "":
		t.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		c.note(u, field+".spec.restartPolicy", "not set (Volcano does not need it; a batch/v1 Job does): set to OnFailure, so a failed container restarts in place as it would under Volcano; use Never to let the Job make a new pod instead")
	default:
		c.note(u, field+".spec.restartPolicy", "%s is not allowed in a batch/v1 Job: set to OnFailure", t.Spec.RestartPolicy)
		t.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	if u.GetKind() == "Job" && u.GetAPIVersion() != "batch/v1" {
		c.noteAnnotations(u, field+".metadata.annotations", t.Annotations)
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if group != "" {
		t.Labels[tesserav1.LabelPodGroup] = group
	}
	if queue != "" {
		t.Labels[tesserav1.LabelQueue] = queue
	}
	for _, k := range understood {
		delete(t.Annotations, k)
	}
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range cs {
			rr := &cs[i].Resources
			cf := fmt.Sprintf("%s.spec.containers[%s].resources", field, cs[i].Name)
			rr.Requests, rr.Limits = c.rename(u, cf, rr.Requests), c.rename(u, cf, rr.Limits)
		}
	}
}

func (c *converter) rename(u *unstructured.Unstructured, field string, rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for _, n := range slices.Sorted(maps.Keys(rl)) {
		out[c.resourceName(u, field, n)] = rl[n]
	}
	return out
}

// Names lists the kinds Convert rewrites, for help texts.
func Names() string {
	return strings.Join([]string{"Queue and PodGroup (scheduling.volcano.sh/v1beta1)", "Job (batch.volcano.sh/v1alpha1)", "batch/v1 Job with Volcano annotations"}, ", ")
}
