package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
//	            replicas, minAvailable, gangSize, containers: [{name, image, init, requests, limits}],
//	            podRequests, claimRequests, gangRequests, deserved, capability, guarantee, parent,
//	            namespaceSelector, namespaceSelectorError, allowedPriorityClasses,
//	            templates: [{path, replicas, labels, schedulerName, nodeName, priorityClassName,
//	                         tolerations, containers, podRequests}]}
//
// A custom workload (CustomWorkloads) has templates, one per pod template; replicas is
// the pods of all of them, gangSize those one of its gangs holds as the scheduler forms
// it (a LeaderWorkerSet's group, an autoscaling Ray cluster's minimum, not an MPIJob's
// launcher made after its workers), minAvailable the size the object declares
// (tessera.dev/min-available, a Kubeflow job's schedulingPolicy.minAvailable),
// gangRequests the least one gang asks (per resource, its minAvailable or gangSize
// smallest pods), podRequests the largest pod's requests (per resource), containers
// those of every template, and queue, schedulerName, priorityClassName and nodeName
// what its templates say (customWorkload).
//
// claimRequests (pods only, set by the handler from its ClaimSource) are the GPUs the
// pod asks through resource claims of Tessera's device classes: tessera.dev/gpu whole
// GPUs, tessera.dev/gpu-memory the MiB of a share.
//
// Quantities become numbers (int64 when whole, else float64; GPU memory in MiB).
// Fields a workload does not have are left out. ns may be nil. The mutating handler
// adds recommendation for a GPU pod of a queue that right-sizes (rightSizing.doc).
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
		if !isCustomWorkload[kind] {
			return nil, fmt.Errorf("kind %s has no policy input; the webhooks decide on Pod, Job, PodGroup, Queue and %s",
				kind, strings.Join(CustomWorkloads, ", "))
		}
		w, err = customWorkload(kind, raw)
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

// customWorkload is the input of a custom workload: its own metadata and every pod
// template it makes pods from (podTemplates).
func customWorkload(kind string, raw []byte) (map[string]any, error) {
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	var obj map[string]any
	if err := decodeObject(raw, &meta); err != nil {
		return nil, err
	}
	if err := decodeObject(raw, &obj); err != nil {
		return nil, err
	}
	w := map[string]any{}
	m := &meta.Metadata
	name := m.Name
	if name == "" {
		name = m.GenerateName
	}
	setMeta(w, name, m.Labels, m.Annotations)
	queues := []string{m.Labels[tesserav1.LabelQueue]}
	var (
		schedulers, classes, nodes []string
		templates, containers      []any
		pods, gangSize             int64
		largest                    = corev1.ResourceList{}
		members                    []gangMembers
	)
	for _, pt := range templatesOf(kind, obj, true) {
		var tmpl corev1.PodTemplateSpec
		if err := remarshal(pt.tmpl, &tmpl); err != nil {
			return nil, fmt.Errorf("%s: %w", pt.path, err)
		}
		t := map[string]any{"path": pt.path, "replicas": pt.pods, "labels": stringMap(tmpl.Labels)}
		requests := podSpec(t, &tmpl.Spec)
		templates = append(templates, t)
		containers = append(containers, t["containers"].([]any)...)
		pods += pt.pods
		gangSize += pt.gang
		members = append(members, gangMembers{pods: pt.gang, requests: requests})
		for r, q := range requests {
			if have, ok := largest[r]; !ok || q.Cmp(have) > 0 {
				largest[r] = q
			}
		}
		queues = append(queues, tmpl.Labels[tesserav1.LabelQueue])
		schedulers = append(schedulers, tmpl.Spec.SchedulerName)
		classes = append(classes, tmpl.Spec.PriorityClassName)
		nodes = append(nodes, tmpl.Spec.NodeName)
	}
	setString(w, "queue", common(queues, ""))
	setString(w, "schedulerName", common(schedulers, "", corev1.DefaultSchedulerName, tesserav1.SchedulerName))
	setString(w, "priorityClassName", common(classes, ""))
	setString(w, "nodeName", common(nodes, ""))
	w["replicas"] = pods
	w["gangSize"] = gangSize
	least := gangSize
	if n, ok := declaredMinAvailable(kind, obj, m.Annotations); ok {
		w["minAvailable"] = n
		least = min(n, gangSize)
	}
	w["containers"] = containers
	w["podRequests"] = resources(largest)
	w["gangRequests"] = resources(leastRequests(members, least))
	w["templates"] = templates
	return w, nil
}

// declaredMinAvailable is the gang size a custom workload declares, as the scheduler
// reads it: the object's tessera.dev/min-available, else a Kubeflow job's
// runPolicy.schedulingPolicy.minAvailable.
func declaredMinAvailable(kind string, obj map[string]any, annotations map[string]string) (int64, bool) {
	if kind == KindLeaderWorkerSet {
		return 0, false // its groups declare their own size
	}
	if v, ok := annotations[tesserav1.AnnotationMinAvailable]; ok {
		return positiveInt(v)
	}
	if kind == KindPyTorchJob || kind == KindMPIJob {
		if n, ok := integer(lookupPath(obj, "spec.runPolicy.schedulingPolicy.minAvailable")); ok && n > 0 {
			return n, true
		}
	}
	return 0, false
}

// gangMembers are pods of one gang made from one template, each asking requests.
type gangMembers struct {
	pods     int64
	requests corev1.ResourceList
}

// leastRequests is, per resource, the least that n pods of the gang ask together: the
// sum over its n smallest requests. A gang that must place n of its pods can never
// run where even that is more than allowed.
func leastRequests(members []gangMembers, n int64) corev1.ResourceList {
	names := map[corev1.ResourceName]bool{}
	for _, m := range members {
		for r := range m.requests {
			names[r] = true
		}
	}
	out := corev1.ResourceList{}
	for r := range names {
		sorted := slices.Clone(members)
		slices.SortStableFunc(sorted, func(a, b gangMembers) int {
			qa, qb := a.requests[r], b.requests[r]
			return qa.Cmp(qb)
		})
		left := n
		var sum resource.Quantity
		for _, m := range sorted {
			take := min(left, m.pods)
			if take <= 0 {
				continue
			}
			q := m.requests[r]
			q.Mul(take)
			sum.Add(q)
			left -= take
		}
		if !sum.IsZero() {
			out[r] = sum
		}
	}
	return out
}

// common is what a workload's templates say together: the first of values that is none
// of own, else the value they all have, else "". A template that names a scheduler
// other than those Tessera takes as its own makes the workload name it.
func common(values []string, own ...string) string {
	for _, v := range values {
		if !slices.Contains(own, v) {
			return v
		}
	}
	if len(values) > 0 && !slices.ContainsFunc(values, func(v string) bool { return v != values[0] }) {
		return values[0]
	}
	return ""
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

// podSpec adds what the policies read of a pod spec to w, and returns the pod's requests.
func podSpec(w map[string]any, spec *corev1.PodSpec) corev1.ResourceList {
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
	requests := podrequests.Of(&corev1.Pod{Spec: *spec})
	w["podRequests"] = resources(requests)
	return requests
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
