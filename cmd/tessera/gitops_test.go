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
	head := editedCopy(t, base, "head", filepath.Join("queues", "queues.yaml"), `tessera.dev/gpu: "10"`, `tessera.dev/gpu: "12"`)
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

// editedCopy copies the directory src to a temporary directory called name, replaces
// the first old with repl in the copy's file rel, and returns the copy.
func editedCopy(t *testing.T, src, name, rel, old, repl string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, repl, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// exitCode is the code main exits with for err.
func exitCode(err error) int { return cli.ExitCode(err) }

// exitCase is a command line and the exit code it must end with, its error containing
// want ("" for any error, or none).
type exitCase struct {
	args string
	code int
	want string
}

// run executes tc's command line, checks its exit code and error, and returns what it
// printed on standard output.
func (tc exitCase) run(t *testing.T) string {
	t.Helper()
	out, err := execute(strings.Fields(tc.args)...)
	if got := exitCode(err); got != tc.code || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
		t.Errorf("%s: exit %d (%v), want %d and an error containing %q", tc.args, got, err, tc.code, tc.want)
	}
	return out
}

// TestGitOpsExitCodes: 0 clean, 1 findings, 2 unusable input, for lint and preview in
// every mode; a mistyped subcommand is an error.
func TestGitOpsExitCodes(t *testing.T) {
	const example, cluster = "../../gitops/clusters/example", "../../gitops/preview/testdata/cluster.yaml"
	broken := editedCopy(t, example, "broken", filepath.Join("policies", "max-gpus-per-pod.yaml"), "limit := 8", "limit := ")
	cycle := t.TempDir()
	if err := os.WriteFile(filepath.Join(cycle, "kustomization.yaml"), []byte("resources:\n  - .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []exitCase{
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
		out := tc.run(t)
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
