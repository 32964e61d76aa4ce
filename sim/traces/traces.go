package traces

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
)

//go:embed openb/*.csv openb/*.md fgd/*.csv fgd/*.md
var files embed.FS

// OpenbNodes is the GPU node list of the openb trace.
const OpenbNodes = "openb/openb_node_list_gpu_node.csv"

// PublishedFGD is the figures published for the FGD paper's simulator on the openb
// pod lists (fgd/README.md): workload, policy, unallocated_pct_at_100, ...
const PublishedFGD = "fgd/published-fgd-results.csv"

// Open opens a shipped file by its path, such as OpenbNodes.
func Open(path string) (io.ReadCloser, error) { return files.Open(path) }

// OpenbPods returns the path of an openb pod-list variant ("default", "gpushare40", ...).
func OpenbPods(variant string) (string, error) {
	p := "openb/openb_pod_list_" + variant + ".csv"
	if _, err := fs.Stat(files, p); err != nil {
		return "", fmt.Errorf("unknown openb pod list %q; shipped: %s", variant, strings.Join(OpenbVariants(), ", "))
	}
	return p, nil
}

// OpenbVariants lists the shipped pod-list variants.
func OpenbVariants() []string {
	entries, _ := fs.Glob(files, "openb/openb_pod_list_*.csv")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(e, "openb/openb_pod_list_"), ".csv"))
	}
	sort.Strings(out)
	return out
}
