package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteTable writes an aligned terminal table per trace, one row per policy: for
// fill-up runs the unallocated % at 100% arrived (and the published figure of the FGD
// paper's simulator where the runs carry one), allocation % at 50/90/100/130% arrived,
// fragmentation % at 90% arrived (mean ± sample stddev across seeds) and the mean wall
// time; for replay runs the mean GPU allocation, mean, p95, p99 and longest queue wait,
// preemptions per run, the worst run's starved jobs and the wall time, then the tail:
// GPU-weighted mean wait, the worst run's jobs that waited over 6 and 12 hours, job
// completion times and lost GPU-hours, and the waits per queue and job class. Fill-up runs of several
// traces end with one table of unallocated % at 100% arrived, a row per trace and a
// column per policy. summaries may be nil, then they are computed from results.
func WriteTable(w io.Writer, results []Result, summaries []Summary) error {
	ew := &errWriter{w: w}
	writeTables(textLayout{ew}, results, summaries)
	return ew.err
}

// WriteMarkdown writes the tables of WriteTable as GitHub-flavoured markdown: each
// table a pipe table, the sentences around them paragraphs, the lowest unallocated %
// of each trace in bold in the table across traces, and the traces' own tables folded
// in a <details> element when that table is there. The output ends with one newline.
func WriteMarkdown(w io.Writer, results []Result, summaries []Summary) error {
	var b strings.Builder
	writeTables(&markdownLayout{b: &b}, results, summaries)
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// layout is where writeTables puts its tables: aligned terminal columns or markdown.
type layout interface {
	// title names a section: a trace and mode, or a table across traces.
	title(s string)
	// note is a sentence before or after a table.
	note(s string)
	// table writes rows, the header first.
	table(rows [][]string)
	// gap separates the sections of two traces.
	gap()
	// fold starts (summary != "") or ends (summary == "") a part a reader may skip.
	fold(summary string)
	// strong marks a table cell as the row's best.
	strong(cell string) string
}

// textLayout is WriteTable's layout.
type textLayout struct{ w io.Writer }

func (l textLayout) title(s string)            { fmt.Fprintf(l.w, "%s\n", s) }
func (l textLayout) note(s string)             { fmt.Fprintf(l.w, "%s\n", s) }
func (l textLayout) table(rows [][]string)     { writeAligned(l.w, rows) }
func (l textLayout) gap()                      { io.WriteString(l.w, "\n") }
func (l textLayout) fold(string)               {}
func (l textLayout) strong(cell string) string { return cell }

// markdownLayout is WriteMarkdown's layout.
type markdownLayout struct{ b *strings.Builder }

func (l *markdownLayout) title(s string) { fmt.Fprintf(l.b, "**%s**\n\n", s) }
func (l *markdownLayout) note(s string)  { fmt.Fprintf(l.b, "%s\n\n", s) }
func (l *markdownLayout) gap()           {}
func (l *markdownLayout) strong(cell string) string {
	if cell == "" || cell == Missing {
		return cell
	}
	return "**" + cell + "**"
}

func (l *markdownLayout) fold(summary string) {
	if summary == "" {
		l.b.WriteString("</details>\n\n")
		return
	}
	fmt.Fprintf(l.b, "<details><summary>%s</summary>\n\n", html.EscapeString(summary))
}

// table writes a pipe table: the first column left-aligned, the others right-aligned,
// as the terminal table aligns them; a | inside a cell is escaped.
func (l *markdownLayout) table(rows [][]string) {
	if len(rows) == 0 {
		return
	}
	line := func(cells []string) {
		for _, c := range cells {
			l.b.WriteString("| " + strings.ReplaceAll(c, "|", `\|`) + " ")
		}
		l.b.WriteString("|\n")
	}
	line(rows[0])
	for i := range rows[0] {
		if i == 0 {
			l.b.WriteString("|---")
		} else {
			l.b.WriteString("|---:")
		}
	}
	l.b.WriteString("|\n")
	for _, r := range rows[1:] {
		line(r)
	}
	l.b.WriteString("\n")
}

// writeTables lays out the tables of WriteTable and WriteMarkdown.
func writeTables(l layout, results []Result, summaries []Summary) {
	if summaries == nil {
		summaries = Summarize(results)
	}
	groups := byTrace(summaries)
	across := acrossTraces(groups)
	if across != nil {
		l.fold("Each trace: every column")
	}
	for i, g := range groups {
		tr, fill, replay := g.trace, g.fill, g.replay
		if i > 0 {
			l.gap()
		}
		if len(fill) > 0 {
			l.title(fmt.Sprintf("%s — fill-up, %s", tr, runsNote(fill)))
			if h := FillHeadline(fill); h != "" {
				l.note(h)
			}
			published := slices.ContainsFunc(fill, func(s Summary) bool { return s.PublishedUnallocatedPctAt100 != nil })
			head := []string{"policy", "runs", "unalloc% @100", "alloc% @50", "@90", "@100", "@130", "frag% @90", "wall s"}
			if published {
				head = slices.Insert(head, 3, "published @100")
			}
			rows := [][]string{head}
			for _, s := range fill {
				row := []string{s.Policy, fmt.Sprint(s.Runs),
					pmOpt(s.MeanUnallocatedPctAt100, s.StddevUnallocatedPctAt100, s.Runs),
					pct(s.MeanAllocPctAt, "50"), pct(s.MeanAllocPctAt, "90"), pct(s.MeanAllocPctAt, "100"), pct(s.MeanAllocPctAt, "130"),
					pmOpt(s.MeanFragPctAt90, s.StddevFragPctAt90, s.Runs), fmt.Sprintf("%.2f", s.MeanWallSeconds)}
				if published {
					row = slices.Insert(row, 3, opt(s.PublishedUnallocatedPctAt100))
				}
				rows = append(rows, row)
			}
			l.table(rows)
			l.note(fillKey)
			if published {
				l.note(publishedKey)
			}
			if note := offlineNote(fill); note != "" {
				l.note(note)
			}
		}
		if len(replay) > 0 {
			l.title(fmt.Sprintf("%s — replay, %s", tr, runsNote(replay)))
			rows := [][]string{{"policy", "runs", "mean alloc%", "mean util%", "wait mean", "wait p95", "wait p99", "wait max", "preemptions/run", "starved", "wall s"}}
			for _, s := range replay {
				r := s.Replay
				rows = append(rows, []string{s.Policy, fmt.Sprint(s.Runs),
					pm(r.MeanAllocPct, r.StddevAllocPct, s.Runs), pm(r.MeanUtilPct, r.StddevUtilPct, s.Runs),
					FormatSeconds(r.MeanWaitSeconds), FormatSeconds(r.P95WaitSeconds), FormatSeconds(r.P99WaitSeconds), FormatSeconds(r.MaxWaitSeconds),
					fmt.Sprintf("%.0f", r.MeanPreemptions), fmt.Sprint(r.MaxJobsStarved), fmt.Sprintf("%.2f", s.MeanWallSeconds)})
			}
			l.table(rows)
			l.note(replayKey)
			if note := censoredNote(replay); note != "" {
				l.note(note)
			}
			writeTail(l, replay)
			writeGroupWaits(l, replay)
			writeSavings(l, replay)
			writeRightSizing(l, replay)
		}
	}
	if across != nil {
		l.fold("")
		l.gap()
		writeAcross(l, groups)
	}
}

// acrossTraces is the fill-up groups of traces when there are two or more, which
// then get a table across traces; nil otherwise.
func acrossTraces(groups []traceGroup) []traceGroup {
	var fill []traceGroup
	for _, g := range groups {
		if len(g.fill) > 0 {
			fill = append(fill, g)
		}
	}
	if len(fill) < 2 {
		return nil
	}
	return fill
}

// writeAcross writes the unallocated % at 100% arrived of every fill-up trace, a row
// per trace and a column per policy (in the order policies first appear), the
// published figure in brackets where the runs carry one, the row's lowest marked, and
// the offline reference last.
func writeAcross(l layout, groups []traceGroup) {
	fill := acrossTraces(groups)
	var policies []string
	var runs []Summary
	published := false
	for _, g := range fill {
		for _, s := range g.fill {
			if !slices.Contains(policies, s.Policy) {
				policies = append(policies, s.Policy)
			}
			published = published || s.PublishedUnallocatedPctAt100 != nil
		}
		runs = append(runs, g.fill...)
	}
	l.title(fmt.Sprintf("unalloc%% @100 by trace: GPUs unallocated at 100%% arrived, %%, mean over %s (lower is better)", runsNote(runs)))
	rows := [][]string{append(append([]string{"trace"}, policies...), "offline reference")}
	for _, g := range fill {
		row := []string{g.trace}
		best := -1
		for _, p := range policies {
			i := slices.IndexFunc(g.fill, func(s Summary) bool { return s.Policy == p })
			if i < 0 || g.fill[i].MeanUnallocatedPctAt100 == nil {
				row = append(row, Missing)
				continue
			}
			s := g.fill[i]
			cell := fmt.Sprintf("%.2f", *s.MeanUnallocatedPctAt100)
			if s.PublishedUnallocatedPctAt100 != nil {
				cell += fmt.Sprintf(" (%.2f)", *s.PublishedUnallocatedPctAt100)
			}
			if best < 0 || *s.MeanUnallocatedPctAt100 < *g.fill[best].MeanUnallocatedPctAt100 {
				best = i
			}
			row = append(row, cell)
		}
		if best >= 0 && len(policies) > 1 {
			c := 1 + slices.Index(policies, g.fill[best].Policy)
			row[c] = l.strong(row[c])
		}
		off := Missing
		if v := offlineMean(g.fill); v > 0 {
			off = fmt.Sprintf("%.2f", v)
		}
		rows = append(rows, append(row, off))
	}
	if published {
		l.note(acrossPublishedKey)
	}
	l.table(rows)
}

// writeAligned writes rows as columns two spaces apart, the first column
// left-aligned and the others right-aligned (widths in runes).
func writeAligned(w io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
		io.WriteString(w, b.String())
	}
}

// traces returns the distinct traces of the summaries in first-seen order.
// traceGroup is the summaries of one trace, split into fill-up and replay runs.
type traceGroup struct {
	trace        string
	fill, replay []Summary
}

// byTrace groups summaries by trace, in the order traces first appear.
func byTrace(summaries []Summary) []traceGroup {
	var out []traceGroup
	index := map[string]int{}
	for _, s := range summaries {
		i, ok := index[s.Trace]
		if !ok {
			i = len(out)
			index[s.Trace] = i
			out = append(out, traceGroup{trace: s.Trace})
		}
		if s.Replay != nil {
			out[i].replay = append(out[i].replay, s)
		} else {
			out[i].fill = append(out[i].fill, s)
		}
	}
	return out
}

// offlineMean is the offline reference of a trace's fill-up runs, 0 when none.
func offlineMean(fill []Summary) float64 {
	for _, s := range fill {
		if s.MeanOfflineUnallocatedPctAt100 > 0 {
			return s.MeanOfflineUnallocatedPctAt100
		}
	}
	return 0
}

// offlineNote describes the offline reference of a trace's fill-up runs, or is empty
// when they carry none. Every policy sees the same arrivals per seed, so the first
// summary with a reference speaks for all.
func offlineNote(fill []Summary) string {
	for _, s := range fill {
		if s.MeanOfflineUnallocatedPctAt100 > 0 {
			return fmt.Sprintf("offline reference: %s%% of GPUs unallocated at 100%% arrived (the same arrivals known in advance: GPU shares packed first-fit decreasing, pods held to the GPU models they accept)",
				pm(s.MeanOfflineUnallocatedPctAt100, s.StddevOfflineUnallocatedPctAt100, s.Runs))
		}
	}
	return ""
}

// Keys printed under the tables.
const (
	fillKey = "alloc% @N: GPUs allocated when the arrived GPU request reached N% of the cluster's GPUs; " +
		"unalloc% @100 = 100 - alloc% @100, lower is better; frag% @90: fragmented GPUs at 90% arrived; – : not reached"
	publishedKey = "published @100: unalloc% @100 published for the FGD paper's simulator on this pod list, " +
		"mean of seeds 42-51 at --arrive 1.3 (sim/traces/fgd)"
	acrossPublishedKey = "in brackets: the figure published for the FGD paper's simulator on that pod list, " +
		"mean of seeds 42-51 at --arrive 1.3 (sim/traces/fgd)"
	replayKey = "alloc%: GPUs held; util%: GPUs doing useful work (whole gangs, slices as their share); " +
		"waits (to start and to restart after evictions): all runs pooled; " +
		"starved: jobs of the worst run that never started or waited over 12h"
	tailKey = "GPU-weighted wait: each job's wait weighted by the GPUs it asks for (a 32-GPU gang counts 32 times); " +
		"waited >6h, >12h: jobs of the worst run, those still waiting at the end included; " +
		"JCT: arrival to completion (waits, runs and work lost to evictions), a job not done counting to the end of the run; " +
		"lost GPU-h: work evictions threw away since each job's last checkpoint, mean per run"
)

// censoredNote says which policies' waits include jobs that never started, or is
// empty when every job started.
func censoredNote(replay []Summary) string {
	var parts []string
	for _, s := range replay {
		if n := s.Replay.CensoredWaits; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s.Policy, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "jobs that never started (all runs): " + strings.Join(parts, ", ") + "; their waits count up to the end of the run, so wait figures are lower bounds"
}

func runsNote(ss []Summary) string {
	lo, hi := ss[0].Runs, ss[0].Runs
	for _, s := range ss {
		lo, hi = min(lo, s.Runs), max(hi, s.Runs)
	}
	unit := func(n int) string {
		if n == 1 {
			return "1 seed"
		}
		return fmt.Sprintf("%d seeds", n)
	}
	if lo == hi {
		return unit(lo)
	}
	return fmt.Sprintf("%d-%s", lo, unit(hi))
}

// pm formats mean ± stddev, or just the mean for a single run.
func pm(mean, sd float64, runs int) string {
	if runs < 2 {
		return fmt.Sprintf("%.2f", mean)
	}
	return fmt.Sprintf("%.2f ± %.2f", mean, sd)
}

// Missing is how tables show a figure a run did not reach.
const Missing = "–"

// pmOpt is pm, or Missing for a figure some run lacks.
func pmOpt(mean, sd *float64, runs int) string {
	if mean == nil {
		return Missing
	}
	return pm(*mean, *sd, runs)
}

// opt formats a figure with two decimals, or Missing.
func opt(v *float64) string {
	if v == nil {
		return Missing
	}
	return fmt.Sprintf("%.2f", *v)
}

func pct(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return Missing
	}
	return fmt.Sprintf("%.2f", v)
}

// FormatSeconds renders a duration in seconds compactly: "42s", "12m05s", "3h07m".
func FormatSeconds(s float64) string {
	if math.IsNaN(s) || s < 0 {
		return "-"
	}
	d := time.Duration(math.Round(s)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// errWriter remembers the first write error so callers can check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// writeTail writes, per policy, what the means hide: the GPU-weighted mean wait, the
// jobs of the worst run that waited over 6 and 12 hours, job completion times and the
// work evictions threw away.
func writeTail(l layout, replay []Summary) {
	rows := [][]string{{"policy", "GPU-weighted wait", "waited >6h", ">12h", "JCT mean", "JCT p95", "JCT p99", "lost GPU-h/run"}}
	for _, s := range replay {
		r := s.Replay
		rows = append(rows, []string{s.Policy, FormatSeconds(r.GPUWeightedMeanWaitSeconds),
			fmt.Sprint(r.JobsWaitedOver6h), fmt.Sprint(r.JobsWaitedOver12h),
			FormatSeconds(r.MeanJCTSeconds), FormatSeconds(r.P95JCTSeconds), FormatSeconds(r.P99JCTSeconds),
			fmt.Sprintf("%.1f", r.MeanLostGPUHours)})
	}
	l.note("tail and completion, all runs pooled:")
	l.table(rows)
	l.note(tailKey)
}

// writeGroupWaits writes the wait distribution per queue and per job class, one row
// per policy and group, when the runs know queues or classes.
func writeGroupWaits(l layout, replay []Summary) {
	rows := [][]string{{"policy", "waits of", "jobs", "mean", "p50", "p95", "p99", "max", "GPU-weighted", "JCT mean", "JCT p95"}}
	for _, s := range replay {
		for _, g := range s.Replay.Waits {
			rows = append(rows, []string{s.Policy, g.By + " " + g.Name, fmt.Sprint(g.Jobs), FormatSeconds(g.MeanSeconds),
				FormatSeconds(g.P50Seconds), FormatSeconds(g.P95Seconds), FormatSeconds(g.P99Seconds), FormatSeconds(g.MaxSeconds),
				FormatSeconds(g.GPUWeightedMeanSeconds), FormatSeconds(g.MeanJCTSeconds), FormatSeconds(g.P95JCTSeconds)})
		}
	}
	if len(rows) > 1 {
		l.note("waits by queue and job class, all runs pooled:")
		l.table(rows)
	}
}
