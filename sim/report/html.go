package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
)

// waitBins are the wait-time histogram's bins: upper bounds in seconds and labels.
var waitBins = []struct {
	upTo  float64
	label string
}{
	{60, "<1m"}, {5 * 60, "1–5m"}, {15 * 60, "5–15m"}, {30 * 60, "15–30m"}, {3600, "30m–1h"},
	{2 * 3600, "1–2h"}, {4 * 3600, "2–4h"}, {math.Inf(1), "≥4h"},
}

// timeGridSteps is the number of samples replay series are resampled to when
// averaged across seeds.
const timeGridSteps = 240

//go:embed html.tmpl
var pageTemplate string

// page renders WriteHTML's page from an htmlPage, escaping every value for where it
// appears.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"f0": func(v float64) string { return fmt.Sprintf("%.0f", v) },
	"f1": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2": func(v float64) string { return fmt.Sprintf("%.2f", v) },
}).Parse(pageTemplate))

// htmlPage is what the page template shows: text as it is, figures formatted.
type htmlPage struct {
	Title, Subtitle string
	Traces          []htmlTrace
	Runs            []htmlRun
}

// htmlTrace is one trace's sections; either may be nil.
type htmlTrace struct {
	Fill   *htmlFill
	Replay *htmlReplay
}

type htmlLegend struct{ Color, Name string }

// htmlFill is a trace's fill-up section.
type htmlFill struct {
	Trace, Headline, Note string
	Rows                  []htmlFillRow
	Legend                []htmlLegend
	Charts                []svgChart
}

type htmlFillRow struct {
	Color, Policy     string
	Best              bool
	Runs              int
	Unallocated, Frag string
	AllocAt           []string // at AllocKeys
	Wall              float64
}

// htmlReplay is a trace's replay section.
type htmlReplay struct {
	Trace        string
	Rows         []htmlReplayRow
	CensoredNote string
	Savings      *htmlSavings
	Legend       []htmlLegend
	Charts       []svgChart
}

type htmlReplayRow struct {
	Color, Policy                  string
	Best                           bool
	Runs, Starved                  int
	Alloc, Util, WaitMean, WaitP95 string
	WaitP99, WaitMax, WaitGPU, JCT string
	Preemptions, LostGPUHours      float64
	Wall                           float64
}

// htmlRun is a row of the table of all runs.
type htmlRun struct {
	Policy, Trace                                               string
	Seed                                                        int64
	AllocAt                                                     []string // at AllocKeys
	Unallocated, Frag, MeanAlloc, Started, Preemptions, Starved string
	Wall                                                        float64
}

// WriteHTML writes a self-contained report page (inline CSS and SVG, no scripts, no
// network): per trace, the summary table and, for fill-up runs, GPU allocation and
// fragmentation against arrived GPU request (mean over seeds per policy); for replay
// runs, GPU allocation and GPU nodes over time (mean over seeds) and the queue
// wait-time distribution; then every run. summaries may be nil, then they are
// computed from results.
func WriteHTML(w io.Writer, title string, results []Result, summaries []Summary) error {
	if summaries == nil {
		summaries = Summarize(results)
	}
	colors := policyColors(summaries)
	p := htmlPage{Title: title, Subtitle: subtitle(results, summaries), Runs: runRows(results)}
	for _, g := range byTrace(summaries) {
		var t htmlTrace
		if len(g.fill) > 0 {
			t.Fill = fillSection(g.trace, g.fill, colors)
		}
		if len(g.replay) > 0 {
			t.Replay = replaySection(g.trace, g.replay, results, colors)
		}
		p.Traces = append(p.Traces, t)
	}
	var b bytes.Buffer
	if err := page.ExecuteTemplate(&b, "page", p); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func policyColors(ss []Summary) map[string]string {
	m := map[string]string{}
	for _, s := range ss {
		if _, ok := m[s.Policy]; !ok {
			m[s.Policy] = palette[len(m)%len(palette)]
		}
	}
	return m
}

func subtitle(results []Result, ss []Summary) string {
	var policies []string
	seeds := map[int64]bool{}
	for _, s := range ss {
		if !slices.Contains(policies, s.Policy) {
			policies = append(policies, s.Policy)
		}
	}
	for _, r := range results {
		seeds[r.Seed] = true
	}
	return fmt.Sprintf("%d runs · policies: %s · %d seeds · traces: %s", len(results), strings.Join(policies, ", "), len(seeds), strings.Join(traceNames(ss), ", "))
}

func legend(ss []Summary, colors map[string]string) []htmlLegend {
	out := make([]htmlLegend, len(ss))
	for i, s := range ss {
		out[i] = htmlLegend{colors[s.Policy], s.Policy}
	}
	return out
}

func fillSection(trace string, ss []Summary, colors map[string]string) *htmlFill {
	f := &htmlFill{Trace: trace, Headline: FillHeadline(ss), Note: offlineNote(ss)}
	best := slices.MinFunc(ss, func(a, c Summary) int { return cmpOpt(a.MeanUnallocatedPctAt100, c.MeanUnallocatedPctAt100) })
	for _, s := range ss {
		f.Rows = append(f.Rows, htmlFillRow{Color: colors[s.Policy], Policy: s.Policy,
			Best: len(ss) > 1 && s.Policy == best.Policy && s.MeanUnallocatedPctAt100 != nil, Runs: s.Runs,
			Unallocated: pmOpt(s.MeanUnallocatedPctAt100, s.StddevUnallocatedPctAt100, s.Runs), AllocAt: allocPcts(s.MeanAllocPctAt),
			Frag: pmOpt(s.MeanFragPctAt90, s.StddevFragPctAt90, s.Runs), Wall: s.MeanWallSeconds})
	}
	xMax := 100.0
	var alloc, frag, unalloc []series
	unallocMax := 1.0
	for _, s := range ss {
		if len(s.Curve) == 0 {
			continue
		}
		xMax = max(xMax, s.Curve[len(s.Curve)-1].ArrivedPct)
		a := series{name: s.Policy, color: colors[s.Policy]}
		fr, un := a, a
		for _, p := range s.Curve {
			a.xs, a.ys = append(a.xs, p.ArrivedPct), append(a.ys, p.AllocPct)
			fr.xs, fr.ys = append(fr.xs, p.ArrivedPct), append(fr.ys, p.FragPct)
			if p.ArrivedPct >= unallocFrom {
				un.xs, un.ys = append(un.xs, p.ArrivedPct), append(un.ys, 100-p.AllocPct)
				unallocMax = max(unallocMax, 100-p.AllocPct)
			}
		}
		alloc, frag, unalloc = append(alloc, a), append(frag, fr), append(unalloc, un)
	}
	if len(alloc) == 0 {
		return f
	}
	f.Legend = legend(ss, colors)
	if xMax > unallocFrom {
		// Where the policies differ: the FGD paper's view, 80% arrived and beyond.
		var guides []guide
		if off := offlineMean(ss); off > 0 {
			guides = append(guides, guide{unallocFrom, off, xMax, off, fmt.Sprintf("offline reference %.2f%%", off), xMax, off})
		}
		guides = append(guides, guide{x1: 100, x2: 100, y2: unallocMax})
		f.Charts = append(f.Charts, lineChart{
			title: "Unallocated GPUs vs arrived GPU request (lower is better)", xLabel: "arrived GPU request, % of cluster GPUs", yLabel: "unallocated GPUs, %",
			xMin: unallocFrom, xMax: xMax, yMax: unallocMax, series: unalloc, guides: guides,
		}.svg())
	}
	f.Charts = append(f.Charts, lineChart{
		title: "GPU allocation vs arrived GPU request", xLabel: "arrived GPU request, % of cluster GPUs", yLabel: "allocated GPUs, %",
		xMax: xMax, yMax: 100, series: alloc,
		guides: []guide{{0, 0, 100, 100, "allocated = arrived", 55, 55}, {x1: 100, x2: 100, y2: 100}},
	}.svg())
	fragMax := 1.0
	for _, s := range frag {
		for _, v := range s.ys {
			fragMax = max(fragMax, v)
		}
	}
	f.Charts = append(f.Charts, lineChart{
		title: "GPU fragmentation vs arrived GPU request", xLabel: "arrived GPU request, % of cluster GPUs", yLabel: "fragmented GPUs, %",
		xMax: xMax, yMax: fragMax, series: frag, guides: []guide{{x1: 100, x2: 100, y2: fragMax}},
	}.svg())
	return f
}

// allocPcts are the allocation figures at AllocKeys, Missing where absent.
func allocPcts(m map[string]float64) []string {
	out := make([]string, len(AllocKeys))
	for i, k := range AllocKeys {
		out[i] = pct(m, k)
	}
	return out
}

// unallocFrom is where the unallocated-GPU chart starts, in % arrived.
const unallocFrom = 80

// FillHeadline is one sentence with the finding of a trace's fill-up runs: the
// unallocated GPUs at 100% arrived of each policy, best first, and the offline
// reference; "" when no policy reached 100%.
func FillHeadline(ss []Summary) string {
	var reached []Summary
	for _, s := range ss {
		if s.MeanUnallocatedPctAt100 != nil {
			reached = append(reached, s)
		}
	}
	if len(reached) == 0 {
		return ""
	}
	slices.SortStableFunc(reached, func(a, c Summary) int { return cmpOpt(a.MeanUnallocatedPctAt100, c.MeanUnallocatedPctAt100) })
	h := fmt.Sprintf("%s leaves %.1f%% of GPUs unallocated at 100%% arrived", reached[0].Policy, *reached[0].MeanUnallocatedPctAt100)
	var rest []string
	for _, s := range reached[1:] {
		rest = append(rest, fmt.Sprintf("%s %.1f%%", s.Policy, *s.MeanUnallocatedPctAt100))
	}
	if len(rest) > 0 {
		h += "; " + strings.Join(rest, ", ")
	}
	if off := offlineMean(ss); off > 0 {
		h += fmt.Sprintf(" (lower is better; an offline packing of the same arrivals leaves %.1f%%)", off)
	} else {
		h += " (lower is better)"
	}
	return h + "."
}

func replaySection(trace string, ss []Summary, results []Result, colors map[string]string) *htmlReplay {
	rs := &htmlReplay{Trace: trace, CensoredNote: censoredNote(ss), Savings: savingsSection(ss), Legend: legend(ss, colors)}
	best := slices.MaxFunc(ss, func(a, c Summary) int { return cmpFloat(a.Replay.MeanUtilPct, c.Replay.MeanUtilPct) })
	for _, s := range ss {
		r := s.Replay
		rs.Rows = append(rs.Rows, htmlReplayRow{Color: colors[s.Policy], Policy: s.Policy, Best: len(ss) > 1 && s.Policy == best.Policy,
			Runs: s.Runs, Alloc: pm(r.MeanAllocPct, r.StddevAllocPct, s.Runs), Util: pm(r.MeanUtilPct, r.StddevUtilPct, s.Runs),
			WaitMean: FormatSeconds(r.MeanWaitSeconds), WaitP95: FormatSeconds(r.P95WaitSeconds), Preemptions: r.MeanPreemptions,
			WaitP99: FormatSeconds(r.P99WaitSeconds), WaitMax: FormatSeconds(r.MaxWaitSeconds), WaitGPU: FormatSeconds(r.GPUWeightedMeanWaitSeconds),
			JCT: FormatSeconds(r.MeanJCTSeconds), LostGPUHours: r.MeanLostGPUHours, Starved: r.MaxJobsStarved, Wall: s.MeanWallSeconds})
	}
	var alloc, util, waits []series
	var done []guide
	tMax := 0.0
	for _, s := range ss {
		runs := runsOf(results, s)
		if at := allDone(runs); at > 0 {
			done = append(done, guide{x1: at, x2: at, y2: 100, label: s.Policy + ": all jobs done", lx: at, ly: 100 - 6*float64(len(done))})
		}
		grid, a, u, _ := meanTimeSeries(runs)
		if len(grid) > 0 {
			tMax = max(tMax, grid[len(grid)-1])
			alloc = append(alloc, series{name: s.Policy, color: colors[s.Policy], xs: grid, ys: a})
			util = append(util, series{name: s.Policy, color: colors[s.Policy], xs: grid, ys: u})
		}
		waits = append(waits, series{name: s.Policy, color: colors[s.Policy], ys: waitHistogram(runs)})
	}
	if len(alloc) > 0 {
		rs.Charts = append(rs.Charts,
			lineChart{title: "GPU allocation over time (mean over seeds)", xLabel: "time, hours", yLabel: "allocated GPUs, %",
				xMax: tMax, yMax: 100, step: true, series: alloc, guides: done}.svg(),
			lineChart{title: "Useful GPU utilisation over time (mean over seeds)", xLabel: "time, hours", yLabel: "GPUs doing work, %",
				xMax: tMax, yMax: 100, step: true, series: util, guides: done}.svg())
	}
	rs.Charts = append(rs.Charts, queueCharts(ss, results, colors)...)
	cats := make([]string, len(waitBins))
	for i, bin := range waitBins {
		cats[i] = bin.label
	}
	rs.Charts = append(rs.Charts, barChart{title: "Queue wait distribution (all seeds)", xLabel: "wait from arrival to start", yLabel: "jobs, %",
		categories: cats, series: waits}.svg())
	return rs
}

// runRows are the rows of the table of all runs.
func runRows(results []Result) []htmlRun {
	out := make([]htmlRun, len(results))
	for i, r := range results {
		row := htmlRun{Policy: r.Policy, Trace: r.Trace, Seed: r.Seed, AllocAt: allocPcts(r.AllocPctAt),
			Unallocated: opt(r.UnallocatedPctAt100), Frag: opt(r.FragPctAt90),
			MeanAlloc: Missing, Started: Missing, Preemptions: Missing, Starved: Missing, Wall: r.WallSeconds}
		if r.Replay != nil {
			row.MeanAlloc = fmt.Sprintf("%.2f", r.Replay.MeanAllocPct)
			row.Started = fmt.Sprint(len(r.Replay.WaitSeconds) - r.Replay.CensoredWaits)
			row.Preemptions, row.Starved = fmt.Sprint(r.Replay.Preemptions), fmt.Sprint(r.Replay.JobsStarved)
		}
		out[i] = row
	}
	return out
}

// queueCharts draws, per queue, the GPUs each policy's first run gives it against its
// deserved share and capability, and its pending jobs, over time.
func queueCharts(ss []Summary, results []Result, colors map[string]string) []svgChart {
	type line struct {
		policy string
		run    Result
	}
	var first []line
	for _, s := range ss {
		if runs := runsOf(results, s); len(runs) > 0 && len(runs[0].Replay.Queues) > 0 {
			first = append(first, line{s.Policy, runs[0]})
		}
	}
	if len(first) == 0 {
		return nil
	}
	var charts []svgChart
	for qi, q := range first[0].run.Replay.Queues {
		var alloc, pending []series
		tMax, aMax, pMax := 0.0, float64(max(q.CapabilityGPUs, q.DeservedGPUs, 1)), 1.0
		for _, l := range first {
			rp := l.run.Replay
			if qi >= len(rp.Queues) || rp.Queues[qi].Name != q.Name || len(rp.Times) == 0 {
				continue
			}
			qs := rp.Queues[qi]
			a := series{name: l.policy, color: colors[l.policy], xs: rp.Times, ys: qs.AllocGPUs}
			p := series{name: l.policy, color: colors[l.policy], xs: rp.Times}
			for i, n := range qs.PendingJobs {
				p.ys = append(p.ys, float64(n))
				pMax = max(pMax, float64(n))
				aMax = max(aMax, qs.AllocGPUs[i])
			}
			tMax = max(tMax, rp.Times[len(rp.Times)-1])
			alloc, pending = append(alloc, a), append(pending, p)
		}
		var guides []guide
		if q.DeservedGPUs > 0 {
			d := float64(q.DeservedGPUs)
			guides = append(guides, guide{0, d, tMax, d, "deserved", tMax, d})
		}
		if q.CapabilityGPUs > 0 {
			c := float64(q.CapabilityGPUs)
			guides = append(guides, guide{0, c, tMax, c, "capability", tMax, c})
		}
		seed := fmt.Sprintf("seed %d", first[0].run.Seed)
		charts = append(charts,
			lineChart{title: fmt.Sprintf("Queue %s: allocated GPUs (%s)", q.Name, seed), xLabel: "time, hours", yLabel: "GPUs",
				xMax: tMax, yMax: aMax * 1.1, step: true, series: alloc, guides: guides}.svg(),
			lineChart{title: fmt.Sprintf("Queue %s: pending jobs (%s)", q.Name, seed), xLabel: "time, hours", yLabel: "jobs",
				xMax: tMax, yMax: pMax * 1.1, step: true, series: pending}.svg())
	}
	return charts
}

// allDone is when the last of the runs had finished every job, in hours; 0 when a run
// left a job unfinished.
func allDone(runs []Result) float64 {
	var at float64
	for _, r := range runs {
		if r.Replay.AllDoneHours <= 0 {
			return 0
		}
		at = max(at, r.Replay.AllDoneHours)
	}
	return at
}

func runsOf(results []Result, s Summary) []Result {
	var out []Result
	for _, r := range results {
		if r.Policy == s.Policy && r.Trace == s.Trace && r.Replay != nil {
			out = append(out, r)
		}
	}
	return out
}

// meanTimeSeries resamples each run's allocation and node series onto a common grid
// from 0 to the shortest run's last sample (a sample holds until the next one) and
// averages them.
func meanTimeSeries(runs []Result) (grid, alloc, util, nodes []float64) {
	end := math.Inf(1)
	for _, r := range runs {
		if len(r.Replay.Times) == 0 {
			return nil, nil, nil, nil
		}
		end = min(end, r.Replay.Times[len(r.Replay.Times)-1])
	}
	if len(runs) == 0 || end <= 0 {
		return nil, nil, nil, nil
	}
	grid = make([]float64, timeGridSteps+1)
	alloc = make([]float64, len(grid))
	util = make([]float64, len(grid))
	nodes = make([]float64, len(grid))
	for i := range grid {
		grid[i] = end * float64(i) / timeGridSteps
	}
	for _, r := range runs {
		rp := r.Replay
		j := -1
		for i, t := range grid {
			for j+1 < len(rp.Times) && rp.Times[j+1] <= t+1e-12 {
				j++
			}
			if j < 0 {
				continue
			}
			if j < len(rp.AllocPct) {
				alloc[i] += rp.AllocPct[j] / float64(len(runs))
			}
			if j < len(rp.UtilPct) {
				util[i] += rp.UtilPct[j] / float64(len(runs))
			}
			if j < len(rp.Nodes) {
				nodes[i] += float64(rp.Nodes[j]) / float64(len(runs))
			}
		}
	}
	return grid, alloc, util, nodes
}

// waitHistogram returns the % of jobs (pooled over runs) in each wait bin.
func waitHistogram(runs []Result) []float64 {
	h := make([]float64, len(waitBins))
	n := 0
	for _, r := range runs {
		for _, w := range r.Replay.WaitSeconds {
			for i, bin := range waitBins {
				if w < bin.upTo {
					h[i]++
					break
				}
			}
			n++
		}
	}
	if n > 0 {
		for i := range h {
			h[i] = h[i] * 100 / float64(n)
		}
	}
	return h
}

// cmpOpt orders figures, a missing one last.
func cmpOpt(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmpFloat(*a, *b)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func traceNames(ss []Summary) []string {
	groups := byTrace(ss)
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.trace
	}
	return out
}
