package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/internal/cli"
	"github.com/tessera-gpu/tessera/internal/cli/clitest"
	"github.com/tessera-gpu/tessera/internal/kubeclient/kubeclienttest"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

// execute runs the command line and returns its standard output (stderr is dropped).
func execute(args ...string) (string, error) {
	out, _, err := clitest.Execute(newRootCommand(), args...)
	return out, err
}

func TestFakeGPUs(t *testing.T) {
	if _, err := execute("--node-name", "n1", "--fake-gpus", "dgx9"); err == nil ||
		!strings.Contains(err.Error(), `--fake-gpus: unknown simulated node "dgx9": use one of dgxa100, dgxa100-80gb, dgxh100, pcie-a100`) {
		t.Fatalf("unknown --fake-gpus: got %v", err)
	}
	for mode, want := range map[string]string{"": gpu.ComputeModeDefault, "exclusive-process": gpu.ComputeModeExclusiveProcess} {
		src, err := gpuSource("dgxa100-80gb", mode)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Init(); err != nil {
			t.Fatal(err)
		}
		inv, err := src.Inventory()
		if err != nil {
			t.Fatal(err)
		}
		if len(inv.Devices) != 8 || !strings.Contains(inv.Devices[0].Model, "80GB") {
			t.Fatalf("dgxa100-80gb: %d GPUs, first %+v", len(inv.Devices), inv.Devices[0])
		}
		for _, d := range inv.Devices {
			if d.ComputeMode != want {
				t.Fatalf("--fake-compute-mode %q: GPU %d in compute mode %q, want %q", mode, d.Index, d.ComputeMode, want)
			}
		}
	}
}

func TestCommandLine(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	if _, err := execute(); err == nil || !strings.Contains(err.Error(), "node name is empty") {
		t.Errorf("no node name: got %v", err)
	}
	if _, err := execute("node-agent"); err == nil || !strings.Contains(err.Error(), `unknown command "node-agent"`) {
		t.Errorf("an argument: got %v", err)
	}
	version, err := execute("version")
	if err != nil || !strings.HasPrefix(version, "tessera ") {
		t.Fatalf("version %q (%v)", version, err)
	}
	if flag, err := execute("--version"); err != nil || flag != version {
		t.Errorf("--version %q (%v), version %q", flag, err, version)
	}
	help, err := execute("--help")
	if err != nil || strings.Contains(help, "[=true|false]") {
		t.Errorf("help (%v):\n%s", err, help)
	}
	for _, flag := range []string{"--node-name", "--kubeconfig", "--shares-per-gpu", "--mps ", "--sample-interval", "--idle-utilization-percent",
		"--proc-root", "--device-plugin-dir", "--nvml-retry-max", "--metrics-bind-address", "--health-probe-bind-address",
		"--request-timeout", "--fake-gpus", "--fake-compute-mode", "-v, --v", "--slices-per-gpu", "--mps-pipe-directory", "--device-list-strategy", "--cdi-kind",
		"--pod-resources-socket", "--toolkit-config", "--unsafe-skip-toolkit-check", "--dra ", "--dra-share-step", "--cdi-spec-dir",
		"--kubelet-plugins-dir", "--kubelet-registry-dir"} {
		if !strings.Contains(help, flag) {
			t.Errorf("help lacks %s:\n%s", flag, help)
		}
	}
	if strings.Contains(help, "--metrics-addr") {
		t.Errorf("help shows the deprecated --metrics-addr:\n%s", help)
	}
}

// Every flag is checked before the agent connects: an error naming the flag, exit
// code 2, no request to the API server.
func TestFlagsCheckedBeforeConnecting(t *testing.T) {
	api := kubeclienttest.NewBlackHole(t)
	base := []string{"--node-name", "n1", "--fake-gpus", "dgxa100", "--kubeconfig", kubeclienttest.WriteKubeconfig(t, api.URL)}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shares-per-gpu=0"}, "--shares-per-gpu 0: must be 1 or more"},
		{[]string{"--sample-interval=0"}, "--sample-interval 0s: must be positive"},
		{[]string{"--nvml-retry-max=-1s"}, "--nvml-retry-max -1s: must be positive"},
		{[]string{"--idle-utilization-percent=101"}, "--idle-utilization-percent 101: must be from 0 to 100"},
		{[]string{"--metrics-bind-address=:70000"}, `--metrics-bind-address ":70000": port 70000 is out of range`},
		{[]string{"--metrics-addr=:70000"}, `--metrics-bind-address ":70000": port 70000 is out of range`},
		{[]string{"--metrics-addr=:9400", "--metrics-bind-address=:9500"}, "--metrics-addr is the deprecated name of --metrics-bind-address"},
		{[]string{"--health-probe-bind-address=9401"}, `--health-probe-bind-address "9401": give HOST:PORT`},
		{[]string{"--request-timeout=-1s"}, "--request-timeout -1s: must not be negative"},
		{[]string{"-v=-1"}, "-v -1: must not be negative"},
		{[]string{"--sample-interval=often"}, `invalid argument "often" for "--sample-interval" flag`},
		{[]string{"--fake-gpus=dgx9"}, `--fake-gpus: unknown simulated node "dgx9"`},
		{[]string{"--fake-compute-mode=exclusive"}, `--fake-compute-mode "exclusive": want one of default, exclusive-process, prohibited`},
		{[]string{"--fake-gpus=", "--fake-compute-mode=exclusive-process"}, `--fake-compute-mode "exclusive-process": only with --fake-gpus`},
		{[]string{"--node-name="}, "node name is empty"},
		{[]string{"--device-list-strategy=cdi"}, `--device-list-strategy "cdi": unknown device list strategy "cdi"`},
		{[]string{"--device-list-strategy=envvar"}, "the environment alone is not delivery"},
		{[]string{"--cdi-kind=nvidia.com"}, `--cdi-kind "nvidia.com": want vendor/class`},
		{[]string{"--slices-per-gpu=-1"}, "--slices-per-gpu -1: must not be negative"},
		{[]string{"--dra=yes"}, `--dra "yes": want one of auto, on, off`},
		{[]string{"--extended-resource-claims=yes"}, `--extended-resource-claims "yes": want one of auto, on, off`},
		{[]string{"--dra-share-step=1G1"}, `--dra-share-step "1G1": want a quantity of 1Mi or more`},
		{[]string{"--dra-share-step=1Ki"}, `--dra-share-step "1Ki": want a quantity of 1Mi or more`},
		{[]string{"--cdi-spec-dir=cdi"}, `--cdi-spec-dir "cdi": want an absolute path`},
		{[]string{"--kubelet-registry-dir="}, `--kubelet-registry-dir "": want an absolute path`},
	} {
		_, err := execute(append(slices.Clone(base), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: got %v (exit code %d), want %q (2)", c.args, err, cli.ExitCode(err), c.want)
		}
	}
	if n := api.Conns(); n != 0 {
		t.Errorf("%d connection(s) to the API server while checking flags", n)
	}
}

// The agent finds its cluster as every Tessera command does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else in-cluster; with none, it says so.
func TestKubeconfigLookup(t *testing.T) {
	kubeclienttest.NoCluster(t)
	_, err := execute("--node-name", "n1", "--fake-gpus", "dgxa100")
	if err == nil || err.Error() != "no kubeconfig: set --kubeconfig or $KUBECONFIG, or run in a cluster" || cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("no configuration: %v", err)
	}
	// $KUBECONFIG names the cluster: the agent starts, serves, and stops with its context.
	api := kubeclienttest.NewBlackHole(t)
	t.Setenv("KUBECONFIG", kubeclienttest.WriteKubeconfig(t, api.URL))
	metrics, probes := kubeclienttest.FreeAddr(t), kubeclienttest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand()
	root.SetArgs([]string{"--node-name", "n1", "--fake-gpus", "dgxa100", "--device-plugin-dir=", "--request-timeout=1s",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probes})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	for _, c := range []struct {
		url  string
		code int
	}{{"http://" + probes + "/healthz", 200}, {"http://" + probes + "/readyz", 200}, {"http://" + metrics + "/metrics", 200}, {"http://" + metrics + "/healthz", 404}} {
		if got := getStatus(t, c.url); got != c.code {
			t.Errorf("GET %s: %d, want %d", c.url, got, c.code)
		}
	}
	if api.Conns() == 0 {
		t.Error("the agent never reached the API server in $KUBECONFIG")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stopped: %v", err)
		}
	case <-time.After(cli.ShutdownGrace + 2*time.Second):
		t.Fatal("the agent did not stop with its context")
	}
}

// getStatus polls url until it answers (up to 10s) and returns the status code.
func getStatus(t *testing.T, url string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return resp.StatusCode
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBinaryStarts builds the agent with cgo, as Dockerfile.node-agent does, and runs it
// on this machine, which need not have an NVIDIA driver: go-nvml resolves NVML's symbols
// only once it loads libnvidia-ml, so the binary must not be bound at start
// (BIND_NOW), which Go's plugin package (imported by kustomize's API, a dependency of
// the tessera binary only) would cause in a cgo build.
func TestBinaryStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cc, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatalf("go env CC: %v", err)
	}
	if cc := strings.Fields(string(cc)); len(cc) > 0 {
		if _, err := exec.LookPath(cc[0]); err != nil {
			t.Skipf("no C compiler for cgo: %v", err)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if slices.Contains(strings.Fields(string(deps)), "plugin") {
		t.Fatal("cmd/tessera-node-agent depends on Go's plugin package: a cgo build of it would be bound at start and fail without NVML")
	}
	bin := filepath.Join(t.TempDir(), "tessera-node-agent")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "tessera ") {
		t.Fatalf("tessera-node-agent version: %v: %s", err, out)
	}

	// Against an API server that never answers, the agent still stops within a few
	// seconds of SIGTERM or SIGINT, and exits 0.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		api := kubeclienttest.NewBlackHole(t)
		cmd := exec.Command(bin, "--node-name", "n1", "--fake-gpus", "dgxa100", "--device-plugin-dir=", "--kubeconfig", kubeclienttest.WriteKubeconfig(t, api.URL),
			"--metrics-bind-address", kubeclienttest.FreeAddr(t))
		stderr, done := kubeclienttest.Start(t, cmd)
		select {
		case err := <-done:
			t.Fatalf("exited before the signal: %v\n%s", err, stderr.String())
		case <-time.After(1500 * time.Millisecond):
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v\n%s", sig, err, stderr.String())
			}
		case <-time.After(cli.ShutdownGrace + 5*time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("still running %s after %s\n%s", cli.ShutdownGrace+5*time.Second, sig, stderr.String())
		}
	}
}
