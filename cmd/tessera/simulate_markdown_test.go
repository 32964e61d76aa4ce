package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// --format markdown prints the tables of --format table as pipe tables; --manifests,
// which prints no such tables, rejects it.
func TestSimulateFormatMarkdown(t *testing.T) {
	dir := t.TempDir()
	nodes, pods := filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	writeFile(t, nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,A100\nn1,64000,262144,8,A100\n")
	writeFile(t, pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,500\nb,1000,1024,2,1000\nc,1000,1024,1,1000\n")
	out, err := execute("simulate", "--nodes", nodes, "--pods", pods, "--format", "markdown")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pods.csv — fill-up, 1 seed**", "| policy | runs | unalloc% @100 |", "|---|---:|", "| tessera | 1 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	_, err = execute("simulate", "--manifests", filepath.Join("..", "..", "sim", "testdata", "manifests-small.yaml"), "--format", "markdown")
	if err == nil || !strings.Contains(err.Error(), "-o markdown applies to --trace") {
		t.Errorf("--manifests --format markdown: %v", err)
	}
	if _, err = execute("simulate", "--nodes", nodes, "--pods", pods, "--format", "html"); err == nil || !strings.Contains(err.Error(), "use table, markdown or json") {
		t.Errorf("--format html: %v", err)
	}
}
