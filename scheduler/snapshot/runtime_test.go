package snapshot

import (
	"testing"
	"time"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// TestExpectedRuntime: the annotation wins over activeDeadlineSeconds, which wins over
// the queue's runtime class; a malformed annotation is reported.
func TestExpectedRuntime(t *testing.T) {
	b := NewBuilder(epoch, Options{})
	short := makeQueue("short")
	short.Annotations = map[string]string{tesserav1.LabelRuntimeClass: tesserav1.RuntimeShort}
	b.AddQueue(short)
	b.AddPod(makePod("ns", "annotated").queue("short").annotate(tesserav1.AnnotationExpectedRuntime, "90m").obj(), 0)
	deadline := makePod("ns", "deadline").queue("short").obj()
	secs := int64(600)
	deadline.Spec.ActiveDeadlineSeconds = &secs
	b.AddPod(deadline, 0)
	b.AddPod(makePod("ns", "class").queue("short").obj(), 0)
	b.AddPod(makePod("ns", "bad").queue("short").annotate(tesserav1.AnnotationExpectedRuntime, "soon").obj(), 0)
	snap, errs := b.Build()
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one for the malformed annotation", errs)
	}
	want := map[string]time.Duration{"annotated": 90 * time.Minute, "deadline": 10 * time.Minute, "class": tesserav1.ShortRuntime, "bad": tesserav1.ShortRuntime}
	for _, j := range snap.Jobs {
		if j.ExpectedRuntime != want[j.Name] {
			t.Errorf("%s: expected runtime %s, want %s", j.Name, j.ExpectedRuntime, want[j.Name])
		}
	}
}
