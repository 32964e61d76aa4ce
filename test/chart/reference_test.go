package chart

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tessera-gpu/tessera/internal/golden"
)

// metricsReference is docs/reference/metrics.md, generated from the components'
// registries.
const metricsReference = "../../docs/reference/metrics.md"

// descParts reads a Desc's name, help and variable labels from its String.
var descParts = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)", (?:unit: "[^"]*", )?constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}`)

// TestMetricsReference keeps docs/reference/metrics.md equal to what the components
// register: every metric with its type, labels and help. Regenerate it with `make
// generate` (TESSERA_UPDATE_REFERENCE=1).
func TestMetricsReference(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# Metrics reference\n\n<!-- Generated from the components' registries by `make generate`; do not edit. -->\n\n" +
		"Every metric Tessera's components register, besides controller-runtime's own. Alerts and their runbooks: `deploy/helm/tessera/files/`.\n")
	for _, c := range metricComponents {
		rec := &recorder{}
		c.register(rec)
		var rows []string
		for _, col := range rec.collectors {
			descs := make(chan *prometheus.Desc)
			go func() { col.Describe(descs); close(descs) }()
			for d := range descs {
				m := descParts.FindStringSubmatch(d.String())
				if m == nil {
					t.Fatalf("cannot read %s", d)
				}
				names, err := seriesNames(col)
				if err != nil {
					t.Fatal(err)
				}
				kind := metricKind(col)
				if slices.Contains(names, m[1]+"_bucket") {
					kind = "histogram"
				}
				labels := strings.ReplaceAll(m[3], ",", ", ")
				rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s |", m[1], kind, labels, strings.ReplaceAll(m[2], "|", `\|`)))
			}
		}
		slices.Sort(rows)
		fmt.Fprintf(&b, "\n## %s\n\n| metric | type | labels | meaning |\n|---|---|---|---|\n%s\n", c.component, strings.Join(rows, "\n"))
	}
	golden.Check(t, metricsReference, b.Bytes())

}

// metricKind names a collector's type, as Prometheus's TYPE line would.
func metricKind(c prometheus.Collector) string {
	switch c.(type) { // a Gauge has every method of a Counter: it goes first
	case *prometheus.GaugeVec, prometheus.Gauge:
		return "gauge"
	case *prometheus.CounterVec, prometheus.Counter:
		return "counter"
	case *prometheus.SummaryVec, prometheus.Summary:
		return "summary"
	}
	return "collector"
}
