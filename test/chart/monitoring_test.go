package chart

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/autoscale/actuator"
	"github.com/tessera-gpu/tessera/autoscale/idlereclaim"
	agentmetrics "github.com/tessera-gpu/tessera/nodeagent/metrics"
	"github.com/tessera-gpu/tessera/policy"
	"github.com/tessera-gpu/tessera/rightsize/recommender"
	schedk8s "github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/webhooks"
)

var (
	rulesDir     = filepath.Join(chartDir, "files", "prometheus")
	dashboardDir = filepath.Join(chartDir, "files", "dashboards")
)

// Every PromQL expression of the alert rules and the dashboard parses, and every metric
// it selects is one a component registers: renaming a metric in Go fails here, not on a
// production dashboard.
func TestQueriesUseRegisteredMetrics(t *testing.T) {
	known := registeredMetrics(t)
	queries := append(ruleQueries(t), dashboardQueries(t)...)
	for _, q := range queries {
		// Recording rules add series of their own.
		if q.records != "" {
			known[q.records] = "recording rule " + q.where
		}
	}
	p := parser.NewParser(parser.Options{})
	for _, q := range queries {
		expr, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: the query does not parse: %v\n%s", q.where, err, q.expr)
			continue
		}
		for _, name := range selectedMetrics(expr) {
			switch {
			case name == "":
				t.Errorf("%s: a selector without a metric name (or with a regex on __name__) cannot be checked; name the metric\n%s", q.where, q.expr)
			case known[name] == "":
				t.Errorf("%s: %s is not a metric Tessera registers%s\n%s", q.where, name, didYouMean(name, known), q.expr)
			}
		}
	}
	if len(queries) < 20 {
		t.Fatalf("found %d queries in %s and %s, fewer than the rules and panels hold", len(queries), rulesDir, dashboardDir)
	}
}

// Every alert says how bad it is and carries its runbook, and promtool tests see it fire.
func TestAlertsHaveRunbooksAndTests(t *testing.T) {
	firing := map[string]bool{} // alert names some promtool test expects to fire
	tests, err := filepath.Glob(filepath.Join(rulesDir, "*.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range tests {
		var f struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string           `json:"alertname"`
					ExpAlerts []map[string]any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		readYAML(t, path, &f)
		for _, tc := range f.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname] = true
				}
			}
		}
	}
	alerts := 0
	for _, f := range ruleFiles(t) {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				alerts++
				where := fmt.Sprintf("%s: alert %s", f.name, r.Alert)
				if s := r.Labels["severity"]; !slices.Contains([]string{"info", "warning", "critical"}, s) {
					t.Errorf("%s: label severity is %q, want info, warning or critical", where, s)
				}
				for _, a := range []string{"summary", "description", "runbook"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("%s: annotation %s is missing", where, a)
					}
				}
				for _, part := range []string{"Meaning:", "Check:", "Action:"} {
					if !strings.Contains(r.Annotations["runbook"], part) {
						t.Errorf("%s: the runbook has no %q part (what it means, how to check, what to do)", where, part)
					}
				}
				if !firing[r.Alert] {
					t.Errorf("%s: no promtool test in %s expects it to fire", where, rulesDir)
				}
			}
		}
	}
	if alerts == 0 {
		t.Fatalf("no alerts in %s", rulesDir)
	}
}

// The README's monitoring paragraph and docs/operating.md's alert table name every alert
// of the rules, and no other.
func TestAlertsDocumented(t *testing.T) {
	var want []string
	for _, f := range ruleFiles(t) {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					want = append(want, r.Alert)
				}
			}
		}
	}
	sort.Strings(want)
	for _, d := range []struct {
		path, from, to string
		name           *regexp.Regexp
	}{
		{"README.md", "Monitoring: the PrometheusRule", "\n\n", regexp.MustCompile(`\bTessera[A-Z]\w+`)},
		{"docs/operating.md", "## Alerts and their runbooks", "\n## ", regexp.MustCompile("(?m)^\\| `(Tessera\\w+)` \\|")},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", d.path))
		if err != nil {
			t.Fatal(err)
		}
		_, text, ok := strings.Cut(string(b), d.from)
		if !ok {
			t.Fatalf("%s no longer says %q", d.path, d.from)
		}
		text, _, _ = strings.Cut(text, d.to)
		var got []string
		for _, m := range d.name.FindAllStringSubmatch(text, -1) {
			got = append(got, m[len(m)-1])
		}
		sort.Strings(got)
		if got = slices.Compact(got); !slices.Equal(got, want) {
			t.Errorf("%s names the alerts %v; the rules in %s have %v", d.path, got, rulesDir, want)
		}
	}
}

// The dashboard lays out as Grafana shows it: unique panel ids, every panel inside the
// 24 columns and on its own cells, every query panel on the dashboard's data source.
func TestDashboardLayout(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(dashboardDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards in %s (%v)", dashboardDir, err)
	}
	for _, path := range paths {
		var d struct {
			Panels []panel `json:"panels"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", relToChart(path), err)
		}
		file := relToChart(path)
		ids := map[int]string{}
		cells := map[[2]int]string{} // (x, y) -> panel
		for _, p := range d.Panels {
			where := fmt.Sprintf("%s: panel %d %q", file, p.ID, p.Title)
			if other, dup := ids[p.ID]; dup || p.ID == 0 {
				t.Errorf("%s: id %d is missing or also panel %q's", where, p.ID, other)
			}
			ids[p.ID] = p.Title
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("%s: gridPos %+v is outside the 24 columns", where, g)
			}
			if other := claim(cells, g.X, g.Y, g.W, g.H, p.Title); other != "" {
				t.Errorf("%s overlaps panel %q", where, other)
			}
			if p.Type != "row" && fmt.Sprint(p.Datasource) != "map[type:prometheus uid:${datasource}]" {
				t.Errorf("%s: datasource %v, want the dashboard's variable ${datasource}", where, p.Datasource)
			}
		}
	}
}

// claim marks the cells of a panel taken and returns the title of a panel that already
// held one of them.
func claim(cells map[[2]int]string, x0, y0, w, h int, title string) string {
	for x := x0; x < x0+w; x++ {
		for y := y0; y < y0+h; y++ {
			if other, taken := cells[[2]int{x, y}]; taken {
				return other
			}
			cells[[2]int{x, y}] = title
		}
	}
	return ""
}

// query is one PromQL expression and where it comes from, for messages.
type query struct {
	where, expr string
	records     string // the series a recording rule writes
}

type ruleFile struct {
	name   string
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func ruleFiles(t *testing.T) []ruleFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(rulesDir, "*.rules.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no rule files in %s (%v)", rulesDir, err)
	}
	var out []ruleFile
	for _, path := range paths {
		f := ruleFile{name: relToChart(path)}
		readYAML(t, path, &f)
		out = append(out, f)
	}
	return out
}

func ruleQueries(t *testing.T) []query {
	var out []query
	for _, f := range ruleFiles(t) {
		for _, g := range f.Groups {
			for i, r := range g.Rules {
				name := "alert " + r.Alert
				if r.Record != "" {
					name = "recording rule " + r.Record
				}
				if r.Alert == "" && r.Record == "" {
					name = fmt.Sprintf("rule %d", i+1)
				}
				out = append(out, query{where: fmt.Sprintf("%s: group %s, %s", f.name, g.Name, name), expr: r.Expr, records: r.Record})
			}
		}
	}
	return out
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource any    `json:"datasource"`
	GridPos    struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

// grafanaIntervals are the interval variables Grafana fills in; any duration parses.
var grafanaIntervals = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}`)

// labelValues is a template variable query label_values(selector, label).
var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// dashboardQueries reads the targets of every panel and the queries of the template
// variables of every dashboard.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dashboardDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards in %s (%v)", dashboardDir, err)
	}
	var out []query
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels     []panel `json:"panels"`
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", relToChart(path), err)
		}
		file := relToChart(path)
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				for _, tg := range p.Targets {
					if strings.TrimSpace(tg.Expr) == "" {
						t.Errorf("%s: panel %d %q, query %s: empty expression", file, p.ID, p.Title, tg.RefID)
						continue
					}
					out = append(out, query{
						where: fmt.Sprintf("%s: panel %d %q, query %s", file, p.ID, p.Title, tg.RefID),
						expr:  grafanaIntervals.ReplaceAllString(tg.Expr, "5m"),
					})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(string)
			if m, ok := v.Query.(map[string]any); ok {
				q, _ = m["query"].(string)
			}
			where := fmt.Sprintf("%s: variable %s", file, v.Name)
			switch m := labelValues.FindStringSubmatch(q); {
			case m != nil:
				out = append(out, query{where: where, expr: m[1]})
			case strings.HasPrefix(q, "query_result("):
				out = append(out, query{where: where, expr: strings.TrimSuffix(strings.TrimPrefix(q, "query_result("), ")")})
			default:
				t.Errorf("%s: query %q is neither label_values(selector, label) nor query_result(expr); the test cannot check it", where, q)
			}
		}
	}
	return out
}

// selectedMetrics lists the metric names expr selects, "" for a selector without one.
func selectedMetrics(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		out = append(out, name)
		return nil
	})
	return out
}

// metricComponents registers each component's metrics as its binary does.
var metricComponents = []struct {
	component string
	register  func(prometheus.Registerer)
}{
	{"scheduler", func(r prometheus.Registerer) { schedk8s.NewMetrics(r) }},
	{"webhook", func(r prometheus.Registerer) { webhooks.NewMetrics(r); policy.NewMetrics(r) }},
	{"autoscaler", func(r prometheus.Registerer) {
		actuator.NewMetrics(r)
		idlereclaim.NewMetrics(r)
		recommender.NewMetrics(r)
	}},
	{"node agent", func(r prometheus.Registerer) { agentmetrics.New(r, "node") }},
}

// registeredMetrics returns every series name the components register, mapped to the
// component, each from a registry of its own as the binaries build it. Histograms
// serve _bucket, _sum and _count series, summaries the name, _sum and _count.
func registeredMetrics(t *testing.T) map[string]string {
	t.Helper()
	known := map[string]string{}
	for _, c := range metricComponents {
		rec := &recorder{}
		c.register(rec)
		for _, col := range rec.collectors {
			names, err := seriesNames(col)
			if err != nil {
				t.Fatalf("%s: %v", c.component, err)
			}
			for _, n := range names {
				known[n] = c.component
			}
		}
	}
	// The webhook's handlers run on controller-runtime's webhook server, which
	// instruments each path in controller-runtime's registry (the managers serve it);
	// one request makes its latency histogram appear.
	srv := webhook.NewServer(webhook.Options{})
	srv.Register(webhooks.MutatePath, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.WebhookMux().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, webhooks.MutatePath, nil))
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, s := range suffixes(f.GetType()) {
			known[f.GetName()+s] = "controller-runtime"
		}
	}
	if known["controller_runtime_webhook_latency_seconds_bucket"] == "" {
		t.Fatal("controller-runtime's webhook latency histogram is not registered; the test's view of the webhook's metrics is out of date")
	}
	// Series Prometheus itself writes for every target and alert.
	for _, n := range []string{"up", "ALERTS", "ALERTS_FOR_STATE"} {
		known[n] = "Prometheus"
	}
	return known
}

// recorder is a Registerer that keeps what is registered with it, vectors without
// children included (a registry gathers only those with children).
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// descName reads a Desc's fully-qualified name, which client_golang only shows in String.
var descName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

func seriesNames(c prometheus.Collector) ([]string, error) {
	typ := dto.MetricType_UNTYPED
	switch c := c.(type) {
	case *prometheus.HistogramVec:
		typ = dto.MetricType_HISTOGRAM
	case *prometheus.SummaryVec:
		typ = dto.MetricType_SUMMARY
	case prometheus.Metric: // one Counter, Gauge, Histogram or Summary
		var m dto.Metric
		if err := c.Write(&m); err != nil {
			return nil, err
		}
		if m.Histogram != nil {
			typ = dto.MetricType_HISTOGRAM
		} else if m.Summary != nil {
			typ = dto.MetricType_SUMMARY
		}
	}
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	var out []string
	for d := range descs {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			return nil, fmt.Errorf("cannot read the metric name from %s", d)
		}
		for _, s := range suffixes(typ) {
			out = append(out, m[1]+s)
		}
	}
	return out, nil
}

func suffixes(t dto.MetricType) []string {
	switch t {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return []string{"_bucket", "_sum", "_count"}
	case dto.MetricType_SUMMARY:
		return []string{"", "_sum", "_count"}
	}
	return []string{""}
}

// didYouMean names the registered metrics closest to name, for a renamed one.
func didYouMean(name string, known map[string]string) string {
	best, bestD := []string(nil), len(name)/3+1
	for k := range known {
		switch d := editDistance(name, k); {
		case d < bestD:
			best, bestD = []string{k}, d
		case d == bestD:
			best = append(best, k)
		}
	}
	if len(best) == 0 {
		return ""
	}
	sort.Strings(best)
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(best, " or "))
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", relToChart(path), err)
	}
}

func relToChart(path string) string {
	if rel, err := filepath.Rel(chartDir, path); err == nil {
		return rel
	}
	return path
}
