package volcano_test

import (
	"bytes"
	"os"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/volcano"
)

// FuzzConvert reads and converts the fuzzer's file, with JobSets and without: it is
// refused with an error or becomes objects the API server accepts (a batch/v1 Job's
// restart policy and counts, a PodGroup's gang size, a JobSet's order), never a
// panic. The seeds are the test fixtures, each of the first's documents alone, and
// the cases of TestConvertCases' and TestConvertJobSetCases' kinds.
func FuzzConvert(f *testing.F) {
	fixture, err := os.ReadFile("testdata/volcano.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	for _, doc := range bytes.Split(fixture, []byte("\n---\n")) {
		f.Add(doc)
	}
	for _, name := range []string{"mpi-example", "mpi-depends-on"} {
		b, err := os.ReadFile("testdata/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(vcjob("  minAvailable: 3\n  ttlSecondsAfterFinished: 60\n", "      replicas: 2\n      dependsOn: {name: [a]}\n")))
	f.Add([]byte(twoTasks("  plugins: {env: [], svc: [--disable-network-policy]}\n", "      dependsOn: {name: [b], iteration: any}\n", "      policies: [{event: TaskCompleted, action: CompleteJob}]\n")))
	f.Add([]byte(vcqueue + "  weight: -3\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: a}}]\n"))
	f.Add([]byte(""))
	f.Cleanup(volcano.FakeSSHKeys())
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := volcano.Read(data, "f.yaml")
		if err != nil {
			return
		}
		for _, jobSet := range []bool{false, true} {
			out, _, err := volcano.Convert(objs, volcano.Options{RewriteNvidiaGPU: true, JobSet: jobSet})
			if err == nil {
				checkOutput(t, out)
			}
		}
	})
}

// checkOutput fails t for what the API server would refuse in out.
func checkOutput(t *testing.T, out []runtime.Object) {
	t.Helper()
	for _, o := range out {
		switch o := o.(type) {
		case *batchv1.Job:
			checkJob(t, "Job "+o.Name, &o.Spec)
		case *volcano.JobSet:
			var earlier []string
			for i, rj := range o.Spec.ReplicatedJobs {
				checkJob(t, "JobSet "+o.Name+" "+rj.Name, &rj.Template.Spec)
				for _, d := range rj.DependsOn {
					if !slices.Contains(earlier, d.Name) || o.Spec.StartupPolicy != nil {
						t.Errorf("JobSet %s: replicated job %d depends on %s, after %v (startup policy %v)", o.Name, i, d.Name, earlier, o.Spec.StartupPolicy)
					}
				}
				earlier = append(earlier, rj.Name)
			}
			if p := o.Spec.SuccessPolicy; p != nil && slices.ContainsFunc(p.TargetReplicatedJobs, func(n string) bool { return !slices.Contains(earlier, n) }) {
				t.Errorf("JobSet %s: success policy %v of %v", o.Name, p.TargetReplicatedJobs, earlier)
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
}

// checkJob fails t for a Job spec's restart policy or parallelism that a Job may not have.
func checkJob(t *testing.T, name string, spec *batchv1.JobSpec) {
	t.Helper()
	if p := spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q", name, p)
	}
	if p := spec.Parallelism; p != nil && *p < 0 {
		t.Errorf("%s: parallelism %d", name, *p)
	}
}
