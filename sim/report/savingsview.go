package report

import (
	"fmt"
	"io"
	"strings"
)

// savingsColumns head the autoscaling table, text and HTML alike.
var savingsColumns = []string{"policy", "runs", "GPU-node-h always on", "tessera GPU-node-h", "saved %", "wait always on", "wait tessera", "wait change %",
	"evicted/run", "CA-like saved %", "CA-like wait", "CA-like evicted/run", "saved vs CA-like"}

// savingsRows are the autoscaling table's rows, one per policy whose runs were autoscaled.
func savingsRows(replay []Summary) [][]string {
	var rows [][]string
	for _, s := range replay {
		v := s.Savings
		if v == nil {
			continue
		}
		ratio := Missing
		if r := v.SavedRatio(); r > 0 {
			ratio = fmt.Sprintf("%.2f×", r)
		}
		rows = append(rows, []string{s.Policy, fmt.Sprint(s.Runs), fmt.Sprintf("%.1f", v.GPUNodeHoursAlwaysOn), fmt.Sprintf("%.1f", v.GPUNodeHours),
			fmt.Sprintf("%.1f", v.SavedPct), FormatSeconds(v.MeanWaitSecondsAlwaysOn), FormatSeconds(v.MeanWaitSeconds), fmt.Sprintf("%+.1f", v.WaitChangePct()),
			fmt.Sprintf("%.0f", v.ScaleDownEvictions), fmt.Sprintf("%.1f", v.CALike.SavedPct), FormatSeconds(v.CALike.MeanWaitSeconds),
			fmt.Sprintf("%.0f", v.CALike.ScaleDownEvictions), ratio})
	}
	return rows
}

// savingsKey is printed under the autoscaling table.
const savingsKey = "GPU-node-h: hours of GPU nodes paid for (present or booting) over the arrival window, mean per run; " +
	"saved %: fewer than always on; waits: mean, all runs pooled; evicted: pods evicted from removed nodes (they resume from their last checkpoint); CA-like: a Cluster-Autoscaler-like rule with the same scale-up and boot delay; " +
	"saved vs CA-like: tessera's saved % over CA-like's"

// writeSavings writes the autoscaling table of a trace's replay runs, if autoscaled.
func writeSavings(w io.Writer, replay []Summary) {
	rows := savingsRows(replay)
	if len(rows) == 0 {
		return
	}
	io.WriteString(w, "autoscaling, against the same jobs on the always-on cluster:\n")
	writeAligned(w, append([][]string{savingsColumns}, rows...))
	io.WriteString(w, savingsKey+"\n")
}

// savingsHTML writes the autoscaling table and, per policy, its GPU nodes over time
// always on, under Tessera's autoscaler and under the CA-like rule.
func savingsHTML(b *strings.Builder, replay []Summary, results []Result) {
	rows := savingsRows(replay)
	if len(rows) == 0 {
		return
	}
	b.WriteString("<h3>Autoscaling</h3>\n<table><thead><tr>")
	for _, c := range savingsColumns {
		fmt.Fprintf(b, "<th>%s</th>", esc(c))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(b, "<td>%s</td>", esc(c))
		}
		b.WriteString("</tr>\n")
	}
	fmt.Fprintf(b, "</tbody></table>\n<p class=\"note\">%s</p>\n", esc(savingsKey))
	b.WriteString(`<div class="charts">`)
	for _, s := range replay {
		if s.Savings != nil {
			nodesChart(b, s.Policy, runsOf(results, s))
		}
	}
	b.WriteString("</div>\n")
}

// nodesChart draws a policy's GPU nodes over time, mean over seeds, for the three
// ways of running the cluster.
func nodesChart(b *strings.Builder, policy string, runs []Result) {
	lines := []struct {
		name, color string
		pick        func(Result) *Replay
	}{
		{"always on", palette[9], func(r Result) *Replay { return r.Savings.AlwaysOn }},
		{"tessera autoscaler", palette[0], func(r Result) *Replay { return r.Replay }},
		{"CA-like", palette[1], func(r Result) *Replay { return r.Savings.CALikeReplay }},
	}
	var ss []series
	tMax, nMax := 0.0, 1.0
	for _, l := range lines {
		var picked []Result
		for _, r := range runs {
			if r.Savings != nil && l.pick(r) != nil {
				picked = append(picked, Result{Replay: l.pick(r)})
			}
		}
		grid, _, _, n := meanTimeSeries(picked)
		if len(grid) == 0 {
			continue
		}
		tMax = max(tMax, grid[len(grid)-1])
		for _, v := range n {
			nMax = max(nMax, v)
		}
		ss = append(ss, series{name: l.name, color: l.color, xs: grid, ys: n})
	}
	if len(ss) == 0 {
		return
	}
	b.WriteString(`<div>`)
	b.WriteString(`<div class="legend">`)
	for _, s := range ss {
		fmt.Fprintf(b, `<span><i style="background:%s"></i>%s</span>`, s.color, esc(s.name))
	}
	b.WriteString("</div>")
	lineChart{title: fmt.Sprintf("GPU nodes paid for over time, %s (mean over seeds)", policy), xLabel: "time, hours", yLabel: "GPU nodes",
		xMax: tMax, yMax: nMax * 1.1, step: true, series: ss}.render(b)
	b.WriteString("</div>")
}
