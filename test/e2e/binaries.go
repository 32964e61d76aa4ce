package e2e

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries are the components hack/e2e-binaries.sh built, by name.
type Binaries map[string]string

// binaryNames are the entries the harness needs from hack/e2e-binaries.sh.
var binaryNames = []string{
	"KUBE_APISERVER", "ETCD", "KUBE_CONTROLLER_MANAGER", "KWOK", "CAPI_MANAGER",
	"SOURCE_CONTROLLER", "KUSTOMIZE_CONTROLLER", "FLUX_CRDS",
	"JOBSET_CONTROLLER", "KUBERAY_OPERATOR", "WORKLOAD_CRDS",
}

// loadBinaries reads the cached binaries' paths, or says how to build them.
func loadBinaries(root string) (Binaries, error) {
	out, err := exec.Command(filepath.Join(root, "hack", "e2e-binaries.sh"), "--cached-only").Output()
	if err != nil {
		return nil, fmt.Errorf("the end-to-end components are not built yet: run `make e2e-binaries` (or `make e2e`, which builds them): %v", err)
	}
	bins := Binaries{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if name, path, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			bins[name] = path
		}
	}
	for _, n := range binaryNames {
		if bins[n] == "" {
			return nil, fmt.Errorf("hack/e2e-binaries.sh printed no %s=", n)
		}
	}
	return bins, nil
}
