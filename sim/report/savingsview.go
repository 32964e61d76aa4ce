package report

import (
	"fmt"
	"slices"
)

// savingsColumns head the autoscaling table, text and HTML alike.
var savingsColumns = []string{"scheduler", "autoscaler", "runs", "GPU-node-h", "saved %", "net saved %", "of ceiling %", "lost work %",
	"evicted/run (preempt / scale-down)", "wait mean", "wait p95", "mean JCT"}

// savingsRows are the autoscaling table's rows, one per arm.
func savingsRows(a *Autoscale) [][]string {
	var rows [][]string
	for _, arm := range a.Arms {
		rows = append(rows, []string{arm.Scheduler, arm.Autoscaler, fmt.Sprint(arm.Runs), fmt.Sprintf("%.1f", arm.GPUNodeHours),
			fmt.Sprintf("%.1f", arm.SavedPct), fmt.Sprintf("%.1f", arm.NetSavedPct), fmt.Sprintf("%.0f", arm.SavedOfCeilingPct),
			fmt.Sprintf("%.2f", arm.LostGPUHoursPct),
			fmt.Sprintf("%.0f (%.0f / %.0f)", arm.Evictions, arm.EvictionsByCause["preemption"], arm.EvictionsByCause["scale-down"]),
			FormatSeconds(arm.MeanWaitSeconds), FormatSeconds(arm.P95WaitSeconds), FormatSeconds(arm.MeanJCTSeconds)})
	}
	return rows
}

// ceilingNote states the two bounds under the table.
func ceilingNote(a *Autoscale) string {
	return fmt.Sprintf("ceiling: %.1f%% saved by re-packing the running pods onto the fewest nodes every 10 minutes (free migration); "+
		"%.1f%% with no migration (each pod placed first-fit as it starts, empty nodes off)", a.CeilingSavedPct, a.NoMigrationSavedPct)
}

// savingsKey is printed under the autoscaling table.
const savingsKey = "GPU-node-h: hours of GPU nodes paid for (present or booting) over the arrival window, mean per run; " +
	"saved %: against the same scheduler always on; net saved %: with the work evictions threw away (since each job's last checkpoint) charged as node-hours, on both sides; " +
	"of ceiling %: net saved over the ceiling's saving; lost work %: GPU-hours thrown away over GPU-hours of work done; " +
	"waits (to start and to restart after evictions) and JCT (arrival to completion): all runs pooled; " +
	"ca: Cluster Autoscaler's scale-down; karpenter: Karpenter's consolidation (WhenEmptyOrUnderutilized, delete only); " +
	"every autoscaler adds removed nodes back after the same boot delay; pods of jobs without checkpoints are marked safe-to-evict: \"false\" and do-not-disrupt, and every arm honours that"

// autoscaleOf is the trace's comparison, carried by each of its summaries.
func autoscaleOf(replay []Summary) *Autoscale {
	for _, s := range replay {
		if s.Autoscale != nil {
			return s.Autoscale
		}
	}
	return nil
}

// writeSavings writes the autoscaling table of a trace's replay runs, if autoscaled.
func writeSavings(l layout, replay []Summary) {
	a := autoscaleOf(replay)
	if a == nil || len(a.Arms) == 0 {
		return
	}
	l.note("autoscaling, against the same jobs on the always-on cluster:")
	l.table(append([][]string{savingsColumns}, savingsRows(a)...))
	l.note(ceilingNote(a))
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

// savingsSection is the autoscaling table and a chart of the GPU nodes paid for over
// time under every arm and the ceiling; nil when no run was autoscaled.
func savingsSection(replay []Summary) *htmlSavings {
	a := autoscaleOf(replay)
	if a == nil || len(a.Arms) == 0 {
		return nil
	}
	out := &htmlSavings{Columns: savingsColumns, Rows: savingsRows(a), Key: ceilingNote(a) + ". " + savingsKey}
	if c, ok := nodesChart(a); ok {
		out.Charts = append(out.Charts, c)
	}
	return out
}

// nodesChart draws the GPU nodes paid for over time, mean over seeds, for every arm
// (always on once) and the ceiling; false when no run has the figures.
func nodesChart(a *Autoscale) (htmlNodesChart, bool) {
	type line struct {
		name string
		runs []Result
	}
	var lines []line
	var ceiling []Result
	for i, arm := range a.Arms {
		if arm.Autoscaler == AlwaysOn && slices.ContainsFunc(a.Arms[:i], func(x Arm) bool { return x.Autoscaler == AlwaysOn }) {
			continue
		}
		var runs []Result
		for _, r := range arm.replays {
			runs = append(runs, Result{Replay: r})
			if arm.Autoscaler == AlwaysOn && len(ceiling) < len(arm.replays) {
				ceiling = append(ceiling, Result{Replay: &Replay{Times: r.Times, Nodes: r.CeilingNodes}})
			}
		}
		name := arm.Name()
		if arm.Autoscaler == AlwaysOn {
			name = AlwaysOn
		}
		lines = append(lines, line{name, runs})
	}
	if len(ceiling) > 0 && len(ceiling[0].Replay.Nodes) > 0 {
		lines = append(lines, line{"ceiling (re-packed)", ceiling})
	}
	var ss []series
	tMax, nMax := 0.0, 1.0
	for i, l := range lines {
		grid, _, _, n := meanTimeSeries(l.runs)
		if len(grid) == 0 {
			continue
		}
		tMax = max(tMax, grid[len(grid)-1])
		for _, v := range n {
			nMax = max(nMax, v)
		}
		ss = append(ss, series{name: l.name, color: palette[i%len(palette)], xs: grid, ys: n})
	}
	if len(ss) == 0 {
		return htmlNodesChart{}, false
	}
	c := htmlNodesChart{Chart: lineChart{title: "GPU nodes paid for over time (mean over seeds)", xLabel: "time, hours", yLabel: "GPU nodes",
		xMax: tMax, yMax: nMax * 1.1, step: true, series: ss}.svg()}
	for _, s := range ss {
		c.Legend = append(c.Legend, htmlLegend{s.color, s.name})
	}
	return c, true
}
