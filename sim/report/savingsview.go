package report

import "fmt"

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
func writeSavings(l layout, replay []Summary) {
	rows := savingsRows(replay)
	if len(rows) == 0 {
		return
	}
	l.note("autoscaling, against the same jobs on the always-on cluster:")
	l.table(append([][]string{savingsColumns}, rows...))
	l.note(savingsKey)
}

// htmlSavings is the autoscaling part of a replay section.
type htmlSavings struct {
	Columns []string
	Rows    [][]string
	Key     string
	Charts  []htmlNodesChart
}

// htmlNodesChart is a chart with a legend of its own.
type htmlNodesChart struct {
	Legend []htmlLegend
	Chart  svgChart
}

// savingsSection is the autoscaling table and, per policy, its GPU nodes over time
// always on, under Tessera's autoscaler and under the CA-like rule; nil when no run
// was autoscaled.
func savingsSection(replay []Summary, results []Result) *htmlSavings {
	rows := savingsRows(replay)
	if len(rows) == 0 {
		return nil
	}
	out := &htmlSavings{Columns: savingsColumns, Rows: rows, Key: savingsKey}
	for _, s := range replay {
		if s.Savings != nil {
			if c, ok := nodesChart(s.Policy, runsOf(results, s)); ok {
				out.Charts = append(out.Charts, c)
			}
		}
	}
	return out
}

// nodesChart draws a policy's GPU nodes over time, mean over seeds, for the three
// ways of running the cluster; false when no run has the figures.
func nodesChart(policy string, runs []Result) (htmlNodesChart, bool) {
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
		return htmlNodesChart{}, false
	}
	c := htmlNodesChart{Chart: lineChart{title: fmt.Sprintf("GPU nodes paid for over time, %s (mean over seeds)", policy), xLabel: "time, hours", yLabel: "GPU nodes",
		xMax: tMax, yMax: nMax * 1.1, step: true, series: ss}.svg()}
	for _, s := range ss {
		c.Legend = append(c.Legend, htmlLegend{s.color, s.name})
	}
	return c, true
}
