package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/kubeclient/kubeclienttest"
)

// Every long-running command checks every flag before it connects to anything: a bad
// value is an error naming the flag and the fix, exit code 2, and no request reaches
// the API server.
func TestFlagsCheckedBeforeConnecting(t *testing.T) {
	api := newAPIServer(t, true)
	kc := kubeclienttest.WriteKubeconfig(t, api.url)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), "resources: [ns.yaml]\n")
	writeFile(t, filepath.Join(dir, "ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n")
	sched := []string{"scheduler", "--kubeconfig", kc, "--leader-election-namespace=tessera-system"}
	auto := []string{"autoscaler", "--kubeconfig", kc, "--leader-election-namespace=tessera-system"}
	hook := []string{"webhook", "--kubeconfig", kc, "--cert-manager"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(sched, "--bind-workers=0"), "--bind-workers 0: must be 1 or more"},
		{append(sched, "--extended-resource-claims=yes"), `--extended-resource-claims "yes": want one of auto, on, off`},
		{append(sched, "--period=0"), "--period 0s: must be positive (for example --period=1s)"},
		{append(sched, "--period=-1s"), "--period -1s: must be positive"},
		{append(sched, "--kube-api-qps=0"), "--kube-api-qps 0: must be positive"},
		{append(sched, "--kube-api-burst=0"), "--kube-api-burst 0: must be 1 or more"},
		{append(sched, "--scheduler-name="), "--scheduler-name is empty"},
		{append(sched, "--metrics-bind-address=:70000"), `--metrics-bind-address ":70000": port 70000 is out of range`},
		{append(sched, "--health-probe-bind-address=localhost"), `--health-probe-bind-address "localhost": give HOST:PORT`},
		{append(sched, "--leader-election-namespace="), "leader election needs a namespace for its Lease"},
		{append(sched, "--request-timeout=-1s"), "--request-timeout -1s: must not be negative"},
		{append(sched, "--period=soon"), `invalid argument "soon" for "--period" flag`},
		{append(sched, "--profile=nosuch"), `--profile: unknown profile "nosuch"`},
		{append(sched, "--config", filepath.Join(dir, "nosuch.yaml")), "nosuch.yaml"},
		{append(auto, "--period=0"), "--period 0s: must be positive (for example --period=10s)"},
		{append(auto, "--revalidate-after=0"), "--revalidate-after 0s: must be positive"},
		{append(auto, "--step-timeout=-1m"), "--step-timeout -1m0s: must be positive"},
		{append(auto, "--metrics-bind-address=:99999"), `port 99999 is out of range`},
		{append(auto, "--management-kubeconfig", filepath.Join(dir, "nosuch")), "--management-kubeconfig " + filepath.Join(dir, "nosuch")},
		{append(hook, "--policy-timeout=0"), "--policy-timeout 0s: must be positive (for example --policy-timeout=1s)"},
		{append(hook, "--port=70000"), "--port 70000: out of range; use a port from 1 to 65535"},
		{append(hook, "--port=0"), "--port 0: out of range"},
		{append(hook, "--health-probe-bind-address=:65536"), "port 65536 is out of range"},
		{append(hook, "--scheduler-name-alias=default-scheduler"), `--scheduler-name-alias="default-scheduler": it would hand Tessera every pod that names no scheduler`},
		{append(hook, "--scheduler-name-alias=volcano", "--allowed-scheduler=volcano"), `scheduler "volcano" is in both --scheduler-name-alias`},
		{[]string{"webhook", "--kubeconfig", kc}, "--namespace (or $POD_NAMESPACE) is required"},
		{[]string{"scheduler", "--kubeconfig", filepath.Join(dir, "nosuch"), "--leader-elect=false"}, "--kubeconfig " + filepath.Join(dir, "nosuch")},
		{[]string{"explain", "pod", "p", "--kubeconfig", kc}, `pod "p": give it as NAMESPACE/NAME`},
		{[]string{"explain", "job", "a/b", "--kubeconfig", kc}, `unknown kind "job": explain pod NAMESPACE/NAME, podgroup NAMESPACE/NAME or queue NAME`},
		{[]string{"explain", "queue", "--kubeconfig", kc}, "1 argument(s)"},
		{[]string{"explain", "queue", "a/b", "--kubeconfig", kc}, "a queue is cluster-scoped"},
		{[]string{"explain", "queue", "q", "-o", "yaml", "--kubeconfig", kc}, `-o "yaml": use text or json`},
		{[]string{"explain", "queue", "q", "--request-timeout=-1s", "--kubeconfig", kc}, "--request-timeout -1s"},
		{[]string{"autoscaler", "plan", "-o", "yaml", "--kubeconfig", kc}, `-o "yaml": use text or json`},
		{[]string{"simulate", "--from-cluster", "--request-timeout=-1s", "--kubeconfig", kc}, "--request-timeout -1s: must not be negative"},
		{[]string{"simulate", "--from-cluster", "-o", "markdown", "--kubeconfig", kc}, "-o markdown applies to --trace"},
		{[]string{"simulate", "--trace", "default", "--request-timeout=5s"}, "--request-timeout applies to --from-cluster only"},
		{[]string{"gitops", "preview", "--base", dir, "--head", dir, "--scenario", "operator", "--kubeconfig", kc}, "--kubeconfig applies to --from-cluster only"},
		{[]string{"gitops", "preview", "--base", dir, "--head", dir, "--from-cluster", "--request-timeout=-1s", "--kubeconfig", kc}, "--request-timeout -1s"},
	} {
		name := strings.Join(c.args, " ")
		_, err := execute(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
			continue
		}
		if code := cli.ExitCode(err); code != cli.ExitUsage {
			t.Errorf("%s: exit code %d, want %d (%v)", name, code, cli.ExitUsage, err)
		}
	}
	if n := api.Requests(); n != 0 {
		t.Errorf("%d connection(s) to the API server while checking flags", n)
	}
}

// With no --kubeconfig, no $KUBECONFIG, no ~/.kube/config and no in-cluster
// configuration, a command says so in Tessera's words, before anything else.
func TestNoKubeconfig(t *testing.T) {
	kubeclienttest.NoCluster(t)
	const want = "no kubeconfig: set --kubeconfig or $KUBECONFIG, or run in a cluster"
	for _, args := range [][]string{
		{"explain", "queue", "q"},
		{"autoscaler", "plan"},
		{"simulate", "--from-cluster"},
		{"scheduler", "--leader-elect=false"},
		{"autoscaler", "--leader-elect=false"},
		{"webhook", "--cert-manager"},
	} {
		_, err := execute(args...)
		if err == nil || err.Error() != want || cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: got %v (exit code %d), want %q (2)", args, err, cli.ExitCode(err), want)
		}
	}
	// $KUBECONFIG is read: a file that does not answer is a timeout, not a lookup error.
	api := newAPIServer(t, true)
	t.Setenv("KUBECONFIG", kubeclienttest.WriteKubeconfig(t, api.url))
	if _, err := execute("explain", "queue", "q", "--request-timeout=200ms"); err == nil || !strings.Contains(err.Error(), "did not answer within 200ms") {
		t.Errorf("explain with $KUBECONFIG: %v", err)
	}
}

// One vocabulary: -o for the output format (simulate's --format a deprecated alias),
// --kubeconfig and --request-timeout wherever a cluster is read, the daemons'
// --metrics-bind-address and --health-probe-bind-address, -v the log level on every
// command and --version long only.
func TestFlagVocabulary(t *testing.T) {
	for _, c := range []struct {
		cmd   []string
		flags []string
	}{
		{[]string{"scheduler"}, []string{"--kubeconfig", "--request-timeout", "--metrics-bind-address", "--health-probe-bind-address", "-v, --v"}},
		{[]string{"webhook"}, []string{"--kubeconfig", "--request-timeout", "--metrics-bind-address", "--health-probe-bind-address", "-v, --v", "--vmodule"}},
		{[]string{"autoscaler"}, []string{"--kubeconfig", "--request-timeout", "--metrics-bind-address", "--health-probe-bind-address", "-v, --v"}},
		{[]string{"autoscaler", "plan"}, []string{"--kubeconfig", "--request-timeout", "-o, --output", "-v, --v"}},
		{[]string{"explain"}, []string{"--kubeconfig", "--request-timeout", "-o, --output", "-v, --v"}},
		{[]string{"simulate"}, []string{"--kubeconfig", "--request-timeout", "-o, --output", "-v, --v"}},
		{[]string{"gitops", "preview"}, []string{"--kubeconfig", "--request-timeout", "-o, --output", "-v, --v"}},
		{[]string{"gitops", "lint"}, []string{"-o, --output", "-v, --v"}},
		{nil, []string{"--version", "-v, --v"}},
	} {
		help, err := execute(append(c.cmd, "--help")...)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.flags {
			if !strings.Contains(help, f) {
				t.Errorf("tessera %s --help lacks %s", strings.Join(c.cmd, " "), f)
			}
		}
		if strings.Contains(help, "--format") || strings.Contains(help, "-v, --version") {
			t.Errorf("tessera %s --help shows a deprecated name:\n%s", strings.Join(c.cmd, " "), help)
		}
	}

	// simulate --format still works, with a notice; it must agree with -o.
	dir := t.TempDir()
	nodes, pods := filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "pods.csv")
	writeFile(t, nodes, "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,A100\n")
	writeFile(t, pods, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,500\n")
	base := []string{"simulate", "--nodes", nodes, "--pods", pods, "--profile", "tessera"}
	want, stderr, err := executeStderr(append(base, "-o", "json")...)
	if err != nil || strings.Contains(stderr, "deprecated") || !strings.HasPrefix(want, "{") {
		t.Fatalf("-o json: %v\n%s\n%s", err, want, stderr)
	}
	got, stderr, err := executeStderr(append(base, "--format", "json")...)
	if err != nil || !strings.Contains(stderr, "Flag --format has been deprecated, use --output") || strip(got) != strip(want) {
		t.Errorf("--format json: %v\nstdout %s\nstderr %s", err, got, stderr)
	}
	if _, _, err := executeStderr(append(base, "--format", "json", "-o", "table")...); err == nil ||
		!strings.Contains(err.Error(), "--format is the deprecated name of --output; give only --output") || cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("--format json -o table: %v", err)
	}

	// tessera -v was --version: it still prints the version, with a notice.
	var notice bytes.Buffer
	if args := versionShorthand([]string{"-v"}, &notice); len(args) != 1 || args[0] != "--version" || !strings.Contains(notice.String(), "use --version") {
		t.Errorf("-v: %v, notice %q", args, notice.String())
	}
	if args := versionShorthand([]string{"scheduler", "-v", "2"}, &notice); strings.Join(args, " ") != "scheduler -v 2" {
		t.Errorf("scheduler -v 2: %v", args)
	}
	if _, err := execute("simulate", "-v", "2", "--trace", "nosuch"); err == nil || strings.Contains(err.Error(), "unknown shorthand") {
		t.Errorf("simulate -v 2: %v", err)
	}
}
