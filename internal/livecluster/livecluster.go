package livecluster

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// Read lists a live cluster's objects through r, the kinds trace.ReadManifests reads,
// and makes of them what ReadManifests makes of a dump: Volcano objects converted,
// Jobs' missing pods made. Kinds the cluster does not serve (Tessera's or Volcano's
// CRDs not installed) are left out. It only reads.
func Read(ctx context.Context, r client.Reader) (*trace.Manifests, error) {
	m := &trace.Manifests{}
	lists := []struct {
		list     client.ObjectList
		optional bool
	}{
		{&corev1.NodeList{}, false},
		{&corev1.NamespaceList{}, false},
		{&corev1.PodList{}, false},
		{&batchv1.JobList{}, false},
		{&schedulingv1.PriorityClassList{}, false},
		{&tesserav1.QueueList{}, true},
		{&tesserav1.PodGroupList{}, true},
		{&tesserav1.AdmissionPolicyList{}, true},
	}
	for _, l := range lists {
		if err := r.List(ctx, l.list); err != nil {
			if l.optional && notServed(err) {
				continue
			}
			return nil, fmt.Errorf("listing %T: %w", l.list, err)
		}
		switch l := l.list.(type) {
		case *corev1.NodeList:
			m.Nodes = l.Items
		case *corev1.NamespaceList:
			m.Namespaces = l.Items
		case *corev1.PodList:
			m.Pods = l.Items
		case *batchv1.JobList:
			m.Jobs = l.Items
		case *schedulingv1.PriorityClassList:
			m.PriorityClasses = l.Items
		case *tesserav1.QueueList:
			m.Queues = l.Items
		case *tesserav1.PodGroupList:
			m.PodGroups = l.Items
		case *tesserav1.AdmissionPolicyList:
			m.AdmissionPolicies = l.Items
		}
	}
	for _, gvk := range volcanoKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := r.List(ctx, l); err != nil {
			if notServed(err) {
				continue
			}
			return nil, fmt.Errorf("listing Volcano %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			m.AddVolcano(&l.Items[i])
		}
	}
	if err := m.Complete(); err != nil {
		return nil, err
	}
	return m, nil
}

// volcanoKinds are the lists of Volcano objects Read reads.
var volcanoKinds = []schema.GroupVersionKind{
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "QueueList"},
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroupList"},
	{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "JobList"},
}

// notServed reports whether err says the cluster has no API for the kind.
func notServed(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}
