package report

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fillResult builds a fill-up result whose allocation follows the arrived request up
// to a ceiling, as a policy that starts failing pods near full would.
func fillResult(policy string, seed int64, ceiling float64) Result {
	r := Result{Policy: policy, Seed: seed, Trace: "openb_pod_list_default.csv", WallSeconds: 1 + float64(seed%3)/10}
	for a := 0.0; a <= 130; a += 0.5 {
		alloc := a
		if knee := ceiling - 10; a > knee {
			alloc = ceiling - 10*math.Exp(-(a-knee)/10)
		}
		r.Curve = append(r.Curve, Point{ArrivedPct: a, AllocPct: alloc, FragPct: a / 130 * (100 - ceiling)})
	}
	r.AllocPctAt = map[string]float64{}
	for _, k := range []float64{50, 90, 100, 130} {
		r.AllocPctAt[fmtTick(k)] = r.Curve[int(k*2)].AllocPct
	}
	r.UnallocatedPctAt100 = ptr(100 - r.AllocPctAt["100"])
	r.FragPctAt90 = ptr(r.Curve[180].FragPct)
	return r
}

func replayResult(policy string, seed int64, level float64) Result {
	rp := &Replay{Preemptions: int(seed % 4), JobsStarved: int(seed % 2)}
	for i := 0; i <= 96; i++ {
		t := float64(i) / 4
		rp.Times = append(rp.Times, t)
		rp.AllocPct = append(rp.AllocPct, math.Min(100, level+15*math.Sin(t/24*2*math.Pi)))
		rp.Nodes = append(rp.Nodes, 10-i/40)
	}
	for i := 0; i < 50; i++ {
		rp.WaitSeconds = append(rp.WaitSeconds, float64(i*i)*3*(100-level)/50)
	}
	rp.MeanAllocPct = level
	return Result{Policy: policy, Seed: seed, Trace: "operator", WallSeconds: 0.3, Replay: rp}
}

func sampleResults() []Result {
	var rs []Result
	for seed := int64(42); seed < 45; seed++ {
		rs = append(rs, fillResult("bestfit", seed, 92+float64(seed-42)/2), fillResult("fgd", seed, 95+float64(seed-42)/4),
			fillResult("tessera", seed, 96.5+float64(seed-42)/5))
	}
	for seed := int64(42); seed < 44; seed++ {
		rs = append(rs, replayResult("kube-default", seed, 43+float64(seed-42)), replayResult("tessera", seed, 77+float64(seed-42)))
	}
	return rs
}

func TestMeanStddevAndPercentile(t *testing.T) {
	m, sd := MeanStddev([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if m != 5 || math.Abs(sd-2.138089935299395) > 1e-12 { // sample stddev: sqrt(32/7)
		t.Errorf("mean %v sd %v", m, sd)
	}
	if m, sd := MeanStddev([]float64{3}); m != 3 || sd != 0 {
		t.Errorf("one value: %v %v", m, sd)
	}
	if m, sd := MeanStddev(nil); m != 0 || sd != 0 {
		t.Errorf("none: %v %v", m, sd)
	}
	v := []float64{10, 1, 5, 3, 7}
	if p := Percentile(v, 50); p != 5 {
		t.Errorf("median %v", p)
	}
	if p := Percentile(v, 95); math.Abs(p-9.4) > 1e-12 { // between 7 and 10 at 0.8
		t.Errorf("p95 %v", p)
	}
	if !slices.Equal(v, []float64{10, 1, 5, 3, 7}) {
		t.Error("Percentile sorted its input")
	}
}

func TestSummarize(t *testing.T) {
	rs := []Result{
		{Policy: "fgd", Seed: 42, Trace: "t", UnallocatedPctAt100: ptr(4), FragPctAt90: ptr(5), WallSeconds: 1, AllocPctAt: map[string]float64{"100": 96}},
		{Policy: "bestfit", Seed: 42, Trace: "t", UnallocatedPctAt100: ptr(7), WallSeconds: 2},
		{Policy: "fgd", Seed: 43, Trace: "t", UnallocatedPctAt100: ptr(6), FragPctAt90: ptr(7), WallSeconds: 3, AllocPctAt: map[string]float64{"100": 94}},
		{Policy: "fgd", Seed: 44, Trace: "t", UnallocatedPctAt100: ptr(5), FragPctAt90: ptr(6), WallSeconds: 2, AllocPctAt: map[string]float64{"100": 95}},
		{Policy: "fgd", Seed: 42, Trace: "u", UnallocatedPctAt100: ptr(1)},
	}
	ss := Summarize(rs)
	if len(ss) != 3 || ss[0].Policy != "fgd" || ss[0].Trace != "t" || ss[1].Policy != "bestfit" || ss[2].Trace != "u" {
		t.Fatalf("order %+v", ss)
	}
	f := ss[0]
	if f.Runs != 3 || *f.MeanUnallocatedPctAt100 != 5 || *f.StddevUnallocatedPctAt100 != 1 || *f.MeanFragPctAt90 != 6 || *f.StddevFragPctAt90 != 1 ||
		f.MeanWallSeconds != 2 || f.MeanAllocPctAt["100"] != 95 || f.Replay != nil {
		t.Errorf("fgd summary %+v", f)
	}
	if b := ss[1]; b.Runs != 1 || *b.MeanUnallocatedPctAt100 != 7 || *b.StddevUnallocatedPctAt100 != 0 || b.MeanFragPctAt90 != nil {
		t.Errorf("bestfit summary %+v (a figure no run has must stay nil)", b)
	}

	rep := Summarize([]Result{
		{Policy: "p", Replay: &Replay{MeanAllocPct: 70, WaitSeconds: []float64{0, 10}, Preemptions: 2, JobsStarved: 0}},
		{Policy: "p", Replay: &Replay{MeanAllocPct: 80, WaitSeconds: []float64{20, 30, 40}, Preemptions: 5, JobsStarved: 3}},
	})[0].Replay
	if rep == nil || rep.MeanAllocPct != 75 || math.Abs(rep.StddevAllocPct-math.Sqrt(50)) > 1e-12 || rep.MeanWaitSeconds != 20 ||
		rep.P95WaitSeconds != 38 || rep.MeanPreemptions != 3.5 || rep.MaxJobsStarved != 3 {
		t.Errorf("replay summary %+v", rep)
	}
}

// The tail figures: percentiles and completion times pool the jobs of all runs, the
// counts over 6 and 12 hours are the worst run's, the GPU-weighted mean weighs each
// wait by the job's GPUs, lost GPU-hours are a mean per run; per queue and class too.
func TestSummarizeTail(t *testing.T) {
	h := 3600.0
	rep := Summarize([]Result{
		{Policy: "p", Replay: &Replay{WaitSeconds: []float64{0, 7 * h, 13 * h}, WaitGPUs: []float64{32, 1, 0.25},
			WaitQueues: []string{"prod", "dev", "dev"}, JCTSeconds: []float64{h, 9 * h, 20 * h}, LostGPUHours: 4}},
		{Policy: "p", Replay: &Replay{WaitSeconds: []float64{7 * h, 8 * h}, WaitGPUs: []float64{8, 8},
			WaitQueues: []string{"prod", "dev"}, JCTSeconds: []float64{10 * h, 9 * h}, LostGPUHours: 0}},
	})[0].Replay
	waits := []float64{0, 7 * h, 13 * h, 7 * h, 8 * h}
	jcts := []float64{h, 9 * h, 20 * h, 10 * h, 9 * h}
	weighted := (7*h*1 + 13*h*0.25 + 7*h*8 + 8*h*8) / (32 + 1 + 0.25 + 8 + 8)
	if rep.P99WaitSeconds != Percentile(waits, 99) || rep.MaxWaitSeconds != 13*h || rep.JobsWaitedOver6h != 2 || rep.JobsWaitedOver12h != 1 ||
		math.Abs(rep.GPUWeightedMeanWaitSeconds-weighted) > 1e-9 || rep.MeanJCTSeconds != 9.8*h ||
		rep.P95JCTSeconds != Percentile(jcts, 95) || rep.P99JCTSeconds != Percentile(jcts, 99) || rep.MeanLostGPUHours != 2 {
		t.Errorf("tail %+v", rep)
	}
	if len(rep.Waits) != 2 {
		t.Fatalf("waits by queue %+v", rep.Waits)
	}
	dev, prod := rep.Waits[0], rep.Waits[1]
	if dev.Name != "dev" || dev.Jobs != 3 || dev.P99Seconds != Percentile([]float64{7 * h, 13 * h, 8 * h}, 99) ||
		math.Abs(dev.GPUWeightedMeanSeconds-(7*h+13*h*0.25+8*h*8)/9.25) > 1e-9 ||
		math.Abs(dev.MeanJCTSeconds-38*h/3) > 1e-9 || dev.P95JCTSeconds != Percentile([]float64{9 * h, 20 * h, 9 * h}, 95) {
		t.Errorf("queue dev %+v", dev)
	}
	if prod.Name != "prod" || math.Abs(prod.GPUWeightedMeanSeconds-7*h*8/40) > 1e-9 || prod.MeanJCTSeconds != 5.5*h {
		t.Errorf("queue prod %+v", prod)
	}
}

func TestMeanCurve(t *testing.T) {
	a := Result{Policy: "p", Curve: []Point{{0, 0, 0}, {0.6, 0.6, 0}, {1.2, 1.1, 0.2}, {2.4, 2.0, 0.4}, {3.1, 2.5, 0.5}}}
	b := Result{Policy: "p", Curve: []Point{{0, 0, 0}, {1.0, 1.0, 0.0}, {2.0, 1.8, 0.2}}}
	got := Summarize([]Result{a, b})[0].Curve
	// Run a's bins: 0 -> 0; 1 -> mean of 0.6 and 1.2 arrived; 2; 3. Run b stops at bin 2.
	want := []Point{{0, 0, 0}, {1, ((0.6+1.1)/2 + 1.0) / 2, (0.1 + 0) / 2}, {2, (2.0 + 1.8) / 2, (0.4 + 0.2) / 2}}
	if len(got) != len(want) {
		t.Fatalf("curve %+v", got)
	}
	for i := range want {
		if math.Abs(got[i].AllocPct-want[i].AllocPct) > 1e-12 || math.Abs(got[i].FragPct-want[i].FragPct) > 1e-12 || got[i].ArrivedPct != want[i].ArrivedPct {
			t.Errorf("point %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBinCurve(t *testing.T) {
	curve := []Point{
		{0, 0, 0},
		{0.5, 0.5, 0}, // rounds half to even: bin 0
		{1.5, 1.5, 1}, // bin 2
		{2.4, 2.3, 3}, // bin 2
		{4.6, 4.0, 5}, // bin 5; bins 3 and 4 are empty
		{7.2, 6.0, 7}, // bin 7; bin 6 is empty
	}
	got := BinCurve(curve)
	want := []Point{
		{0, 0.25, 0},
		{1, (0 + 0.5 + 1.5 + 2.3) / 4, (1 + 3) / 4.0}, // empty: bins 0..2
		{2, (1.5 + 2.3) / 2, 2},
		{3, (1.5 + 2.3) / 2, 2}, // empty: bins 2..4
		{4, 4.0, 5},             // empty: bins 3..5
		{5, 4.0, 5},
		{6, 5.0, 6}, // empty: bins 5..7
		{7, 6.0, 7},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if math.Abs(got[i].AllocPct-want[i].AllocPct) > 1e-12 || math.Abs(got[i].FragPct-want[i].FragPct) > 1e-12 || got[i].ArrivedPct != want[i].ArrivedPct {
			t.Errorf("bin %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A gap of more than one bin leaves bins out.
	if got := BinCurve([]Point{{0, 0, 0}, {5, 5, 0}}); len(got) != 4 || got[2].ArrivedPct != 4 {
		t.Errorf("sparse curve %+v", got)
	}
	if BinCurve(nil) != nil {
		t.Error("empty curve")
	}
}

func TestNewFillUpResult(t *testing.T) {
	var curve []Point
	for a := 0.0; a <= 131; a += 0.25 {
		curve = append(curve, Point{ArrivedPct: a, AllocPct: math.Min(a, 95), FragPct: a / 10})
	}
	r := NewFillUpResult("fgd", "default", 42, curve, 1500*time.Millisecond)
	if r.Policy != "fgd" || r.Trace != "default" || r.Seed != 42 || r.WallSeconds != 1.5 || len(r.Curve) != len(curve) {
		t.Errorf("result %+v", r)
	}
	// Bin 50 holds arrived 49.5 (half to even), 49.75, 50, 50.25, 50.5: mean 50.
	want := map[string]float64{"50": 50, "90": 90, "100": 95, "130": 95}
	if !reflect.DeepEqual(r.AllocPctAt, want) {
		t.Errorf("alloc_pct_at %v, want %v", r.AllocPctAt, want)
	}
	if *r.UnallocatedPctAt100 != 5 || math.Abs(*r.FragPctAt90-9) > 1e-12 {
		t.Errorf("unallocated %v frag %v", *r.UnallocatedPctAt100, *r.FragPctAt90)
	}
	short := NewFillUpResult("fgd", "default", 42, curve[:198], time.Second) // up to 49.25% arrived: bin 49
	if len(short.AllocPctAt) != 0 || short.UnallocatedPctAt100 != nil || short.FragPctAt90 != nil {
		t.Errorf("short run %+v", short)
	}
}

func TestWriteJSONShape(t *testing.T) {
	rs := sampleResults()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rs, nil); err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 2 || len(doc["results"]) != len(rs) || len(doc["summary"]) != 5 {
		t.Fatalf("top level: %d keys, %d results, %d summaries", len(doc), len(doc["results"]), len(doc["summary"]))
	}
	first := doc["results"][0]
	for _, k := range []string{"policy", "seed", "trace", "alloc_pct_at", "unallocated_pct_at_100", "frag_pct_at_90", "wall_seconds"} {
		if _, ok := first[k]; !ok {
			t.Errorf("result lacks %q: %v", k, first)
		}
	}
	if _, ok := first["replay"]; ok {
		t.Error("fill-up result has a replay field")
	}
	if _, ok := first["curve"]; ok || len(first) != 7 {
		t.Errorf("fill-up result keys: %v", first)
	}
	at := first["alloc_pct_at"].(map[string]any)
	if len(at) != 4 || at["50"] == nil || at["90"] == nil || at["100"] == nil || at["130"] == nil {
		t.Errorf("alloc_pct_at %v", at)
	}
	if first["policy"] != "bestfit" || first["seed"] != 42.0 || first["trace"] != "openb_pod_list_default.csv" {
		t.Errorf("result %v", first)
	}
	s0 := doc["summary"][0]
	for _, k := range []string{"policy", "mean_unallocated_pct_at_100", "stddev_unallocated_pct_at_100"} {
		if _, ok := s0[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	last := doc["results"][len(rs)-1]
	rp, ok := last["replay"].(map[string]any)
	if !ok {
		t.Fatalf("replay result without replay: %v", last)
	}
	for _, k := range []string{"times_hours", "alloc_pct", "nodes", "wait_seconds", "preemptions", "jobs_starved", "mean_alloc_pct"} {
		if _, ok := rp[k]; !ok {
			t.Errorf("replay lacks %q", k)
		}
	}
	if m, ok := last["alloc_pct_at"].(map[string]any); !ok || len(m) != 0 {
		t.Errorf("replay alloc_pct_at should be {}, got %v", last["alloc_pct_at"])
	}
	if rs := doc["summary"][len(doc["summary"])-1]["replay"].(map[string]any); rs["p95_wait_seconds"] == nil {
		t.Errorf("replay summary %v", rs)
	}

	buf.Reset()
	if err := WriteJSON(&buf, nil, nil); err != nil || strings.TrimSpace(buf.String()) != "{\n  \"results\": [],\n  \"summary\": []\n}" {
		t.Errorf("empty document %q %v", buf.String(), err)
	}
}

func TestWriteTable(t *testing.T) {
	rs := sampleResults()
	var buf bytes.Buffer
	if err := WriteTable(&buf, rs, nil); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	ss := Summarize(rs)
	wantLines := []string{
		"openb_pod_list_default.csv — fill-up, 3 seeds",
		"operator — replay, 2 seeds",
	}
	for _, w := range wantLines {
		if !slices.Contains(lines, w) {
			t.Errorf("missing line %q in\n%s", w, out)
		}
	}
	// One row per policy with mean ± stddev of unallocated % at 100.
	for _, s := range ss[:3] {
		row := rowOf(lines[2:], s.Policy+" ")
		want := pmOpt(s.MeanUnallocatedPctAt100, s.StddevUnallocatedPctAt100, s.Runs)
		if row == "" || !strings.Contains(row, want) || !strings.Contains(row, pct(s.MeanAllocPctAt, "130")) {
			t.Errorf("row for %s %q lacks %q", s.Policy, row, want)
		}
	}
	r := slices.Index(lines, "operator — replay, 2 seeds")
	if row := rowOf(lines[r:], "tessera "); !strings.Contains(row, "77.50 ± 0.71") {
		t.Errorf("replay row %q", row)
	}
	if !strings.HasPrefix(lines[1], "tessera leaves 5.9% of GPUs unallocated at 100% arrived; fgd 7.0%, bestfit 9.2% (lower is better") {
		t.Errorf("headline %q", lines[1])
	}
	if lines[6] != fillKey || lines[r+4] != replayKey {
		t.Errorf("keys under the tables missing:\n%s", out)
	}
	// Columns line up: every row of a table has the same width.
	for _, block := range [][]string{lines[2:6], lines[r+1 : r+4]} {
		for _, l := range block {
			if len([]rune(l)) != len([]rune(block[0])) {
				t.Errorf("ragged table:\n%s", strings.Join(block, "\n"))
				break
			}
		}
	}
}

func rowOf(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestWriteHTML(t *testing.T) {
	rs := sampleResults()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "Tessera simulation <demo>", rs, nil); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"http://", "https://", "<script", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n := strings.Count(page, "<svg"); n != 6 { // 3 fill-up charts + 3 replay charts (no autoscaler: no node chart)
		t.Errorf("%d charts, want 6", n)
	}
	for _, want := range []string{"Unallocated GPUs vs arrived GPU request (lower is better)", `<p class="headline">tessera leaves`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, absent := range []string{"GPU nodes over time", "nodes removed"} {
		if strings.Contains(page, absent) {
			t.Errorf("page shows %q though no autoscaler ran", absent)
		}
	}
	if strings.Count(page, "<svg") != strings.Count(page, "</svg>") {
		t.Error("unbalanced svg elements")
	}
	for _, want := range []string{"<title>Tessera simulation &lt;demo&gt;</title>", "GPU allocation vs arrived GPU request",
		"GPU fragmentation vs arrived GPU request", "GPU allocation over time", "Queue wait distribution",
		"<polyline", "<rect", "fgd", "kube-default", "All 13 runs"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Each policy gets one colour, the same in every chart.
	if strings.Count(page, `stroke="#4e79a7"`) != 3 || strings.Count(page, `stroke="#f28e2b"`) != 3 {
		t.Errorf("colours per fill-up chart series are inconsistent")
	}
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 100, 6, []float64{0, 20, 40, 60, 80, 100}},
		{0, 130, 7, []float64{0, 25, 50, 75, 100, 125, 150}},
		{0, 130, 6, []float64{0, 50, 100, 150}},
		{0, 7.3, 6, []float64{0, 2, 4, 6, 8}},
		{0, 0, 6, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0, 24, 7, []float64{0, 5, 10, 15, 20, 25}},
	}
	for _, c := range cases {
		if got := niceTicks(c.lo, c.hi, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("niceTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	for s, want := range map[float64]string{0: "0s", 42.4: "42s", 725: "12m05s", 3*3600 + 7*60: "3h07m", -1: "-"} {
		if got := FormatSeconds(s); got != want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", s, got, want)
		}
	}
}

// fakeClock advances by a fixed step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestProgressNonTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, 1000, "fgd seed 42") // a buffer is not a terminal
	for range 1000 {
		p.Add(1)
	}
	p.Done()
	p.Done()
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "fgd seed 42:  10%  100/1000") || !strings.HasPrefix(lines[9], "fgd seed 42: 100%  1000/1000") {
		t.Fatalf("lines:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "\r") {
		t.Error("carriage return in non-terminal output")
	}

	buf.Reset()
	p = NewProgress(&buf, 1000, "x")
	p.Add(250)
	p.Done() // stopped early: one final line
	if got := strings.Count(buf.String(), "\n"); got != 1 || !strings.Contains(buf.String(), "x:  25%  250/1000") {
		t.Errorf("early stop:\n%s", buf.String())
	}

	var nilP *Progress
	nilP.Add(1)
	nilP.Done()
}

func TestProgressTerminalRateLimited(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0), step: time.Millisecond}
	p := newProgress(&buf, 10000, "bestfit", true, clock.now)
	for range 10000 {
		p.Add(1)
	}
	p.Done()
	out := buf.String()
	draws := strings.Count(out, "\r")
	// 10 s of fake time at one redraw per 100 ms, plus the final draw.
	if draws < 90 || draws > 102 {
		t.Errorf("%d redraws for 10000 adds over 10 s", draws)
	}
	if !strings.HasSuffix(out, "bestfit "+strings.Repeat("█", barWidth)+" 100%  10000/10000  10.0s\x1b[K\n") {
		t.Errorf("final draw %q", out[strings.LastIndex(out, "\r"):])
	}
}

func BenchmarkProgressAdd(b *testing.B) {
	var buf bytes.Buffer
	p := NewProgress(&buf, b.N, "bench")
	for b.Loop() {
		p.Add(1)
	}
	p.Done()
}

func ptr(v float64) *float64 { return &v }

// Points a run never reached are shown as missing, never as 0: in the table, the JSON
// (null) and the HTML; replay runs carry no fill-up figures.
func TestUnreachedPointsAreMissing(t *testing.T) {
	var curve []Point
	for a := 0.0; a <= 30; a += 0.5 {
		curve = append(curve, Point{ArrivedPct: a, AllocPct: a, FragPct: 1})
	}
	rs := []Result{NewFillUpResult("fgd", "t", 42, curve, time.Second), replayResult("tessera", 42, 70)}
	var table, js, html bytes.Buffer
	if err := WriteTable(&table, rs, nil); err != nil {
		t.Fatal(err)
	}
	row := rowOf(strings.Split(table.String(), "\n"), "fgd ")
	if strings.Contains(row, "0.00") || strings.Count(row, Missing) != 6 {
		t.Errorf("fill-up row of a run that reached 30%%: %q", row)
	}
	if err := WriteJSON(&js, rs, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
		Summary []map[string]any `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range append(doc.Results, doc.Summary...) {
		for _, k := range []string{"unallocated_pct_at_100", "frag_pct_at_90", "mean_unallocated_pct_at_100", "mean_frag_pct_at_90"} {
			if v, ok := m[k]; ok && v != nil {
				t.Errorf("%s of %v: %v, want null", k, m["policy"], v)
			}
		}
	}
	if err := WriteHTML(&html, "t", rs, nil); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(html.String(), "\n") {
		if strings.Contains(l, "<td>fgd</td>") && strings.Contains(l, "<td>0.00</td>") {
			t.Errorf("the HTML shows an unreached point as 0.00: %s", l)
		}
		if strings.Contains(l, "<td>tessera</td><td>operator</td>") && !strings.Contains(l, "<td>–</td><td>–</td><td>70.00</td>") {
			t.Errorf("the HTML shows fill-up figures for a replay run: %s", l)
		}
	}
}

// Replay tables say when waits include jobs that never started.
func TestCensoredWaitsNoted(t *testing.T) {
	r := replayResult("kube-default", 42, 40)
	r.Replay.CensoredWaits = 2
	var table bytes.Buffer
	if err := WriteTable(&table, []Result{r, replayResult("tessera", 42, 70)}, nil); err != nil {
		t.Fatal(err)
	}
	if want := "jobs that never started (all runs): kube-default 2; their waits count up to the end of the run"; !strings.Contains(table.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, table.String())
	}
}

// Replay reports chart each queue: allocated GPUs against deserved and capability,
// and pending jobs.
func TestQueueCharts(t *testing.T) {
	var rs []Result
	for _, p := range []string{"kube-default", "tessera"} {
		r := replayResult(p, 42, 60)
		n := len(r.Replay.Times)
		q := QueueSeries{Name: "train-prod", DeservedGPUs: 40, CapabilityGPUs: 64, AllocGPUs: make([]float64, n), PendingJobs: make([]int, n)}
		r.Replay.Queues = []QueueSeries{q}
		rs = append(rs, r)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "t", rs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Queue train-prod: allocated GPUs (seed 42)", "Queue train-prod: pending jobs (seed 42)", ">deserved<", ">capability<"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
