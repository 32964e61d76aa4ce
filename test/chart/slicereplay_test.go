package chart

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/tessera-gpu/tessera/internal/tracearchive"
)

const (
	gib          = 1 << 30
	evalInterval = time.Minute // Prometheus' default evaluation_interval
)

// sliceScenario gives each pod a GPU-memory slice and says when its series reaches it.
type sliceScenario struct {
	name  string
	limit func(s []memSample) float64
	// reach is the first time the series reaches its limit, false when it never does.
	reach func(s []memSample, limit float64) (int64, bool)
	// oom: a pod that goes over its slice fails there, so later alerts do not count.
	oom bool
}

var sliceScenarios = []sliceScenario{
	{
		// The smallest slice in whole GiB the pod never goes over: the series comes
		// closest to its limit at its peak.
		name:  "peak rounded up to the next GiB; reached at the peak",
		limit: func(s []memSample) float64 { return ceilGiB(peak(s)) },
		reach: func(s []memSample, _ float64) (int64, bool) {
			p := peak(s)
			i := slices.IndexFunc(s, func(x memSample) bool { return x.v == p })
			return s[i].at, true
		},
	},
	{
		// A slice sized from a trial run: the pod's first hour. Pods that grow later go
		// over it, which would make their allocations fail.
		name: "first hour's peak rounded up to the next GiB; reached when used >= limit",
		limit: func(s []memSample) float64 {
			first := slices.DeleteFunc(slices.Clone(s), func(x memSample) bool { return x.at-s[0].at > time.Hour.Milliseconds() })
			return max(gib, ceilGiB(peak(first)))
		},
		reach: func(s []memSample, limit float64) (int64, bool) {
			i := slices.IndexFunc(s, func(x memSample) bool { return x.v >= limit })
			if i < 0 {
				return 0, false
			}
			return s[i].at, true
		},
		oom: true,
	},
}

// TestSliceAlertOnProductionMemorySeries replays the GPU memory of 143 production serving
// pods (testdata/genai2026, a sample every 57 s for 23 hours) through the slice alert as
// Prometheus evaluates it: the rule's own expression and `for`, the PromQL engine, an
// evaluation every minute, a stale marker where a series stops or pauses. For each way
// of sizing the slices it reports how many alerts fire and how long before the series
// reaches its limit the last alert before that fired (`go test -v` prints the table).
func TestSliceAlertOnProductionMemorySeries(t *testing.T) {
	rule := findAlert(t, "TesseraGPUSliceNearlyFull")
	pods := genaiMemory(t)
	if len(pods) != 143 {
		t.Fatalf("%d pods with GPU memory in the trace, want 143", len(pods))
	}
	t.Logf("%s (%s for %s, evaluated every %s) on %d production pods:", rule.Alert, strings.Join(strings.Fields(rule.Expr), " "), rule.For, evalInterval, len(pods))
	for _, sc := range sliceScenarios {
		limits := make([]float64, len(pods))
		for i, p := range pods {
			limits[i] = sc.limit(p.samples)
		}
		firing := replayAlert(t, rule, pods, limits)
		var alerts, alerted, reached, warned int
		var leads []time.Duration
		for i, p := range pods {
			at, ok := sc.reach(p.samples, limits[i])
			starts := firing[p.name]
			if ok && sc.oom {
				starts = slices.DeleteFunc(slices.Clone(starts), func(s int64) bool { return s > at })
			}
			alerts += len(starts)
			if len(starts) > 0 {
				alerted++
			}
			if !ok {
				continue
			}
			reached++
			before := slices.DeleteFunc(slices.Clone(starts), func(s int64) bool { return s > at })
			if len(before) > 0 {
				warned++
				leads = append(leads, time.Duration(at-before[len(before)-1])*time.Millisecond)
			}
		}
		if alerts == 0 || reached == 0 {
			t.Fatalf("%s: %d alerts, %d pods reach their limit; the replay exercises nothing", sc.name, alerts, reached)
		}
		t.Logf("slice = %s:\n  %d alerts on %d pods; %d pods reach their limit: %d warned before (lead time %s), %d not",
			sc.name, alerts, alerted, reached, warned, durations(leads), reached-warned)
	}
	// Why peaks come unannounced: most are a jump between two samples.
	jumps := 0
	for _, p := range pods {
		limit := ceilGiB(peak(p.samples))
		i := slices.IndexFunc(p.samples, func(x memSample) bool { return x.v == peak(p.samples) })
		if i > 0 && p.samples[i-1].v <= 0.9*limit {
			jumps++
		}
	}
	t.Logf("%d of %d pods jump to their peak from at most 90%% of it (rounded up to the GiB) between two samples", jumps, len(pods))
}

// replayAlert evaluates rule over the pods' used memory and limits and returns, per pod,
// the times (ms) the alert started firing.
func replayAlert(t *testing.T, rule alertRule, pods []podMemory, limits []float64) map[string][]int64 {
	t.Helper()
	var series memStorage
	first, last := int64(math.MaxInt64), int64(0)
	for i, p := range pods {
		lbls := func(name string) labels.Labels {
			return labels.FromStrings(model.MetricNameLabel, name, "namespace", "genai", "pod", p.name)
		}
		used, limit := withStaleMarkers(p.samples, nil), withStaleMarkers(p.samples, &limits[i])
		series = append(series,
			storage.NewListSeries(lbls("tessera_gpu_slice_memory_used_bytes"), used),
			storage.NewListSeries(lbls("tessera_gpu_slice_memory_limit_bytes"), limit))
		first, last = min(first, p.samples[0].at), max(last, p.samples[len(p.samples)-1].at)
	}
	hold, err := model.ParseDuration(rule.For)
	if err != nil {
		t.Fatalf("alert %s: for %q: %v", rule.Alert, rule.For, err)
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: 5 * time.Minute,
		LookbackDelta: 5 * time.Minute, Parser: parser.NewParser(parser.Options{})})
	start := time.UnixMilli(first).Truncate(evalInterval)
	end := time.UnixMilli(last).Add(10 * time.Minute)
	q, err := engine.NewRangeQuery(context.Background(), series, nil, rule.Expr, start, end, evalInterval)
	if err != nil {
		t.Fatalf("alert %s: %v", rule.Alert, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("alert %s: %v", rule.Alert, res.Err)
	}
	matrix, err := res.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	// An alert is pending from the first evaluation that returns its series and fires
	// once it has been returned by every evaluation for `for`.
	firing := map[string][]int64{}
	step, holdMs := evalInterval.Milliseconds(), time.Duration(hold).Milliseconds()
	for _, s := range matrix {
		pod := s.Metric.Get("pod")
		var activeAt int64
		fired := false
		for i, pt := range s.Floats {
			if i == 0 || pt.T-s.Floats[i-1].T != step {
				activeAt, fired = pt.T, false
			}
			if !fired && pt.T-activeAt >= holdMs {
				firing[pod] = append(firing[pod], pt.T)
				fired = true
			}
		}
	}
	return firing
}

type memSample struct {
	at int64 // ms
	v  float64
}

type podMemory struct {
	name    string
	samples []memSample // by time
}

// genaiMemory reads the pods' GPU memory series; pods that never used any are left out.
func genaiMemory(t *testing.T) []podMemory {
	t.Helper()
	rows, err := tracearchive.ReadCSV(filepath.Join("testdata", "genai2026", "pod_gpu_memory_used_bytes_anon.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if head := strings.Join(rows[0], ","); head != "timestamp_anon,value,container_ip" {
		t.Fatalf("CSV header %s, want timestamp_anon,value,container_ip", head)
	}
	byPod := map[string][]memSample{}
	for _, row := range rows[1:] {
		ts, err1 := strconv.ParseFloat(row[0], 64)
		v, err2 := strconv.ParseFloat(row[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %v: %v %v", row, err1, err2)
		}
		pod := row[2][:12]
		byPod[pod] = append(byPod[pod], memSample{at: int64(ts * 1000), v: v})
	}
	var out []podMemory
	for name, s := range byPod {
		slices.SortFunc(s, func(a, b memSample) int { return int(a.at - b.at) })
		if peak(s) > 0 {
			out = append(out, podMemory{name: name, samples: s})
		}
	}
	slices.SortFunc(out, func(a, b podMemory) int { return strings.Compare(a.name, b.name) })
	return out
}

// withStaleMarkers turns samples into a series (their values, or constant when c is
// set) with the stale marker Prometheus writes when a series leaves the scrape: after
// the last sample and in pauses longer than two sample intervals.
func withStaleMarkers(s []memSample, c *float64) []chunks.Sample {
	const interval = 57 * time.Second / time.Millisecond
	var out []chunks.Sample
	for i, x := range s {
		v := x.v
		if c != nil {
			v = *c
		}
		out = append(out, fsample{x.at, v})
		if i == len(s)-1 || s[i+1].at-x.at > 2*int64(interval) {
			out = append(out, fsample{x.at + int64(interval), math.Float64frombits(value.StaleNaN)})
		}
	}
	return out
}

func peak(s []memSample) float64 {
	p := 0.0
	for _, x := range s {
		p = max(p, x.v)
	}
	return p
}

func ceilGiB(b float64) float64 { return math.Ceil(b/gib) * gib }

// durations prints min / median / max.
func durations(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	slices.Sort(d)
	r := func(x time.Duration) string { return x.Round(time.Minute).String() }
	return fmt.Sprintf("min %s, median %s, max %s", r(d[0]), r(d[len(d)/2]), r(d[len(d)-1]))
}

type alertRule struct{ Alert, Expr, For string }

func findAlert(t *testing.T, name string) alertRule {
	t.Helper()
	for _, f := range ruleFiles(t) {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == name {
					return alertRule{Alert: r.Alert, Expr: r.Expr, For: r.For}
				}
			}
		}
	}
	t.Fatalf("no alert %s in %s", name, rulesDir)
	return alertRule{}
}

// fsample is a float sample of a test series.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// memStorage is an in-memory Queryable over a few series.
type memStorage []storage.Series

func (m memStorage) Querier(int64, int64) (storage.Querier, error) {
	return &storage.MockQuerier{SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var out []storage.Series
		for _, s := range m {
			if matchesAll(s.Labels(), ms) {
				out = append(out, s)
			}
		}
		slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
		return &seriesSet{series: out, i: -1}
	}}, nil
}

func matchesAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
