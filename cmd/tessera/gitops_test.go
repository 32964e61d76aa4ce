package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/internal/cli"
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
	// --progress reports on standard error and leaves standard output as it was; without
	// it, and without a terminal, nothing is reported.
	for _, progress := range []bool{true, false} {
		args := []string{"gitops", "preview", "--base", base, "--head", head, "--manifests", cluster, "-o", "markdown"}
		if progress {
			args = append(args, "--progress")
		}
		stdout, stderr, err := executeStderr(args...)
		if err != nil || stdout != md {
			t.Errorf("--progress=%t: %v; stdout differs:\n%s", progress, err, stdout)
		}
		if got := strings.Contains(stderr, "admitting and scheduling base and head: 100%"); got != progress {
			t.Errorf("--progress=%t: stderr:\n%s", progress, stderr)
		}
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

// exitCode is the code main exits with for err.
func exitCode(err error) int { return cli.ExitCode(err) }

// TestGitOpsExitCodes: 0 clean, 1 findings, 2 unusable input, for lint and preview in
// every mode; a mistyped subcommand is an error.
func TestGitOpsExitCodes(t *testing.T) {
	const example, cluster = "../../gitops/clusters/example", "../../gitops/preview/testdata/cluster.yaml"
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.CopyFS(broken, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(broken, "policies", "max-gpus-per-pod.yaml")
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(strings.Replace(string(b), "limit := 8", "limit := ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cycle := t.TempDir()
	if err := os.WriteFile(filepath.Join(cycle, "kustomization.yaml"), []byte("resources:\n  - .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		{"gitops lint " + example, 0, ""},
		{"gitops lint " + broken, 1, "finding(s)"},
		{"gitops lint " + cycle, 2, "kustomization cycle"},
		{"gitops lint " + t.TempDir(), 2, "no kustomization file"},
		{"gitops lint --cluster-gpus -5 " + example, 2, "cluster GPUs -5"},
		{"gitops lint --nope " + example, 2, "unknown flag"},
		{"gitops lint", 2, "arg"},
		{"gitops lnit " + example, 2, `unknown command "lnit" for "tessera gitops"; did you mean lint?`},
		{"gitops preview --base " + example + " --head " + example + " --manifests " + cluster, 0, ""},
		{"gitops preview --base " + example + " --head " + broken + " --manifests " + cluster, 1, "--head: its admission policies do not compile"},
		{"gitops preview --base " + broken + " --head " + example + " --scenario operator", 1, "--base: its admission policies do not compile"},
		{"gitops preview --base " + example + " --head " + cycle + " --scenario operator", 2, "kustomization cycle"},
		{"gitops preview --base " + example + " --head " + example + " --manifests /nonexistent.yaml", 2, "nonexistent"},
		{"gitops preview --base " + example + " --head " + example, 2, "--manifests FILE, --from-cluster or --scenario NAME"},
		{"gitops preview --bogus", 2, "unknown flag"},
	} {
		out, err := execute(strings.Fields(tc.args)...)
		if got := exitCode(err); got != tc.code || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%s: exit %d (%v), want %d and an error containing %q", tc.args, got, err, tc.code, tc.want)
		}
		if strings.HasPrefix(tc.args, "gitops preview") && tc.code == 0 && !strings.HasPrefix(out, "no change: ") {
			t.Errorf("%s: want \"no change\" first:\n%s", tc.args, out)
		}
	}
	for _, cmd := range []string{"gitops lint", "gitops preview"} {
		help, _ := execute(append(strings.Fields(cmd), "--help")...)
		if !strings.Contains(help, "Exit codes: 0 clean, 1 ") || !strings.Contains(help, ", 2 ") {
			t.Errorf("%s --help does not document the exit codes:\n%s", cmd, help)
		}
	}
}
