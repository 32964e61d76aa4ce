package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/internal/cli/clitest"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// execute runs the command line and returns its standard output (stderr is dropped).
func execute(args ...string) (string, error) {
	out, _, err := clitest.Execute(newRootCommand(), args...)
	return out, err
}

func TestSimulateScenarioJSONAndReport(t *testing.T) {
	html := filepath.Join(t.TempDir(), "r.html")
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"simulate", "--scenario", "operator", "--profile", "kube-default,tessera", "--first-seed", "100", "--format", "json", "--report", html})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
		Summary []map[string]any `json:"summary"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, out.String())
	}
	if len(doc.Results) != 2 || len(doc.Summary) != 2 || doc.Results[1]["policy"] != "tessera" || doc.Results[1]["seed"] != 100.0 {
		t.Fatalf("results: %+v", doc)
	}
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("report: %v", err)
	}
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	tesseraYAML := filepath.Join(dir, "tessera.yaml")
	other := filepath.Join(dir, "sub", "mine.yaml")
	mine := filepath.Join(dir, "mine.yaml")
	for _, p := range []string{tesseraYAML, mine, other} {
		writeFile(t, p, "tiers:\n- plugins: [{name: predicates}, {name: gpufit}]\n")
	}
	noPolicy, badPolicy := filepath.Join(dir, "none.yaml"), filepath.Join(dir, "bad.yaml")
	writeFile(t, noPolicy, "apiVersion: tessera.dev/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: 1}\n")
	writeFile(t, badPolicy, "apiVersion: tessera.dev/v1alpha1\nkind: ScaleDownPolicy\nmetadata: {name: p}\nspec: {idleAfter: -1m}\n")
	for args, want := range map[string]string{
		"simulate --trace default --mode sometimes":                                 "--mode",
		"simulate --trace nosuch":                                                   "unknown openb pod list",
		"simulate --trace default --profile best":                                   `--profile: unknown profile "best"`,
		"simulate --nodes n.csv":                                                    "--nodes and --pods go together",
		"simulate":                                                                  "no input",
		"simulate --trace default --arrive NaN":                                     "--arrive: must be a finite number between 0 and 10, got NaN",
		"simulate --trace default --arrive Inf":                                     "--arrive: must be a finite number between 0 and 10, got +Inf",
		"simulate --trace default --arrive 1e9":                                     "--arrive: must be a finite number between 0 and 10, got 1e+09",
		"simulate --trace default --arrive 0":                                       "--arrive: must be a finite number between 0 and 10, got 0",
		"simulate --trace default --seeds 0":                                        "--seeds: must be between 1 and 1000, got 0",
		"simulate --trace default --seeds 100000":                                   "--seeds: must be between 1 and 1000, got 100000",
		"simulate --trace default --first-seed 0":                                   "--first-seed 0: use 1 or more",
		"simulate --manifests m.yaml --first-seed 7":                                "--first-seed does not apply to --manifests",
		"simulate --trace default --scenario operator":                              "--trace and --scenario: give one input",
		"simulate --trace default --nodes n.csv --pods p.csv":                       "--trace and --nodes: give one input",
		"simulate --manifests m.yaml --trace default":                               "--trace and --manifests: give one input",
		"simulate --manifests m.yaml --mode fillup":                                 "--mode does not apply to --manifests",
		"simulate --manifests m.yaml --seeds 3":                                     "--seeds does not apply to --manifests",
		"simulate --manifests m.yaml --report r.html":                               "--report does not apply to --manifests",
		"simulate --trace default --admission=false":                                "--admission applies to --manifests and --from-cluster only",
		"simulate --manifests m.yaml --from-cluster":                                "--manifests and --from-cluster: give one input",
		"simulate --trace default --kubeconfig k":                                   "--kubeconfig applies to --from-cluster only",
		"simulate --from-cluster --seeds 2":                                         "--seeds does not apply to --manifests or --from-cluster",
		"simulate --scenario operator --arrive 1.1":                                 "--arrive applies to --mode fillup only",
		"simulate --trace default --mode replay --arrive 1":                         "--arrive applies to --mode fillup only",
		"simulate --scenario operator --mode fillup":                                "--scenario runs in --mode replay",
		"simulate --trace default --autoscale":                                      "--autoscale applies to --mode replay only",
		"simulate --scenario operator --boot-delay 1m":                              "--boot-delay applies with --autoscale only",
		"simulate --scenario operator --autoscale --boot-delay -1m":                 "--boot-delay -1m0s: must not be negative",
		"simulate --scenario operator --autoscale --underused-share 2":              "--underused-share 2: must be a share between 0 and 1",
		"simulate --scenario operator --underused-share 0.5":                        "--underused-share applies with --autoscale only",
		"simulate --scenario operator --scale-down-policy p.yaml":                   "--scale-down-policy applies with --autoscale or --rightsizing only",
		"simulate --scenario operator --autoscale --scale-down-policy " + noPolicy:  "holds 0 ScaleDownPolicies; give a file with exactly one",
		"simulate --scenario operator --autoscale --scale-down-policy " + badPolicy: "idleAfter",
		"simulate --manifests m.yaml --autoscale":                                   "--autoscale does not apply to --manifests",
		"simulate --trace default --rightsizing":                                    "--rightsizing applies to --mode replay only",
		"simulate --manifests m.yaml --rightsizing":                                 "--rightsizing does not apply to --manifests",
		"simulate --scenario operator --idle-for 30m":                               "--idle-for and --idle-grace apply with --rightsizing only",
		"simulate --scenario operator --arms burstable":                             "--arms applies with --rightsizing only",
		"simulate --scenario operator --every-autoscaler":                           "--every-autoscaler applies with --autoscale or --rightsizing only",
		"simulate --scenario operator --rightsizing --idle-grace -1m":               "idle-grace not negative",
		"simulate --scenario diurnal --scenario-nodes 0":                            "--scenario-nodes 0: must be a number of nodes from 1 to 20000 (for example 5000)",
		"simulate --scenario operator --scenario-nodes 100000":                      "--scenario-nodes 100000: must be a number of nodes from 1 to 20000",
		"simulate --scenario operator --scenario-load 0":                            "--scenario-load 0: must be a multiple of the arrival rates above 0 and at most 100",
		"simulate --scenario operator --scenario-load NaN":                          "--scenario-load NaN: must be a multiple of the arrival rates above 0",
		"simulate --scenario operator --scenario-hours -1":                          "--scenario-hours -1: must be an arrival window above 0 hours",
		"simulate --scenario operator --scenario-hours 1e6":                         "--scenario-hours 1e+06: must be an arrival window above 0 hours (at least a second) and at most 8784",
		"simulate --trace default --scenario-nodes 40":                              "--scenario-nodes applies to --scenario only",
		"simulate --manifests m.yaml --scenario-load 2":                             "--scenario-load does not apply to --manifests",
		"simulate --trace default --profile tessera,tessera":                        "--profile: tessera is named twice",
		"simulate --trace default --config " + tesseraYAML:                          `runs as "tessera", the name of a built-in profile; rename the file`,
		"simulate --trace default --config " + mine + " --config " + other:          `runs as "mine", a name --config ` + mine + " already gives",
	} {
		if _, err := execute(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A scenario variant runs under its own name; the defaults given explicitly are the
// scenario itself.
func TestSimulateScenarioVariant(t *testing.T) {
	trace := func(args ...string) string {
		t.Helper()
		out, err := execute(append([]string{"simulate", "--scenario", "operator", "--profile", "tessera", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Summary []struct {
				Trace  string `json:"trace"`
				Replay struct {
					P99WaitSeconds *float64 `json:"p99_wait_seconds"`
					MeanJCTSeconds *float64 `json:"mean_jct_seconds"`
				} `json:"replay"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Summary) != 1 {
			t.Fatalf("%v\n%s", err, out)
		}
		if r := doc.Summary[0].Replay; r.P99WaitSeconds == nil || r.MeanJCTSeconds == nil || *r.MeanJCTSeconds <= 0 {
			t.Errorf("tail figures missing: %s", out)
		}
		return doc.Summary[0].Trace
	}
	if got := trace("--scenario-nodes", "10", "--scenario-load", "1", "--scenario-hours", "24"); got != "operator" {
		t.Errorf("the defaults given: trace %q, want operator", got)
	}
	if got := trace("--scenario-nodes", "5", "--scenario-load", "0.5", "--scenario-hours", "6"); got != "operator (5 nodes, load 0.5, 6h)" {
		t.Errorf("trace %q", got)
	}
	// A variant too large to hold is refused before it is generated.
	testutil.Within(t, 20*time.Second, func() {
		_, err := execute("simulate", "--scenario", "diurnal", "--scenario-nodes", "20000", "--scenario-load", "100")
		if want := "jobs expected, more than 20000000; lower the nodes, the load or the hours (--scenario-nodes"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	})
}

// Inputs that once hung while eating gigabytes now fail at once, naming the bound.
func TestSimulateBoundsHugeInputs(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	writeFile(t, pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,1000\n")
	for gpus, want := range map[string]string{
		"1000000000": "nodes.csv:2: column gpu: 1000000000 GPUs; at most 64 per node are supported",
		"100000":     "nodes.csv:2: column gpu: 100000 GPUs; at most 64 per node",
		"65":         "nodes.csv:2: column gpu: 65 GPUs; at most 64 per node",
	} {
		nodes := filepath.Join(dir, "nodes.csv")
		writeFile(t, nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,"+gpus+",A100\n")
		testutil.Within(t, 20*time.Second, func() {
			if _, err := execute("simulate", "--nodes", nodes, "--pods", pods); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s GPUs: got %v, want %q", gpus, err, want)
			}
		})
	}
	for _, arrive := range []string{"1e9", "NaN", "Inf"} {
		testutil.Within(t, 20*time.Second, func() {
			if _, err := execute("simulate", "--trace", "default", "--arrive", arrive); err == nil || !strings.Contains(err.Error(), "--arrive: must be a finite number") {
				t.Errorf("--arrive %s: %v", arrive, err)
			}
		})
	}
}

// An unwritable --report fails before the run, not after it.
func TestSimulateReportPathCheckedFirst(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "missing-dir", "r.html")
	testutil.Within(t, 5*time.Second, func() {
		if _, err := execute("simulate", "--trace", "default", "--seeds", "1000", "--report", bad); err == nil || !strings.HasPrefix(err.Error(), "--report: open "+bad) {
			t.Errorf("got %v", err)
		}
	})
}

func TestSimulateManifests(t *testing.T) {
	out, err := execute("simulate", "--manifests", "../../sim/testdata/manifests-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"team/pair-0", "scheduled", "NotEnqueued", "gang needs 24 GPU but queue research has capability 12 GPU",
		"admission warning: Pod team/notebook"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The manifests pass the admission policies first, the defaults and their own
// AdmissionPolicy: a plain GPU pod is defaulted onto Tessera and placed, an oversized
// slice and a :latest image are denied. Without admission, no pod is Tessera's.
func TestSimulateManifestsAdmission(t *testing.T) {
	run := func(args ...string) string {
		out, err := execute(append([]string{"simulate", "--manifests", "../../sim/testdata/manifests-admission.yaml"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	with := run()
	for _, want := range []string{
		"team/plain  gpu-0", "scheduled",
		"Pod team/too-big", "largest GPU in the cluster has 81920 MiB",
		"Pod team/floating", "no-latest: container main uses a :latest image",
	} {
		if !strings.Contains(with, want) {
			t.Errorf("with admission, output lacks %q:\n%s", want, with)
		}
	}
	without := run("--admission=false")
	if strings.Contains(without, "scheduled") || !strings.Contains(without, `Pod team/plain: spec.schedulerName "" is not tessera`) {
		t.Errorf("without admission:\n%s", without)
	}

	var doc struct {
		Admission struct {
			Denied []struct{ Object, Message string } `json:"denied"`
		} `json:"admission"`
	}
	if err := json.Unmarshal([]byte(run("--format", "json")), &doc); err != nil || len(doc.Admission.Denied) != 2 {
		t.Errorf("JSON admission: %v %+v", err, doc)
	}
}

func TestSimulateManifestsBadPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.yaml")
	src := "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n---\napiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\n" +
		"metadata:\n  name: broken\nspec:\n  targets: [Pod]\n  rego: |\n    package tessera.broken\n    deny contains x if {\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := execute("simulate", "--manifests", path); err == nil || !strings.Contains(err.Error(), "admissionpolicy/broken.rego:") {
		t.Fatalf("err %v; want the compiler's file:row message", err)
	}
}

// An AdmissionPolicy named like a built-in is rejected unless it replaces it on
// purpose; then the output warns.
func TestSimulateManifestsBuiltinPolicyName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.yaml")
	doc := func(replace string) string {
		return "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n---\napiVersion: tessera.dev/v1alpha1\nkind: AdmissionPolicy\n" +
			"metadata:\n  name: gpu\nspec:\n  targets: [Pod]\n" + replace + "  rego: |\n    package tessera.mygpu\n    warn contains \"x\" if false\n"
	}
	writeFile(t, path, doc(""))
	if _, err := execute("simulate", "--manifests", path); err == nil || !strings.Contains(err.Error(), `"gpu" is the name of a built-in policy`) {
		t.Fatalf("got %v", err)
	}
	writeFile(t, path, doc("  replaceBuiltin: true\n"))
	out, err := execute("simulate", "--manifests", path)
	if err != nil || !strings.Contains(out, "admission warning: AdmissionPolicy gpu replaces the built-in policy gpu") {
		t.Fatalf("got %v:\n%s", err, out)
	}
}

// --autoscale on a small replay: the JSON summary carries an autoscale object with an
// arm per scheduler and autoscaler, and the ceiling.
func TestSimulateAutoscaleJSON(t *testing.T) {
	dir := t.TempDir()
	nodes, pods := filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	writeFile(t, nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,A100\nn1,64000,262144,8,A100\n")
	writeFile(t, pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"+
		"a,1000,1024,8,1000,0,3600\nb,1000,1024,8,1000,0,3600\nc,1000,1024,8,1000,21600,25200\n")
	out, err := execute("simulate", "--nodes", nodes, "--pods", pods, "--mode", "replay", "--profile", "tessera,volcano", "--autoscale", "--boot-delay", "2m",
		"--non-evictable-share", "0", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary []struct {
			Autoscale *struct {
				CeilingSavedPct float64 `json:"ceiling_saved_pct"`
				Arms            []struct {
					Scheduler   string  `json:"scheduler"`
					Autoscaler  string  `json:"autoscaler"`
					SavedPct    float64 `json:"saved_pct"`
					NetSavedPct float64 `json:"net_saved_pct"`
				} `json:"arms"`
			} `json:"autoscale"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Summary) != 2 || doc.Summary[0].Autoscale == nil || doc.Summary[0].Autoscale.CeilingSavedPct <= 0 {
		t.Fatalf("summary: %s", out)
	}
	var arms []string
	for _, a := range doc.Summary[0].Autoscale.Arms {
		arms = append(arms, a.Scheduler+"+"+a.Autoscaler)
		if a.Autoscaler != "always-on" && (a.SavedPct <= 0 || a.NetSavedPct > a.SavedPct) {
			t.Errorf("%s+%s: saved %g%%, net %g%%", a.Scheduler, a.Autoscaler, a.SavedPct, a.NetSavedPct)
		}
	}
	if want := "tessera+always-on tessera+tessera volcano+always-on volcano+ca volcano+karpenter"; strings.Join(arms, " ") != want {
		t.Errorf("arms %v, want %s", arms, want)
	}
}

// --rightsizing on a small replay: every arm runs autoscaled, and the JSON summary and
// the table compare them.
func TestSimulateRightSizing(t *testing.T) {
	dir := t.TempDir()
	nodes, pods := filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	writeFile(t, nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,A100\n")
	csv := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
	for i := range 12 {
		csv += fmt.Sprintf("p%d,1000,1024,1,1000,%d,%d\n", i, i*1800, i*1800+3600)
	}
	writeFile(t, pods, csv)
	args := []string{"simulate", "--nodes", nodes, "--pods", pods, "--mode", "replay", "--profile", "tessera", "--rightsizing"}
	out, err := execute(append(args, "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary []struct {
			Policy      string    `json:"policy"`
			Autoscale   *struct{} `json:"autoscale"`
			RightSizing *struct {
				Arms []struct {
					Arm           string   `json:"arm"`
					GPUHours      float64  `json:"gpu_hours"`
					SavingVsWhole *float64 `json:"saving_vs_whole"`
				} `json:"arms"`
			} `json:"rightsizing"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Summary) != 8 || doc.Summary[0].RightSizing == nil || doc.Summary[0].Autoscale == nil {
		t.Fatalf("summary: %s", out)
	}
	var arms []string
	for _, a := range doc.Summary[0].RightSizing.Arms {
		arms = append(arms, a.Arm)
		if a.GPUHours <= 0 || a.SavingVsWhole == nil {
			t.Errorf("%s: %g GPU-hours, saving %v", a.Arm, a.GPUHours, a.SavingVsWhole)
		}
	}
	if want := "tessera/whole tessera/user tessera/rightsized tessera/burstable tessera/rightsized+reclaim tessera/rightsized+reclaim-optout tessera/workload-peak tessera/perfect"; strings.Join(arms, " ") != want {
		t.Errorf("arms %v, want %s", arms, want)
	}
	if _, err := execute("simulate", "--nodes", nodes, "--pods", pods, "--mode", "replay", "--profile", "kube-default", "--rightsizing", "--arms", "rightsized,burstable"); err == nil ||
		!strings.Contains(err.Error(), "profiles that cannot share GPUs (wholeGPUs) run only whole, user") {
		t.Errorf("kube-default, which gives slices whole GPUs, with right-sized arms only: %v", err)
	}
	table, err := execute(args...)
	if err != nil || !strings.Contains(table, "GPU right-sizing and idle reclaim") || !strings.Contains(table, "tessera/rightsized+reclaim") {
		t.Fatalf("table (%v):\n%s", err, table)
	}
}

// simulate exits as lint, preview and convert do: 2 for input it cannot use, naming
// the file and the field; several files and directories are one cluster; a batch Job
// scheduled by Volcano is converted and its pods placed.
func TestSimulateManifestsInputAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	node := filepath.Join(dir, "node.yaml")
	writeFile(t, node, "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", tessera.dev/gpu: \"8\"}\n")
	job := func(name, parallelism, podSpec string) string {
		p := filepath.Join(dir, "jobs", name+".yaml")
		writeFile(t, p, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: "+name+", namespace: default}\nspec:\n  parallelism: "+parallelism+
			"\n  template:\n    spec:\n      restartPolicy: Never\n"+podSpec)
		return p
	}
	volcanoJob := job("vb", "2", "      schedulerName: volcano\n      containers: [{name: c, image: i, resources: {limits: {tessera.dev/gpu: \"1\"}}}]\n")
	for _, args := range [][]string{{"--manifests", node, "--manifests", volcanoJob}, {"--manifests", node + "," + filepath.Dir(volcanoJob)}} {
		out, err := execute(append([]string{"simulate"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out, "default/vb-0  n1") || !strings.Contains(out, "default/vb-1  n1") || !strings.Contains(out, node+", ") {
			t.Errorf("%v: the Volcano Job's pods are not placed:\n%s", args, out)
		}
	}

	negative := job("neg", "-3", "      containers: [{name: c, image: i}]\n")
	noContainers := filepath.Join(dir, "pod.yaml")
	writeFile(t, noContainers, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: []\n")
	for args, want := range map[string]string{
		"--manifests " + node + "," + negative:                               negative + ":doc 1 (Job/neg): spec.parallelism: -3 is negative",
		"--manifests " + node + "," + noContainers:                           noContainers + ":doc 1 (Pod/p): spec.containers: a pod needs at least one container",
		"--manifests " + filepath.Join(dir, "nosuch.yaml"):                   "nosuch.yaml: no such file",
		"--trace default --first-seed 9223372036854775807 --seeds 2":         "the last run's seed would be beyond 9223372036854775807",
		"--trace default --report " + filepath.Join(dir, "no", "r.html"):     "--report: open",
		"--nodes " + filepath.Join(dir, "n.csv") + " --pods " + noContainers: "n.csv",
	} {
		_, err := execute(append([]string{"simulate"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != 2 {
			t.Errorf("simulate %s: %v (exit %d), want exit 2 naming %q", args, err, exitCode(err), want)
		}
	}
	if help, _ := execute("simulate", "--help"); !strings.Contains(help, "Exit codes: 0 success, 1 ") || !strings.Contains(help, ", 2 unusable input") {
		t.Errorf("help does not state the exit codes:\n%s", help)
	}
}
