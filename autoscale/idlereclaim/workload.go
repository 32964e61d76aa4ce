package idlereclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// AnnotationReplicas on a Deployment, StatefulSet or LeaderWorkerSet scaled to zero by
// idle reclaim holds its replicas before, so that its owner can restore them.
const AnnotationReplicas = "tessera.dev/idle-reclaim-replicas"

// how says how a kind of workload is suspended.
type how int

const (
	// through passes on to the object's controller: the object is never suspended itself.
	through how = iota
	// suspend sets a boolean field in the spec, as Kueue does; the controller removes
	// the pods and recreates them when it is cleared.
	suspend
	// scale sets spec.replicas to 0, recording the count before in AnnotationReplicas.
	scale
)

// kind is a workload kind idle reclaim knows.
type kind struct {
	how how
	// field is the path of the suspend flag.
	field []string
	// owned: the object may be run by another known kind (a Job by a JobSet, a
	// RayCluster by a RayJob); reclaim follows its controller up.
	owned bool
}

// kinds are the kinds idle reclaim suspends or looks through, by group and kind.
var kinds = map[schema.GroupKind]kind{
	{Group: "batch", Kind: "Job"}:                                {how: suspend, field: []string{"spec", "suspend"}, owned: true},
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:                   {how: suspend, field: []string{"spec", "suspend"}},
	{Group: "ray.io", Kind: "RayCluster"}:                        {how: suspend, field: []string{"spec", "suspend"}, owned: true},
	{Group: "ray.io", Kind: "RayJob"}:                            {how: suspend, field: []string{"spec", "suspend"}},
	{Group: "kubeflow.org", Kind: "MPIJob"}:                      {how: suspend, field: []string{"spec", "runPolicy", "suspend"}},
	{Group: "kubeflow.org", Kind: "PyTorchJob"}:                  {how: suspend, field: []string{"spec", "runPolicy", "suspend"}},
	{Group: "apps", Kind: "Deployment"}:                          {how: scale},
	{Group: "apps", Kind: "StatefulSet"}:                         {how: scale, owned: true},
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: {how: scale},
	{Group: "apps", Kind: "ReplicaSet"}:                          {how: through, owned: true},
	{Group: "", Kind: "Pod"}:                                     {how: through, owned: true},
}

// workload is what suspending a pod acts on: the outermost object of a known kind
// that controls it, or nil (the pod is evicted).
type workload struct {
	obj  *unstructured.Unstructured
	kind kind
}

// name is "Kind namespace/name".
func (w *workload) name() string {
	return w.obj.GetKind() + " " + w.obj.GetNamespace() + "/" + w.obj.GetName()
}

// resolver finds a pod's workload by following controller references through the
// kinds it knows, reading each object from the API server (pods from pods).
type resolver struct {
	api  client.Reader
	pods map[types.UID]*corev1.Pod
}

// workload returns p's workload (nil: none of a kind it suspends) and whether p or an
// object on the way carries the opt-out tessera.dev/idle-reclaim: "false".
func (r *resolver) workload(ctx context.Context, p *corev1.Pod) (*workload, bool, error) {
	optOut := p.Annotations[tesserav1.AnnotationIdleReclaim] == "false"
	var top *workload
	ref := metav1.GetControllerOf(p)
	for depth := 0; ref != nil && depth < 8; depth++ {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil, false, fmt.Errorf("pod %s/%s: owner %s %s: %w", p.Namespace, p.Name, ref.Kind, ref.Name, err)
		}
		k, known := kinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
		if !known {
			break
		}
		obj, err := r.get(ctx, gv.WithKind(ref.Kind), p.Namespace, ref)
		if err != nil {
			return nil, false, err
		}
		if obj == nil {
			break // gone, or replaced: what was found below it is the workload
		}
		optOut = optOut || obj.GetAnnotations()[tesserav1.AnnotationIdleReclaim] == "false"
		if k.how != through {
			top = &workload{obj: obj, kind: k}
		}
		if !k.owned {
			break
		}
		ref = metav1.GetControllerOfNoCopy(obj)
	}
	return top, optOut, nil
}

// get reads the object ref names; nil when it is gone or was replaced.
func (r *resolver) get(ctx context.Context, gvk schema.GroupVersionKind, ns string, ref *metav1.OwnerReference) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if gvk.Group == "" && gvk.Kind == "Pod" {
		p := r.pods[ref.UID]
		if p == nil {
			return nil, nil
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return nil, err
		}
		obj.Object = m
		obj.SetGroupVersionKind(gvk)
		return obj, nil
	}
	obj.SetGroupVersionKind(gvk)
	if err := r.api.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if obj.GetUID() != ref.UID {
		return nil, nil
	}
	return obj, nil
}

// suspend suspends w through c and says what it did: "set spec.suspend",
// "scaled from 3 to 0 replicas". Suspending a suspended workload changes nothing.
func (w *workload) suspend(ctx context.Context, c client.Client, api client.Reader) (string, error) {
	switch w.kind.how {
	case suspend:
		patch := map[string]any{}
		leaf := patch
		for _, f := range w.kind.field[:len(w.kind.field)-1] {
			next := map[string]any{}
			leaf[f] = next
			leaf = next
		}
		leaf[w.kind.field[len(w.kind.field)-1]] = true
		if err := mergePatch(ctx, c, w.obj, patch); err != nil {
			return "", err
		}
		return fmt.Sprintf("set %s to true", strings.Join(w.kind.field, ".")), nil
	default: // scale
		fresh := &unstructured.Unstructured{}
		fresh.SetGroupVersionKind(w.obj.GroupVersionKind())
		if err := api.Get(ctx, client.ObjectKeyFromObject(w.obj), fresh); err != nil {
			return "", err
		}
		replicas, found, err := unstructured.NestedInt64(fresh.Object, "spec", "replicas")
		if err != nil {
			return "", fmt.Errorf("%s: spec.replicas: %w", w.name(), err)
		}
		if !found {
			replicas = 1 // the API server's default
		}
		if replicas == 0 {
			return "found it at 0 replicas already", nil
		}
		// One patch records the count and scales, under the version read: a crash
		// never leaves a workload at zero without its count.
		patch := map[string]any{
			"metadata": map[string]any{"resourceVersion": fresh.GetResourceVersion(), "annotations": map[string]any{AnnotationReplicas: strconv.FormatInt(replicas, 10)}},
			"spec":     map[string]any{"replicas": 0},
		}
		if err := mergePatch(ctx, c, fresh, patch); err != nil {
			return "", err
		}
		return fmt.Sprintf("scaled it from %d to 0 replicas (annotation %s records %d)", replicas, AnnotationReplicas, replicas), nil
	}
}

func mergePatch(ctx context.Context, c client.Client, obj *unstructured.Unstructured, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(obj.GroupVersionKind())
	target.SetNamespace(obj.GetNamespace())
	target.SetName(obj.GetName())
	return c.Patch(ctx, target, client.RawPatch(types.MergePatchType, b))
}
