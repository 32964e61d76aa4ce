package layers_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tessera-gpu/tessera/"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

func list(t *testing.T) map[string]pkg {
	t.Helper()
	if testing.Short() {
		t.Skip("go list over the module takes a while")
	}
	cmd := exec.Command("go", "list", "-deps=false", "-json", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

// under reports whether package rel is dir or below it.
func under(rel string, dirs ...string) bool {
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// clientPackages are what a client-free package must not link, even indirectly.
var clientPackages = []string{"k8s.io/client-go/", "sigs.k8s.io/controller-runtime", "sigs.k8s.io/cluster-api", "github.com/NVIDIA/go-nvml", "github.com/open-policy-agent/opa"}

// TestClientFree: the pure core, the scale-down planner and the simulator link no
// client, no controller-runtime, no Cluster API, no NVML and no OPA.
func TestClientFree(t *testing.T) {
	for rel, p := range list(t) {
		if !under(rel, "scheduler/framework", "scheduler/plugins", "scheduler/snapshot", "sim") && rel != "scheduler" && rel != "autoscale" {
			continue
		}
		for _, d := range p.Deps {
			for _, bad := range clientPackages {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s links %s: the core, the planner and the simulator stay client-free", rel, d)
				}
			}
		}
	}
}

// TestOneAdapterPerDependency: only autoscale/capi imports Cluster API, only the node
// agent's nvidia adapter imports go-nvml, only policy imports OPA (tests of a package
// may use its adapter's fakes; the end-to-end harness drives Cluster API directly).
func TestOneAdapterPerDependency(t *testing.T) {
	rules := []struct {
		dep     string
		allowed []string
	}{
		{"sigs.k8s.io/cluster-api", []string{"autoscale/capi", "test/e2e"}},
		{"github.com/NVIDIA/go-nvml", []string{"nodeagent/nvidia"}},
		{"github.com/open-policy-agent/opa", []string{"policy"}},
	}
	for rel, p := range list(t) {
		for _, r := range rules {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, r.dep) && !under(rel, r.allowed...) {
					t.Errorf("%s imports %s; only %v may", rel, imp, r.allowed)
				}
			}
		}
	}
}

// TestArrows: nothing imports cmd; nothing below gitops imports it; the daemons share
// internal/controller rather than each other.
func TestArrows(t *testing.T) {
	for rel, p := range list(t) {
		for _, imp := range append(append(append([]string{}, p.Imports...), p.TestImports...), p.XTestImports...) {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || dep == rel {
				continue
			}
			switch {
			case under(dep, "cmd"):
				t.Errorf("%s imports %s: nothing imports cmd", rel, dep)
			case under(dep, "gitops") && !under(rel, "gitops", "cmd", "test"):
				t.Errorf("%s imports %s: only cmd and the tests sit above gitops", rel, dep)
			case under(dep, "scheduler/daemon") && under(rel, "autoscale", "webhooks", "nodeagent", "sim"):
				t.Errorf("%s imports %s: daemons share internal/controller, not each other", rel, dep)
			case under(dep, "autoscale/actuator", "autoscale/capi") && under(rel, "sim", "scheduler"):
				t.Errorf("%s imports %s: the simulator and the scheduler use the planner only", rel, dep)
			}
		}
	}
}
