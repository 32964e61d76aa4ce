package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
		root := newRootCommand()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(strings.Fields(args))
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
	}
}

func TestSimulateManifests(t *testing.T) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"simulate", "--manifests", "../../scheduler/sim/testdata/manifests-small.yaml"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"team/pair-0", "scheduled", "NotEnqueued", "gang needs 24 GPU but queue research has capability 12 GPU"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
