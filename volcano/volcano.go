package volcano

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Options tune the conversion.
type Options struct {
	// RewriteNvidiaGPU turns nvidia.com/gpu requests and limits into tessera.dev/gpu.
	RewriteNvidiaGPU bool
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

// Convert converts the objects; objects of other kinds pass through unchanged. Errors
// are objects that cannot be read at all.
func Convert(objs []*unstructured.Unstructured, opts Options) ([]runtime.Object, []Note, error) {
	c := &converter{opts: opts}
	var out []runtime.Object
	for _, u := range objs {
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: apiVersion: %w", u.GetKind(), u.GetName(), err)
		}
		var got []runtime.Object
		switch {
		case gv.Group == "scheduling.volcano.sh" && u.GetKind() == "Queue":
			got, err = c.queue(u)
		case gv.Group == "scheduling.volcano.sh" && u.GetKind() == "PodGroup":
			got, err = c.podGroup(u)
		case gv.Group == "batch.volcano.sh" && u.GetKind() == "Job":
			got, err = c.volcanoJob(u)
		case gv.Group == "batch" && u.GetKind() == "Job":
			got, err = c.batchJob(u)
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

// noteUnknown notes every spec field not in known.
func (c *converter) noteUnknown(u *unstructured.Unstructured, spec map[string]any, known ...string) {
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		if !slices.Contains(known, k) {
			c.note(u, "spec."+k, "Tessera has no equivalent; left out")
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
	for k, q := range m {
		qty, err := resource.ParseQuantity(fmt.Sprint(q))
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", field, k, err)
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

func (c *converter) queue(u *unstructured.Unstructured) ([]runtime.Object, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	q := &tesserav1.Queue{TypeMeta: metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: "Queue"}, ObjectMeta: meta(u, false)}
	var err error
	if w, ok := intOf(spec["weight"]); ok {
		q.Spec.Weight = int32(w)
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
	if p, ok := intOf(spec["priority"]); ok {
		q.Spec.Priority = int32(p)
	}
	c.noteUnknown(u, spec, "weight", "capability", "deserved", "guarantee", "reclaimable", "parent", "priority")
	return []runtime.Object{q}, nil
}

func (c *converter) podGroup(u *unstructured.Unstructured) ([]runtime.Object, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	pg := &tesserav1.PodGroup{TypeMeta: metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: "PodGroup"}, ObjectMeta: meta(u, true)}
	if m, ok := intOf(spec["minMember"]); ok {
		pg.Spec.MinMember = int32(m)
	}
	pg.Spec.Queue, _ = spec["queue"].(string)
	pg.Spec.PriorityClassName, _ = spec["priorityClassName"].(string)
	var err error
	if pg.Spec.MinResources, err = c.resources(u, "spec.minResources", spec["minResources"]); err != nil {
		return nil, err
	}
	c.noteUnknown(u, spec, "minMember", "queue", "priorityClassName", "minResources")
	return []runtime.Object{pg}, nil
}

// volcanoJob becomes one PodGroup (minAvailable, queue, priority) and one batch/v1 Job
// per task, whose pods carry the gang's label.
func (c *converter) volcanoJob(u *unstructured.Unstructured) ([]runtime.Object, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	pg := &tesserav1.PodGroup{TypeMeta: metav1.TypeMeta{APIVersion: tesserav1.GroupVersion.String(), Kind: "PodGroup"}, ObjectMeta: meta(u, true)}
	pg.Spec.Queue, _ = spec["queue"].(string)
	pg.Spec.PriorityClassName, _ = spec["priorityClassName"].(string)
	tasks, _ := spec["tasks"].([]any)
	total := int64(0)
	out := []runtime.Object{pg}
	for i, t := range tasks {
		task, _ := t.(map[string]any)
		replicas, _ := intOf(task["replicas"])
		total += replicas
		taskName, _ := task["name"].(string)
		if taskName == "" {
			taskName = fmt.Sprintf("task%d", i)
		}
		var tmpl corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mapOf(task["template"]), &tmpl); err != nil {
			return nil, fmt.Errorf("spec.tasks[%d].template: %w", i, err)
		}
		field := fmt.Sprintf("spec.tasks[%d]", i)
		if _, ok := task["policies"]; ok {
			c.note(u, field+".policies", "Volcano job policies (e.g. PodFailed: RestartJob) have no Tessera equivalent; use the Job's podFailurePolicy and backoffLimit")
		}
		if mr, ok := task["minAvailable"]; ok {
			c.note(u, field+".minAvailable", "per-task minAvailable (%v) is not carried; the gang's minMember counts all tasks", mr)
		}
		r := int32(replicas)
		job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Name: u.GetName() + "-" + taskName, Namespace: u.GetNamespace(), Labels: u.GetLabels()},
			Spec:       batchv1.JobSpec{Parallelism: &r, Completions: &r, Template: tmpl}}
		if mr, ok := intOf(spec["maxRetry"]); ok {
			br := int32(mr)
			job.Spec.BackoffLimit = &br
		}
		c.podTemplate(u, field+".template", &job.Spec.Template, u.GetName(), pg.Spec.Queue)
		out = append(out, job)
	}
	pg.Spec.MinMember = int32(total)
	if m, ok := intOf(spec["minAvailable"]); ok {
		pg.Spec.MinMember = int32(m)
	}
	if _, ok := spec["policies"]; ok {
		c.note(u, "spec.policies", "Volcano job policies (e.g. PodEvicted: RestartJob) have no Tessera equivalent; evicted pods are recreated by their Job and the gang restarts whole")
	}
	if _, ok := spec["plugins"]; ok {
		c.note(u, "spec.plugins", "Volcano job plugins (ssh, svc, env) are not carried; add a headless Service and the environment the tasks need")
	}
	if _, ok := spec["maxRetry"]; ok {
		c.note(u, "spec.maxRetry", "became each Job's backoffLimit")
	}
	c.noteUnknown(u, spec, "minAvailable", "queue", "priorityClassName", "tasks", "schedulerName", "policies", "plugins", "maxRetry")
	return out, nil
}

// intOf reads a whole number decoded from YAML or JSON.
func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		return int64(x), x == float64(int64(x))
	}
	return 0, false
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
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
	if min := job.Spec.Template.Annotations[tesserav1.VolcanoGroupMinMember]; min != "" {
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[tesserav1.AnnotationMinAvailable] = min
	}
	c.podTemplate(u, "spec.template", &job.Spec.Template, group, queue)
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	delete(job.Annotations, tesserav1.VolcanoQueueName)
	return []runtime.Object{&job}, nil
}

// podTemplate points a pod template at Tessera: scheduler, gang label, queue label, and
// GPU resources renamed.
func (c *converter) podTemplate(u *unstructured.Unstructured, field string, t *corev1.PodTemplateSpec, group, queue string) {
	if t.Spec.SchedulerName != "" && t.Spec.SchedulerName != tesserav1.SchedulerName {
		t.Spec.SchedulerName = tesserav1.SchedulerName
	}
	if t.Spec.SchedulerName == "" {
		t.Spec.SchedulerName = tesserav1.SchedulerName
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
	for _, k := range []string{tesserav1.VolcanoQueueName, tesserav1.VolcanoGroupName, tesserav1.VolcanoGroupMinMember} {
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
	for n, q := range rl {
		out[c.resourceName(u, field, n)] = q
	}
	return out
}

// Names lists the kinds Convert rewrites, for help texts.
func Names() string {
	return strings.Join([]string{"Queue and PodGroup (scheduling.volcano.sh/v1beta1)", "Job (batch.volcano.sh/v1alpha1)", "batch/v1 Job with Volcano annotations"}, ", ")
}
