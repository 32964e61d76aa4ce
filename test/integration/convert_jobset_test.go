package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

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
	dir, err := testenv.WorkloadCRDDir(root)
	if err != nil {
		testenv.SkipOrFail(t, err)
	}
	crd := filepath.Join(dir, "jobset.x-k8s.io_jobsets.yaml")
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{crd}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install JobSet's CRD: %v", err)
	}
	kinds := dryRunConversions(t, e, root, volcano.Options{JobSet: true})
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
