package volcano_test

import (
	"bytes"
	"os"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/volcano"
)

// FuzzConvert reads and converts the fuzzer's file: it is refused with an error or
// becomes objects the API server accepts (a batch/v1 Job's restart policy and counts,
// a PodGroup's gang size), never a panic. The seeds are the test fixture, each of
// its documents alone, and the cases of TestConvertCases' kinds.
func FuzzConvert(f *testing.F) {
	fixture, err := os.ReadFile("testdata/volcano.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	for _, doc := range bytes.Split(fixture, []byte("\n---\n")) {
		f.Add(doc)
	}
	f.Add([]byte(vcjob("  minAvailable: 3\n  ttlSecondsAfterFinished: 60\n", "      replicas: 2\n      dependsOn: {name: [a]}\n")))
	f.Add([]byte(vcqueue + "  weight: -3\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: a}}]\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := volcano.Read(data, "f.yaml")
		if err != nil {
			return
		}
		out, _, err := volcano.Convert(objs, volcano.Options{RewriteNvidiaGPU: true})
		if err != nil {
			return
		}
		for _, o := range out {
			switch o := o.(type) {
			case *batchv1.Job:
				if p := o.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
					t.Errorf("Job %s: restartPolicy %q", o.Name, p)
				}
				if p := o.Spec.Parallelism; p != nil && *p < 0 {
					t.Errorf("Job %s: parallelism %d", o.Name, *p)
				}
			case *tesserav1.PodGroup:
				if o.Spec.MinMember < 0 {
					t.Errorf("PodGroup %s: minMember %d", o.Name, o.Spec.MinMember)
				}
			case *tesserav1.Queue:
				if o.Spec.Weight < 0 {
					t.Errorf("Queue %s: weight %d", o.Name, o.Spec.Weight)
				}
			}
		}
	})
}
