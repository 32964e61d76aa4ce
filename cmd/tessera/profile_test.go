package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/internal/cli/clitest"
)

// executeStderr runs the command line and returns its standard output and error.
func executeStderr(args ...string) (stdout, stderr string, err error) {
	return clitest.Execute(newRootCommand(), args...)
}

const policyDeprecated = "Flag --policy has been deprecated, use --profile"

// Every command that runs a built-in scheduler profile takes --profile and still
// takes --policy, its former name: hidden from help, with a notice on stderr.
func TestProfileFlagAndDeprecatedPolicyAlias(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range [][]string{
		{"scheduler"},
		{"autoscaler"},
		{"autoscaler", "plan"},
		{"explain", "pod", "a/b"},
		{"gitops", "preview", "--base", dir, "--head", dir, "--manifests", filepath.Join(dir, "m.yaml")},
		{"simulate", "--trace", "default"},
	} {
		name := strings.Join(cmd[:min(2, len(cmd))], " ")
		help, _, err := executeStderr(append(cmd, "--help")...)
		if err != nil || !strings.Contains(help, "--profile string") || strings.Contains(help, "--policy") {
			t.Errorf("%s --help (%v): want --profile and no --policy:\n%s", name, err, help)
		}
		for _, flag := range []string{"--profile", "--policy"} {
			_, stderr, err := executeStderr(append(cmd, flag, "nosuch")...)
			if err == nil || !strings.Contains(err.Error(), `--profile: unknown profile "nosuch"; known: tessera, volcano, volcano-seed, volcano-capacity, kube-default`) {
				t.Errorf("%s %s nosuch: got %v, want the unknown profile named with --profile", name, flag, err)
			}
			if deprecated := strings.Contains(stderr, policyDeprecated); deprecated != (flag == "--policy") {
				t.Errorf("%s %s nosuch: stderr %q", name, flag, stderr)
			}
		}
	}
}

// tessera simulate --policy runs exactly what --profile runs; the notice goes to stderr,
// never into the JSON on stdout. Both flags together must agree.
func TestSimulateDeprecatedPolicyFlag(t *testing.T) {
	dir := t.TempDir()
	nodes, pods := filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	writeFile(t, nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,A100\nn1,64000,262144,8,A100\n")
	writeFile(t, pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,500\nb,1000,1024,2,1000\nc,1000,1024,1,1000\n")
	run := func(args ...string) (string, string, error) {
		return executeStderr(append([]string{"simulate", "--nodes", nodes, "--pods", pods, "--format", "json"}, args...)...)
	}
	want, stderr, err := run("--profile", "bestfit,tessera")
	if err != nil || strings.Contains(stderr, policyDeprecated) || !strings.Contains(want, `"policy": "bestfit"`) {
		t.Fatalf("--profile: %v\nstdout %s\nstderr %s", err, want, stderr)
	}
	for _, args := range [][]string{
		{"--policy", "bestfit,tessera"},
		{"--policy=bestfit,tessera"},
		{"--policy", "bestfit,tessera", "--profile", "bestfit,tessera"},
	} {
		got, stderr, err := run(args...)
		if err != nil || !strings.Contains(stderr, policyDeprecated) || strings.Contains(got, "deprecated") {
			t.Errorf("%v: %v\nstderr %s", args, err, stderr)
		}
		if strip(got) != strip(want) {
			t.Errorf("%v: output differs from --profile's:\n%s\nwant\n%s", args, got, want)
		}
	}
	for _, args := range [][]string{
		{"--profile", "tessera", "--policy", "bestfit"},
		{"--policy", "bestfit", "--profile", "tessera"},
	} {
		if _, _, err := run(args...); err == nil || !strings.Contains(err.Error(), "--policy is the deprecated name of --profile; give only --profile") {
			t.Errorf("%v: got %v, want both flags rejected", args, err)
		}
	}
}

// strip drops the wall-clock figures, the only part of two runs that may differ.
func strip(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, "wall_seconds") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
