package idlereclaim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// obj is an object of apiVersion/kind named name (uid "uid-name"), controlled by owner.
func obj(apiVersion, kind, name string, owner *unstructured.Unstructured, annotations map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace("ns")
	o.SetName(name)
	o.SetUID(types.UID("uid-" + name))
	o.SetAnnotations(annotations)
	if owner != nil {
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}})
	}
	return o
}

func podOf(name string, owner *unstructured.Unstructured, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: annotations}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	}
	return p
}

// The resolver follows controllers through the kinds it knows to the outermost one it
// suspends, reads opt-outs on the way, and stops at kinds it does not know.
func TestResolverFindsTheOutermostWorkload(t *testing.T) {
	optOut := map[string]string{tesserav1.AnnotationIdleReclaim: "false"}
	lws := obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "serve", nil, nil)
	leaderSts := obj("apps/v1", "StatefulSet", "serve", lws, nil)
	leader := podOf("serve-0", leaderSts, nil)
	leaderU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(leader)
	if err != nil {
		t.Fatal(err)
	}
	leaderObj := &unstructured.Unstructured{Object: leaderU}
	leaderObj.SetAPIVersion("v1")
	leaderObj.SetKind("Pod")
	workerSts := obj("apps/v1", "StatefulSet", "serve-0", leaderObj, nil)

	cron := obj("batch/v1", "CronJob", "nightly", nil, nil)
	nightly := obj("batch/v1", "Job", "nightly-1", cron, optOut)
	rayjob := obj("ray.io/v1", "RayJob", "tune", nil, nil)
	raycluster := obj("ray.io/v1", "RayCluster", "tune-rc", rayjob, nil)
	stranger := obj("example.com/v1", "Notebook", "nb", nil, nil)
	replaced := obj("batch/v1", "Job", "old", nil, nil)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, o := range []*unstructured.Unstructured{lws, leaderSts, workerSts, cron, nightly, rayjob, raycluster, replaced} {
		objs = append(objs, o)
	}
	r := &resolver{api: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), pods: map[types.UID]*corev1.Pod{leader.UID: leader}}
	staleRef := podOf("old-0", replaced, nil)
	staleRef.OwnerReferences[0].UID = "uid-of-an-earlier-old"
	for _, c := range []struct {
		pod    *corev1.Pod
		want   string
		optOut bool
	}{
		{podOf("serve-0-1", workerSts, nil), "LeaderWorkerSet ns/serve", false},
		{podOf("nightly-1-x", nightly, nil), "Job ns/nightly-1", true}, // the CronJob is not suspended
		{podOf("tune-rc-head", raycluster, nil), "RayJob ns/tune", false},
		{podOf("nb-0", stranger, optOut), "", true},
		{podOf("lone", nil, nil), "", false},
		{staleRef, "", false},
	} {
		w, out, err := r.workload(context.Background(), c.pod)
		if err != nil {
			t.Fatalf("%s: %v", c.pod.Name, err)
		}
		got := ""
		if w != nil {
			got = w.name()
		}
		if got != c.want || out != c.optOut {
			t.Errorf("%s: workload %q opt-out %v, want %q %v", c.pod.Name, got, out, c.want, c.optOut)
		}
	}
}
