package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/testenv"
	"github.com/tessera-gpu/tessera/volcano"
)

// TestDryRunConvertVolcanoJobSet: what convert volcano writes for Volcano Jobs of
// several tasks (a JobSet, the ssh plugin's Secret, the svc plugin's ConfigMap), from
// every fixture, Volcano's MPI, TensorFlow and task-dependency examples among them,
// passes a server-side dry run on an API server with JobSet's CRD (v0.11.1, from
// hack/workload-crds.sh); a JobSet that orders its jobs twice over does not.
func TestDryRunConvertVolcanoJobSet(t *testing.T) {
	e := requireEnv(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := exec.Command(filepath.Join(root, "hack", "workload-crds.sh")).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	if err != nil {
		testenv.SkipOrFail(t, fmt.Errorf("JobSet's CRD (hack/workload-crds.sh): %w", err))
	}
	crd := filepath.Join(strings.TrimSpace(string(dir)), "jobset.x-k8s.io_jobsets.yaml")
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{crd}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install JobSet's CRD: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "volcano", "testdata", "*.yaml"))
	kinds := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, err := volcano.Read(b, f)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := volcano.Convert(in, volcano.Options{JobSet: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range out {
			y, err := yaml.Marshal(o) // as convert writes it
			if err != nil {
				t.Fatal(err)
			}
			u := decode(t, string(y))
			kinds[u.GetKind()]++
			if err := dryRun(t, e, u); err != nil {
				t.Errorf("%s: %s %s: %v\n%s", filepath.Base(f), u.GetKind(), u.GetName(), err, y)
			}
		}
	}
	if kinds["JobSet"] < 4 || kinds["Secret"] == 0 || kinds["ConfigMap"] < 2 {
		t.Errorf("the fixtures convert to too few JobSets, Secrets and ConfigMaps: %v", kinds)
	}
	twice := "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j, namespace: dry-run}\nspec:\n  startupPolicy: {startupPolicyOrder: InOrder}\n  replicatedJobs:\n" +
		"  - {name: a, template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}}}\n" +
		"  - {name: b, dependsOn: [{name: a, status: Ready}], template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}}}\n"
	if err := dryRun(t, e, decode(t, twice)); err == nil || !strings.Contains(err.Error(), "StartupPolicy and DependsOn APIs are mutually exclusive") {
		t.Errorf("got %v, want the CRD's rule refusing startupPolicy InOrder with dependsOn", err)
	}
}
