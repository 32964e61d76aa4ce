package workloads

import (
	"fmt"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Input is what sizing a gang reads besides its pods' labels.
type Input struct {
	// Object is the object that sizes the gang; nil when it has not been seen.
	Object *unstructured.Unstructured
	// Children lists a JobSet's child batch Jobs of the gang's restart attempt; it is
	// called only for JobSets that order their jobs.
	Children func() []*batchv1.Job
	// WorkersMade says whether any pod of a LeaderWorkerSet group besides its leader
	// exists.
	WorkersMade bool
}

// Size is a gang's size.
type Size struct {
	// MinMember is how many of its pods must be placed together.
	MinMember int
	// Waiting, when not "", says what the gang waits for before its size is known:
	// until then none of its pods are placed.
	Waiting string
}

// Size decides the gang's minMember. An error names the field that could not be read;
// the gang then waits.
func (r Ref) Size(namespace string, in Input) (Size, error) {
	switch r.Kind {
	case KueuePodGroup:
		return declared(r, namespace, AnnotationKueueTotal)
	case LeaderWorkerSet:
		if in.Object != nil && str(in.Object, "spec", "startupPolicy") == "LeaderReady" && !in.WorkersMade {
			// The workers are made once the leader is ready: until then the leader is
			// a gang of its own, placed or not.
			return Size{MinMember: 1}, nil
		}
		return declared(r, namespace, AnnotationLWSSize)
	}
	o := in.Object
	if o == nil {
		return Size{Waiting: fmt.Sprintf("waiting for %s %s/%s, which sizes the gang", gvks[r.Kind].Kind, namespace, r.Object)}, nil
	}
	if v, ok := o.GetAnnotations()[tesserav1.AnnotationMinAvailable]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Size{Waiting: "invalid gang size"}, r.fieldErr(namespace, "metadata.annotations["+tesserav1.AnnotationMinAvailable+"]", "%q is not a positive integer", v)
		}
		return Size{MinMember: n}, nil
	}
	n, err := r.objectSize(o, in)
	if fe, ok := err.(*FieldError); ok {
		fe.Namespace = namespace
		return Size{Waiting: "invalid gang size"}, fe
	}
	return Size{MinMember: max(n, 1)}, nil
}

// objectSize reads minMember off the owning object.
func (r Ref) objectSize(o *unstructured.Unstructured, in Input) (int, error) {
	switch r.Kind {
	case WorkloadPodGroup:
		if _, gang := field(o, "spec", "schedulingPolicy", "gang"); !gang {
			return 1, nil // a basic policy: no gang
		}
		return r.intField(o, 1, "spec", "schedulingPolicy", "gang", "minCount")
	case CoschedulingPodGroup:
		return r.intField(o, 1, "spec", "minMember")
	case JobSet:
		return r.jobSetSize(o, in)
	case RayCluster:
		return r.rayClusterSize(o)
	case PyTorchJob:
		return r.kubeflowSize(o, "pytorchReplicaSpecs", "", nil)
	case MPIJob:
		skip := ""
		if str(o, "spec", "launcherCreationPolicy") == "WaitForWorkersReady" {
			skip = "Launcher" // made once the workers are ready
		}
		// mpi-operator defaults a Worker's replicas to 0 (a Launcher's to 1).
		return r.kubeflowSize(o, "mpiReplicaSpecs", skip, map[string]int{"Worker": 0})
	}
	return 1, nil
}

// jobSetSize is Σ replicas × min(parallelism, completions) over the replicated jobs;
// for a JobSet that orders its jobs (startupPolicy InOrder, dependsOn) it is that sum
// over the child Jobs made so far, so that each stage starts whole.
func (r Ref) jobSetSize(o *unstructured.Unstructured, in Input) (int, error) {
	rjobs, _ := field(o, "spec", "replicatedJobs")
	list, _ := rjobs.([]any)
	ordered := str(o, "spec", "startupPolicy", "startupPolicyOrder") == "InOrder"
	total := 0
	for i, rj := range list {
		m, _ := rj.(map[string]any)
		rjo := &unstructured.Unstructured{Object: m}
		if deps, _ := field(rjo, "dependsOn"); deps != nil {
			ordered = true
		}
		path := fmt.Sprintf("spec.replicatedJobs[%d]", i)
		replicas, err := r.intAt(rjo, path, 1, "replicas")
		if err != nil {
			return 0, err
		}
		par, err := r.intAt(rjo, path, 1, "template", "spec", "parallelism")
		if err != nil {
			return 0, err
		}
		comp, err := r.intAt(rjo, path, par, "template", "spec", "completions")
		if err != nil {
			return 0, err
		}
		total += replicas * min(par, comp)
	}
	if !ordered || in.Children == nil {
		return total, nil
	}
	made := 0
	for _, j := range in.Children() {
		par := 1
		if j.Spec.Parallelism != nil {
			par = int(*j.Spec.Parallelism)
		}
		if j.Spec.Completions != nil {
			par = min(par, int(*j.Spec.Completions))
		}
		made += par
	}
	return made, nil
}

// rayClusterSize is the head plus Σ workers × numOfHosts over the worker groups, where
// workers is minReplicas when the cluster autoscales, else replicas kept within
// [minReplicas, maxReplicas] as KubeRay keeps it; suspended groups are left out.
func (r Ref) rayClusterSize(o *unstructured.Unstructured) (int, error) {
	autoscaling, _, _ := unstructured.NestedBool(o.Object, "spec", "enableInTreeAutoscaling")
	groups, _ := field(o, "spec", "workerGroupSpecs")
	list, _ := groups.([]any)
	total := 1
	for i, g := range list {
		m, _ := g.(map[string]any)
		grp := &unstructured.Unstructured{Object: m}
		if s, _, _ := unstructured.NestedBool(m, "suspend"); s {
			continue
		}
		path := fmt.Sprintf("spec.workerGroupSpecs[%d]", i)
		lo, err := r.intAt(grp, path, 0, "minReplicas")
		if err != nil {
			return 0, err
		}
		n := lo
		if !autoscaling {
			hi, err := r.intAt(grp, path, math.MaxInt32, "maxReplicas")
			if err != nil {
				return 0, err
			}
			if n, err = r.intAt(grp, path, lo, "replicas"); err != nil {
				return 0, err
			}
			n = min(max(n, lo), hi)
		}
		hosts, err := r.intAt(grp, path, 1, "numOfHosts")
		if err != nil {
			return 0, err
		}
		total += n * max(hosts, 1)
	}
	return total, nil
}

// kubeflowSize is runPolicy.schedulingPolicy.minAvailable, else Σ replicas over the
// replica specs (but skip); absent replicas are defaults[type], else 1.
func (r Ref) kubeflowSize(o *unstructured.Unstructured, specs, skip string, defaults map[string]int) (int, error) {
	if _, ok := field(o, "spec", "runPolicy", "schedulingPolicy", "minAvailable"); ok {
		return r.intField(o, 1, "spec", "runPolicy", "schedulingPolicy", "minAvailable")
	}
	v, _ := field(o, "spec", specs)
	m, _ := v.(map[string]any)
	total := 0
	for typ, s := range m {
		if typ == skip {
			continue
		}
		sm, _ := s.(map[string]any)
		def, ok := defaults[typ]
		if !ok {
			def = 1
		}
		n, err := r.intAt(&unstructured.Unstructured{Object: sm}, "spec."+specs+"."+typ, def, "replicas")
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// declared reads the size a pod declares in annotation key.
func declared(r Ref, namespace, key string) (Size, error) {
	if r.declared == "" {
		return Size{Waiting: fmt.Sprintf("waiting for the pods of %s %s/%s to declare the gang's size (annotation %s)", r.Kind, namespace, r.Gang, key)}, nil
	}
	n, err := strconv.Atoi(r.declared)
	if err != nil || n < 1 {
		return Size{Waiting: "invalid gang size"}, r.fieldErr(namespace, "pod metadata.annotations["+key+"]", "%q is not a positive integer", r.declared)
	}
	return Size{MinMember: n}, nil
}

// intField reads an integer at path of o, def when absent.
func (r Ref) intField(o *unstructured.Unstructured, def int, path ...string) (int, error) {
	return r.intAt(o, "", def, path...)
}

// intAt reads an integer at path below prefix (the path of o within the object).
func (r Ref) intAt(o *unstructured.Unstructured, prefix string, def int, path ...string) (int, error) {
	v, ok := field(o, path...)
	if !ok || v == nil {
		return def, nil
	}
	var n int64
	switch t := v.(type) {
	case int64:
		n = t
	case float64:
		n = int64(t)
		if float64(n) != t {
			return 0, r.fieldErr("", join(prefix, path), "%v is not an integer", v)
		}
	case int:
		n = int64(t)
	default:
		return 0, r.fieldErr("", join(prefix, path), "%v is not an integer", v)
	}
	if n < 0 {
		return 0, r.fieldErr("", join(prefix, path), "%d is negative", n)
	}
	return int(n), nil
}

func join(prefix string, path []string) string {
	s := prefix
	for _, p := range path {
		if s != "" {
			s += "."
		}
		s += p
	}
	return s
}

func field(o *unstructured.Unstructured, path ...string) (any, bool) {
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	return v, ok && err == nil
}

func str(o *unstructured.Unstructured, path ...string) string {
	v, _ := field(o, path...)
	s, _ := v.(string)
	return s
}

// FieldError is a field of a workload object or pod that does not say a gang size.
type FieldError struct {
	Kind      Kind
	Namespace string
	Name      string
	Field     string
	Message   string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %s/%s %s: %s; the gang waits until it is fixed", e.Kind, e.Namespace, e.Name, e.Field, e.Message)
}

func (r Ref) fieldErr(namespace, field, format string, args ...any) error {
	name := r.Object
	if name == "" {
		name = r.Gang
	}
	return &FieldError{Kind: r.Kind, Namespace: namespace, Name: name, Field: field, Message: fmt.Sprintf(format, args...)}
}
