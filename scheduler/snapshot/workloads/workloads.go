package workloads

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Kind is a kind of workload whose pods form one gang.
type Kind string

// The workload kinds whose gangs are found. Each but KueuePodGroup is sized by an
// object of the group, version and kind GVK gives.
const (
	WorkloadPodGroup     Kind = "PodGroup.scheduling.k8s.io"   // Kubernetes Workload API
	JobSet               Kind = "JobSet"                       // jobset.x-k8s.io (and Kubeflow TrainJob)
	RayCluster           Kind = "RayCluster"                   // ray.io (and RayJob, RayService)
	LeaderWorkerSet      Kind = "LeaderWorkerSet"              // leaderworkerset.x-k8s.io
	PyTorchJob           Kind = "PyTorchJob"                   // Kubeflow training operator
	MPIJob               Kind = "MPIJob"                       // Kubeflow mpi-operator
	CoschedulingPodGroup Kind = "PodGroup.scheduling.x-k8s.io" // scheduler-plugins coscheduling
	KueuePodGroup        Kind = "KueuePodGroup"                // Kueue's plain-pod groups
)

// The labels and annotations the controllers write on the pods they make.
const (
	LabelJobSetName       = "jobset.sigs.k8s.io/jobset-name"
	LabelJobSetUID        = "jobset.sigs.k8s.io/jobset-uid"
	LabelJobSetAttempt    = "jobset.sigs.k8s.io/restart-attempt"
	LabelRayCluster       = "ray.io/cluster"
	LabelLWSName          = "leaderworkerset.sigs.k8s.io/name"
	LabelLWSGroupIndex    = "leaderworkerset.sigs.k8s.io/group-index"
	LabelLWSWorkerIndex   = "leaderworkerset.sigs.k8s.io/worker-index"
	AnnotationLWSSize     = "leaderworkerset.sigs.k8s.io/size"
	LabelKubeflowJobName  = "training.kubeflow.org/job-name"
	LabelKubeflowOperator = "training.kubeflow.org/operator-name"
	LabelCoscheduling     = tesserav1.CoschedulingPodGroup
	LabelKueuePodGroup    = tesserav1.KueuePodGroupName
	AnnotationKueueTotal  = tesserav1.KueuePodGroupTotalCount
)

var gvks = map[Kind]schema.GroupVersionKind{
	WorkloadPodGroup:     {Group: "scheduling.k8s.io", Version: "v1alpha3", Kind: "PodGroup"},
	JobSet:               {Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
	RayCluster:           {Group: "ray.io", Version: "v1", Kind: "RayCluster"},
	LeaderWorkerSet:      {Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
	PyTorchJob:           {Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"},
	MPIJob:               {Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"},
	CoschedulingPodGroup: {Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"},
}

// kubeflowOperators maps the training.kubeflow.org/operator-name label to the kind.
var kubeflowOperators = map[string]Kind{"pytorchjob-controller": PyTorchJob, "mpi-operator": MPIJob}

// GVK is the group, version and kind of the object that sizes the gangs of kind k;
// ok is false for kinds the pods alone size.
func (k Kind) GVK() (gvk schema.GroupVersionKind, ok bool) {
	gvk, ok = gvks[k]
	return gvk, ok
}

// Kinds are the kinds whose objects size their gangs, in a fixed order: the objects a
// caller watches (each only where the API server serves it).
func Kinds() []Kind {
	ks := make([]Kind, 0, len(gvks))
	for k := range gvks {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b Kind) int { return cmp.Compare(a, b) })
	return ks
}

// KindOf is the kind whose objects have gvk; ok is false for others.
func KindOf(gvk schema.GroupVersionKind) (Kind, bool) {
	for k, g := range gvks {
		if g == gvk {
			return k, true
		}
	}
	return "", false
}

// Ref names the gang a pod belongs to.
type Ref struct {
	Kind Kind
	// Object is the name of the object that sizes the gang, in the pod's namespace;
	// "" for kinds the pods alone size.
	Object string
	// Gang is the gang's name within its namespace and kind: the object's name, with
	// the JobSet restart attempt after a restart, or the LeaderWorkerSet group index.
	Gang string
	// UID is the owning object's UID where the pod names it, else "".
	UID string

	declared string // the size the pod declares (LeaderWorkerSet, Kueue), "" for none
	leader   bool   // a LeaderWorkerSet group's leader
	attempt  string // the JobSet restart attempt
}

// Key is the gang's key within its namespace: kind and gang name.
func (r Ref) Key() string { return string(r.Kind) + "/" + r.Gang }

// ObjectKey is the key of an object of kind k: kind, namespace and name.
func ObjectKey(k Kind, namespace, name string) string {
	return string(k) + "/" + namespace + "/" + name
}

// Attempt is a JobSet gang's restart attempt, as its pods' label says.
func (r Ref) Attempt() string { return r.attempt }

// Leader reports whether the pod is a LeaderWorkerSet group's leader.
func (r Ref) Leader() bool { return r.leader }

// Of finds the workload gang pod p belongs to, from what its controller wrote on it;
// ok is false for a pod of none.
func Of(p *corev1.Pod) (r Ref, ok bool) {
	l := p.Labels
	switch {
	case p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil && *p.Spec.SchedulingGroup.PodGroupName != "":
		name := *p.Spec.SchedulingGroup.PodGroupName
		return Ref{Kind: WorkloadPodGroup, Object: name, Gang: name}, true
	case l[LabelJobSetName] != "":
		name, attempt := l[LabelJobSetName], l[LabelJobSetAttempt]
		gang := name
		if attempt != "" && attempt != "0" {
			gang = name + "-attempt-" + attempt
		}
		return Ref{Kind: JobSet, Object: name, Gang: gang, UID: l[LabelJobSetUID], attempt: attempt}, true
	case l[LabelRayCluster] != "":
		if o := controllerOf(p, "RayCluster"); o != nil {
			return Ref{Kind: RayCluster, Object: o.Name, Gang: o.Name, UID: string(o.UID)}, true
		}
	case l[LabelLWSName] != "" && l[LabelLWSGroupIndex] != "":
		name := l[LabelLWSName]
		return Ref{Kind: LeaderWorkerSet, Object: name, Gang: name + "-" + l[LabelLWSGroupIndex],
			declared: p.Annotations[AnnotationLWSSize], leader: l[LabelLWSWorkerIndex] == "0"}, true
	case l[LabelKubeflowJobName] != "" && kubeflowOperators[l[LabelKubeflowOperator]] != "":
		k, name := kubeflowOperators[l[LabelKubeflowOperator]], l[LabelKubeflowJobName]
		r := Ref{Kind: k, Object: name, Gang: name}
		if o := controllerOf(p, gvks[k].Kind); o != nil && o.Name == name {
			r.UID = string(o.UID)
		}
		return r, true
	case l[LabelCoscheduling] != "":
		name := l[LabelCoscheduling]
		return Ref{Kind: CoschedulingPodGroup, Object: name, Gang: name}, true
	case l[LabelKueuePodGroup] != "":
		name := l[LabelKueuePodGroup]
		return Ref{Kind: KueuePodGroup, Gang: name, declared: p.Annotations[AnnotationKueueTotal]}, true
	}
	return Ref{}, false
}

// controllerOf is the pod's controller when it is of the kind named.
func controllerOf(p *corev1.Pod, kind string) *metav1.OwnerReference {
	if o := metav1.GetControllerOfNoCopy(p); o != nil && o.Kind == kind {
		return o
	}
	return nil
}

// APIVersion is the apiVersion of the objects of kind k ("" for kinds without one).
func (k Kind) APIVersion() string {
	gvk, ok := gvks[k]
	if !ok {
		return ""
	}
	return strings.TrimPrefix(gvk.Group+"/"+gvk.Version, "/")
}
