package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPlainGoBuild builds the binary the way a user would, `go build ./cmd/tessera`
// without build tags, with cgo off, and runs it: the control plane is pure Go. NVML
// (go-nvml, cgo) belongs to cmd/tessera-node-agent alone; were it linked here again,
// together with Go's plugin package (kustomize's API, for gitops lint and preview) a
// cgo build would be bound at start and fail on machines without an NVIDIA driver.
func TestPlainGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env := append(os.Environ(), "GOFLAGS="+withoutTags(os.Getenv("GOFLAGS")))

	list := exec.Command("go", "list", "-deps", "./cmd/tessera")
	list.Dir, list.Env = filepath.Join("..", ".."), env
	deps, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/tessera: %v", err)
	}
	for _, p := range strings.Fields(string(deps)) {
		if strings.HasPrefix(p, "github.com/NVIDIA/go-nvml") || strings.HasPrefix(p, "github.com/tessera-gpu/tessera/nodeagent") {
			t.Errorf("cmd/tessera depends on %s: NVML is the node agent's (cmd/tessera-node-agent)", p)
		}
	}

	bin := tesseraBinary(t) // CGO_ENABLED=0 go build ./cmd/tessera, without tags
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "tessera ") {
		t.Fatalf("tessera version: %v: %s", err, out)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		libs, _ := f.ImportedLibraries()
		interp := false
		for _, p := range f.Progs {
			interp = interp || p.Type == elf.PT_INTERP
		}
		if interp || len(libs) > 0 {
			t.Fatalf("tessera is dynamically linked (libraries %v): CGO_ENABLED=0 should make it static", libs)
		}
	}
}

// withoutTags is GOFLAGS less any -tags flag (the repository once required one).
func withoutTags(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		if !strings.HasPrefix(strings.TrimLeft(f, "-"), "tags") {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

func TestNoNodeAgentSubcommand(t *testing.T) {
	if _, err := execute("node-agent"); err == nil || !strings.Contains(err.Error(), `unknown command "node-agent"`) {
		t.Fatalf("tessera node-agent: got %v, want unknown command (the agent is tessera-node-agent)", err)
	}
}
