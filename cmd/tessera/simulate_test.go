package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execute runs the command line and returns its standard output (stderr is dropped).
func execute(args ...string) (string, error) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestSimulateScenarioJSONAndReport(t *testing.T) {
	html := filepath.Join(t.TempDir(), "r.html")
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"simulate", "--scenario", "operator", "--policy", "kube-default,tessera", "--format", "json", "--report", html})
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
	if len(doc.Results) != 2 || len(doc.Summary) != 2 || doc.Results[1]["policy"] != "tessera" {
		t.Fatalf("results: %+v", doc)
	}
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("report: %v", err)
	}
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	for args, want := range map[string]string{
		"simulate --trace default --mode sometimes": "--mode",
		"simulate --trace nosuch":                   "unknown openb pod list",
		"simulate --trace default --policy best":    "unknown policy",
		"simulate --nodes n.csv":                    "--nodes and --pods go together",
		"simulate":                                  "no input",
	} {
		if _, err := execute(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
	}
}

func TestSimulateManifests(t *testing.T) {
	out, err := execute("simulate", "--manifests", "../../scheduler/sim/testdata/manifests-small.yaml")
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
		out, err := execute(append([]string{"simulate", "--manifests", "../../scheduler/sim/testdata/manifests-admission.yaml"}, args...)...)
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
