package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

func TestFakeGPUs(t *testing.T) {
	if _, err := execute("--node-name", "n1", "--fake-gpus", "dgx9"); err == nil ||
		!strings.Contains(err.Error(), `--fake-gpus: unknown simulated node "dgx9": use one of dgxa100, dgxa100-80gb, dgxh100, pcie-a100`) {
		t.Fatalf("unknown --fake-gpus: got %v", err)
	}
	src, err := gpuSource("dgxa100-80gb")
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
		"--proc-root", "--device-plugin-dir", "--nvml-retry-max", "--metrics-addr", "--fake-gpus", "-v, --v"} {
		if !strings.Contains(help, flag) {
			t.Errorf("help lacks %s:\n%s", flag, help)
		}
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
}
