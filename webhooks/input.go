package webhooks

import (
	"encoding/json"
	"fmt"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/podrequests"
)

// Kinds the policies decide on.
const (
	KindPod             = "Pod"
	KindJob             = "Job"
	KindPodGroup        = "PodGroup"
	KindQueue           = "Queue"
	KindAdmissionPolicy = "AdmissionPolicy"
)

// AnnotationReplicas on a PodGroup tells the gang policy how many pods the group will
// have, so that minMember can be defaulted.
const AnnotationReplicas = "tessera.dev/replicas"

// Namespace is what the policies see of a request's namespace.
type Namespace struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// BuildInput turns an admission request into the policy input document:
//
//	operation, kind
//	user:      {username, groups} (the request's; absent when unknown)
//	namespace: {name, labels, annotations}
//	workload:  {name, labels, annotations, queue, schedulerName, nodeName, priorityClassName,
//	            tolerations: [{key, operator, value, effect}],
//	            replicas, minAvailable, containers: [{name, image, init, requests, limits}],
//	            podRequests, gangRequests, deserved, capability, guarantee, parent,
//	            namespaceSelector, namespaceSelectorError, allowedPriorityClasses}
//
// Quantities become numbers (int64 when whole, else float64; GPU memory in MiB).
// Fields a workload does not have are left out. ns may be nil.
func BuildInput(req *admissionv1.AdmissionRequest, ns *Namespace) (map[string]any, error) {
	if req == nil {
		return nil, fmt.Errorf("no admission request")
	}
	kind := req.Kind.Kind
	raw := req.Object.Raw
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s %s/%s: the request carries no object", kind, req.Namespace, req.Name)
	}
	var w map[string]any
	var err error
	switch kind {
	case KindPod:
		w, err = podWorkload(raw)
	case KindJob:
		w, err = jobWorkload(raw)
	case KindPodGroup:
		w, err = podGroupWorkload(raw)
	case KindQueue:
		w, err = queueWorkload(raw)
	default:
		return nil, fmt.Errorf("kind %s has no policy input; the webhooks decide on Pod, Job, PodGroup and Queue", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s %s/%s: %w", kind, req.Namespace, req.Name, err)
	}
	doc := map[string]any{
		"operation": string(req.Operation),
		"kind":      kind,
		"workload":  w,
	}
	nsDoc := map[string]any{"name": req.Namespace, "labels": map[string]any{}, "annotations": map[string]any{}}
	if ns != nil {
		nsDoc["labels"] = stringMap(ns.Labels)
		nsDoc["annotations"] = stringMap(ns.Annotations)
	}
	doc["namespace"] = nsDoc
	if u := req.UserInfo; u.Username != "" {
		groups := make([]any, len(u.Groups))
		for i, g := range u.Groups {
			groups[i] = g
		}
		doc["user"] = map[string]any{"username": u.Username, "groups": groups}
	}
	return doc, nil
}

func decodeObject(raw []byte, v any) error {
	return json.Unmarshal(raw, v)
}

func setMeta(w map[string]any, name string, labels, annotations map[string]string) {
	w["name"] = name
	w["labels"] = stringMap(labels)
	w["annotations"] = stringMap(annotations)
}

func podWorkload(raw []byte) (map[string]any, error) {
	var pod corev1.Pod
	if err := decodeObject(raw, &pod); err != nil {
		return nil, err
	}
	w := map[string]any{}
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	setMeta(w, name, pod.Labels, pod.Annotations)
	setString(w, "queue", pod.Labels[tesserav1.LabelQueue])
	if m, ok := positiveInt(pod.Annotations[tesserav1.AnnotationMinAvailable]); ok {
		w["minAvailable"] = m
	}
	podSpec(w, &pod.Spec)
	return w, nil
}

func jobWorkload(raw []byte) (map[string]any, error) {
	var job batchv1.Job
	if err := decodeObject(raw, &job); err != nil {
		return nil, err
	}
	w := map[string]any{}
	setMeta(w, job.Name, job.Labels, job.Annotations)
	q := job.Labels[tesserav1.LabelQueue]
	if q == "" {
		q = job.Spec.Template.Labels[tesserav1.LabelQueue]
	}
	setString(w, "queue", q)
	replicas := int64(1)
	if job.Spec.Parallelism != nil {
		replicas = int64(*job.Spec.Parallelism)
	}
	w["replicas"] = replicas
	if m, ok := positiveInt(job.Annotations[tesserav1.AnnotationMinAvailable]); ok {
		w["minAvailable"] = m
	}
	podSpec(w, &job.Spec.Template.Spec)
	return w, nil
}

func podGroupWorkload(raw []byte) (map[string]any, error) {
	var pg tesserav1.PodGroup
	if err := decodeObject(raw, &pg); err != nil {
		return nil, err
	}
	w := map[string]any{}
	setMeta(w, pg.Name, pg.Labels, pg.Annotations)
	setString(w, "queue", pg.Spec.Queue)
	setString(w, "priorityClassName", pg.Spec.PriorityClassName)
	if pg.Spec.MinMember > 0 {
		w["minAvailable"] = int64(pg.Spec.MinMember)
	}
	if r, ok := positiveInt(pg.Annotations[AnnotationReplicas]); ok {
		w["replicas"] = r
	}
	if len(pg.Spec.MinResources) > 0 {
		w["gangRequests"] = resources(pg.Spec.MinResources)
	}
	return w, nil
}

func queueWorkload(raw []byte) (map[string]any, error) {
	var q tesserav1.Queue
	if err := decodeObject(raw, &q); err != nil {
		return nil, err
	}
	w := map[string]any{}
	setMeta(w, q.Name, q.Labels, q.Annotations)
	w["deserved"] = resources(q.Spec.Deserved)
	w["capability"] = resources(q.Spec.Capability)
	w["guarantee"] = resources(q.Spec.Guarantee)
	setString(w, "parent", q.Spec.Parent)
	queueAccess(w, &q.Spec)
	return w, nil
}

func podSpec(w map[string]any, spec *corev1.PodSpec) {
	setString(w, "schedulerName", spec.SchedulerName)
	setString(w, "nodeName", spec.NodeName)
	setString(w, "priorityClassName", spec.PriorityClassName)
	if len(spec.Tolerations) > 0 {
		tolerations := make([]any, len(spec.Tolerations))
		for i, t := range spec.Tolerations {
			tolerations[i] = map[string]any{"key": t.Key, "operator": string(t.Operator), "value": t.Value, "effect": string(t.Effect)}
		}
		w["tolerations"] = tolerations
	}
	containers := make([]any, 0, len(spec.InitContainers)+len(spec.Containers))
	for i := range spec.InitContainers {
		containers = append(containers, container(&spec.InitContainers[i], true))
	}
	for i := range spec.Containers {
		containers = append(containers, container(&spec.Containers[i], false))
	}
	w["containers"] = containers
	w["podRequests"] = resources(podrequests.Of(&corev1.Pod{Spec: *spec}))
}

func container(c *corev1.Container, init bool) map[string]any {
	return map[string]any{
		"name":     c.Name,
		"image":    c.Image,
		"init":     init,
		"requests": resources(c.Resources.Requests),
		"limits":   resources(c.Resources.Limits),
	}
}

// resources converts a ResourceList into numbers: whole values as int64, fractions as
// float64 (CPU 0.5), GPU memory in MiB as declared.
func resources(l corev1.ResourceList) map[string]any {
	out := make(map[string]any, len(l))
	for name, q := range l {
		out[string(name)] = quantity(q)
	}
	return out
}

func quantity(q resource.Quantity) any {
	if v, ok := q.AsInt64(); ok {
		return v
	}
	return q.AsApproximateFloat64()
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func setString(w map[string]any, key, v string) {
	if v != "" {
		w[key] = v
	}
}

func positiveInt(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v <= 0 {
		return 0, false
	}
	return v, true
}
