package apitest_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

func ExampleMakePod() {
	pod := apitest.MakePod("train-0", "team").GPU(8).Queue("train").Group("train").Obj()
	gpus := pod.Spec.Containers[0].Resources.Limits[tesserav1.ResourceGPU]
	fmt.Println(pod.Namespace, pod.Name, pod.Labels[tesserav1.LabelQueue], pod.Labels[tesserav1.LabelPodGroup], gpus.String())
	// Output: team train-0 train train 8
}

// TestMetadataSetters: every wrapper's metadata setters reach its object.
func TestMetadataSetters(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, o := range []metav1.Object{
		apitest.MakePod("x", "ns").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakeNode("x").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakeQueue("x").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakePodGroup("x", "ns").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakeGPUNode("x").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakeJob("x", "ns").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakePDB("x", "ns").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakePriorityClass("x", 1).Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
		apitest.MakeNamespace("x").Label("k", "v").Annotation("a", "b").UID("u").Created(at).Deleting(at).Obj(),
	} {
		if o.GetName() != "x" || o.GetLabels()["k"] != "v" || o.GetAnnotations()["a"] != "b" || o.GetUID() != "u" ||
			!o.GetCreationTimestamp().Time.Equal(at) || o.GetDeletionTimestamp() == nil {
			t.Errorf("%T: metadata %+v", o, o)
		}
	}
}

// TestObjIsTheWrappersObject: setters called after Obj still change the object, and a
// second Make starts afresh.
func TestObjIsTheWrappersObject(t *testing.T) {
	w := apitest.MakeNode("a")
	n := w.Obj()
	w.GPUs(2, "T4", 15360)
	if n.Labels[tesserav1.LabelGPUModel] != "T4" || n.Status.Capacity.Name(tesserav1.ResourceGPU, "").Value() != 2 {
		t.Errorf("node = %+v", n)
	}
	if apitest.MakeNode("a").Obj().Labels != nil {
		t.Error("a new wrapper shares the first one's labels")
	}
}
