package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteTable writes an aligned terminal table per trace, one row per policy: for
// fill-up runs the unallocated % at 100% arrived, allocation % at 50/90/100/130%
// arrived, fragmentation % at 90% arrived (mean ± sample stddev across seeds) and the
// mean wall time; for replay runs the mean GPU allocation, mean and p95 queue wait,
// preemptions per run, the worst run's starved jobs and the wall time. summaries
// may be nil, then they are computed from results.
func WriteTable(w io.Writer, results []Result, summaries []Summary) error {
	if summaries == nil {
		summaries = Summarize(results)
	}
	ew := &errWriter{w: w}
	for i, g := range byTrace(summaries) {
		tr, fill, replay := g.trace, g.fill, g.replay
		if i > 0 {
			ew.printf("\n")
		}
		if len(fill) > 0 {
			ew.printf("%s — fill-up, %s\n", tr, runsNote(fill))
			if h := FillHeadline(fill); h != "" {
				ew.printf("%s\n", h)
			}
			rows := [][]string{{"policy", "runs", "unalloc% @100", "alloc% @50", "@90", "@100", "@130", "frag% @90", "wall s"}}
			for _, s := range fill {
				rows = append(rows, []string{s.Policy, fmt.Sprint(s.Runs),
					pmOpt(s.MeanUnallocatedPctAt100, s.StddevUnallocatedPctAt100, s.Runs),
					pct(s.MeanAllocPctAt, "50"), pct(s.MeanAllocPctAt, "90"), pct(s.MeanAllocPctAt, "100"), pct(s.MeanAllocPctAt, "130"),
					pmOpt(s.MeanFragPctAt90, s.StddevFragPctAt90, s.Runs), fmt.Sprintf("%.2f", s.MeanWallSeconds)})
			}
			writeAligned(ew, rows)
			ew.printf("%s\n", fillKey)
			if note := offlineNote(fill); note != "" {
				ew.printf("%s\n", note)
			}
		}
		if len(replay) > 0 {
			ew.printf("%s — replay, %s\n", tr, runsNote(replay))
			rows := [][]string{{"policy", "runs", "mean alloc%", "mean util%", "wait mean", "wait p95", "preemptions/run", "starved", "wall s"}}
			for _, s := range replay {
				r := s.Replay
				rows = append(rows, []string{s.Policy, fmt.Sprint(s.Runs),
					pm(r.MeanAllocPct, r.StddevAllocPct, s.Runs), pm(r.MeanUtilPct, r.StddevUtilPct, s.Runs),
					FormatSeconds(r.MeanWaitSeconds), FormatSeconds(r.P95WaitSeconds),
					fmt.Sprintf("%.0f", r.MeanPreemptions), fmt.Sprint(r.MaxJobsStarved), fmt.Sprintf("%.2f", s.MeanWallSeconds)})
			}
			writeAligned(ew, rows)
			ew.printf("%s\n", replayKey)
			if note := censoredNote(replay); note != "" {
				ew.printf("%s\n", note)
			}
			writeGroupWaits(ew, replay)
			writeSavings(ew, replay)
		}
	}
	return ew.err
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
	replayKey = "alloc%: GPUs held; util%: GPUs doing useful work (whole gangs, slices as their share); " +
		"starved: jobs of the worst run that never started or waited over 12h"
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

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// writeGroupWaits writes the wait distribution per queue and per job class, one row
// per policy and group, when the runs know queues or classes.
func writeGroupWaits(w io.Writer, replay []Summary) {
	rows := [][]string{{"policy", "waits of", "jobs", "mean", "p50", "p95", "max"}}
	for _, s := range replay {
		for _, g := range s.Replay.Waits {
			rows = append(rows, []string{s.Policy, g.By + " " + g.Name, fmt.Sprint(g.Jobs), FormatSeconds(g.MeanSeconds),
				FormatSeconds(g.P50Seconds), FormatSeconds(g.P95Seconds), FormatSeconds(g.MaxSeconds)})
		}
	}
	if len(rows) > 1 {
		io.WriteString(w, "waits by queue and job class, all runs pooled:\n")
		writeAligned(w, rows)
	}
}
