package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitOpsPreview: dropping the max-gpus-per-pod policy and raising train-dev's
// capability, previewed through the real admission policies on a cluster dump.
func TestGitOpsPreview(t *testing.T) {
	const base, cluster = "../../gitops/clusters/example", "../../gitops/preview/testdata/cluster.yaml"
	head := filepath.Join(t.TempDir(), "head")
	if err := os.CopyFS(head, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	queues := filepath.Join(head, "queues", "queues.yaml")
	b, err := os.ReadFile(queues)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(queues, []byte(strings.Replace(string(b), `tessera.dev/gpu: "10"`, `tessera.dev/gpu: "12"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	noPolicies := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"
	if err := os.WriteFile(filepath.Join(head, "policies", "kustomization.yaml"), []byte(noPolicies), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute("gitops", "preview", "--base", base, "--head", head, "--manifests", cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"train-dev   10 → 12 (+2)  10 → 12 (+2)", "no longer denied: Pod research/big"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	md, err := execute("gitops", "preview", "--base", base, "--head", head, "--manifests", cluster, "-o", "markdown")
	if err != nil || !strings.Contains(md, "| `train-dev` **changed** |") {
		t.Errorf("markdown: %v\n%s", err, md)
	}
	for args, want := range map[string]string{
		"--head " + head + " --manifests " + cluster:                                    "--base and --head",
		"--base " + base + " --head " + head:                                            "--manifests FILE, --from-cluster or --scenario NAME",
		"--base " + base + " --head " + head + " --manifests x -o yml":                  `-o "yml"`,
		"--base " + base + " --head /nonexistent --manifests " + cluster:                "--head",
		"--base " + base + " --head " + head + " --manifests " + cluster + " --seeds 2": "--seeds applies to --scenario only",
	} {
		if _, err := execute(append([]string{"gitops", "preview"}, strings.Fields(args)...)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("preview %s: %v, want an error naming %s", args, err, want)
		}
	}
}
