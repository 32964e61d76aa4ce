package report

import (
	"cmp"
	"maps"
	"slices"
)

// AlwaysOn names the arm whose nodes are never removed: the bill's baseline.
const AlwaysOn = "always-on"

// Autoscale compares, on the same jobs, ways of running a cluster's GPU nodes: each
// scheduler with the autoscalers its users pair it with, against always on, with the
// ceiling of what any autoscaler could save. Every figure is a mean per run, waits
// and completion times pooled over every job of the runs.
type Autoscale struct {
	// CeilingSavedPct is the saving of a perfect re-packer: at each sample, the pods
	// running (always on) re-packed first-fit-decreasing onto the fewest nodes
	// (per-node CPU, memory and GPU slices), every pod free to move at no cost.
	CeilingSavedPct float64 `json:"ceiling_saved_pct"`
	// NoMigrationSavedPct is the saving when each pod, as it starts, goes first-fit
	// onto the nodes in a fixed order and never moves, a node being paid while it holds
	// a pod: what removing empty nodes alone could save.
	NoMigrationSavedPct float64 `json:"no_migration_saved_pct"`
	Arms                []Arm   `json:"arms"`
}

// Arm is one scheduler with one autoscaler (AlwaysOn: none).
type Arm struct {
	Scheduler  string `json:"scheduler"`
	Autoscaler string `json:"autoscaler"`
	Runs       int    `json:"runs"`
	// GPUNodeHours is the GPU nodes paid for (present or booting) over the window.
	GPUNodeHours float64 `json:"gpu_node_hours"`
	// SavedPct is the node-hours saved against the same scheduler always on.
	SavedPct float64 `json:"saved_pct"`
	// NetSavedPct charges the work evictions threw away as node-hours (lost GPU-hours
	// over the GPUs of a node), on this arm and on always on alike.
	NetSavedPct float64 `json:"net_saved_pct"`
	// SavedOfCeilingPct is NetSavedPct as a share of the ceiling's saving.
	SavedOfCeilingPct float64 `json:"saved_of_ceiling_pct"`
	// LostGPUHoursPct is the work thrown away as a share of the work done.
	LostGPUHoursPct float64 `json:"lost_gpu_hours_pct"`
	// Evictions is the pods evicted per run, ByCause the same split by cause.
	Evictions        float64            `json:"evictions"`
	EvictionsByCause map[string]float64 `json:"evictions_by_cause"`
	MeanWaitSeconds  float64            `json:"mean_wait_seconds"`
	P95WaitSeconds   float64            `json:"p95_wait_seconds"`
	MeanJCTSeconds   float64            `json:"mean_jct_seconds"`
	// replays are the arm's runs, for the charts.
	replays []*Replay
}

// Name is "scheduler+autoscaler".
func (a *Arm) Name() string { return a.Scheduler + "+" + a.Autoscaler }

// Arm returns the arm of scheduler with autoscaler, nil when not run.
func (s *Autoscale) Arm(scheduler, autoscaler string) *Arm {
	for i := range s.Arms {
		if s.Arms[i].Scheduler == scheduler && s.Arms[i].Autoscaler == autoscaler {
			return &s.Arms[i]
		}
	}
	return nil
}

// newAutoscale pools the autoscaled runs among rs (those with Autoscaled replays),
// arm by arm, in the order the schedulers first appear and, for each, the order of
// its autoscalers (always on first). nil when no run was autoscaled.
func newAutoscale(rs []Result) *Autoscale {
	type key struct{ scheduler, autoscaler string }
	var order []key
	runs := map[key][]*Replay{}
	for _, r := range rs {
		for _, name := range autoscalerOrder(r.Autoscaled) {
			k := key{r.Policy, name}
			if _, ok := runs[k]; !ok {
				order = append(order, k)
			}
			runs[k] = append(runs[k], r.Autoscaled[name])
		}
	}
	if len(order) == 0 {
		return nil
	}
	out := &Autoscale{}
	// The ceiling is the same jobs' whatever schedules them: taken from Tessera's
	// always-on runs when there are some, else from the first scheduler's.
	ceilingFrom := order[0].scheduler
	if _, ok := runs[key{"tessera", AlwaysOn}]; ok {
		ceilingFrom = "tessera"
	}
	if on := runs[key{ceilingFrom, AlwaysOn}]; len(on) > 0 {
		hours := meanOf(on, func(r *Replay) float64 { return r.GPUNodeHours })
		out.CeilingSavedPct = savedPct(meanOf(on, func(r *Replay) float64 { return r.CeilingNodeHours }), hours)
		out.NoMigrationSavedPct = savedPct(meanOf(on, func(r *Replay) float64 { return r.NoMigrationNodeHours }), hours)
	}
	for _, k := range order {
		arm := Arm{Scheduler: k.scheduler, Autoscaler: k.autoscaler, Runs: len(runs[k]), replays: runs[k]}
		arm.measure(runs[key{k.scheduler, AlwaysOn}])
		if out.CeilingSavedPct > 0 {
			arm.SavedOfCeilingPct = 100 * arm.NetSavedPct / out.CeilingSavedPct
		}
		out.Arms = append(out.Arms, arm)
	}
	return out
}

// autoscalerOrder is always on first, then the others by name.
func autoscalerOrder(m map[string]*Replay) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(-cmp.Compare(boolInt(a == AlwaysOn), boolInt(b == AlwaysOn)), cmp.Compare(a, b))
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// measure fills the arm's figures from its runs against the same scheduler's
// always-on runs (on; savings are 0 without them).
func (a *Arm) measure(on []*Replay) {
	rs := a.replays
	a.GPUNodeHours = meanOf(rs, func(r *Replay) float64 { return r.GPUNodeHours })
	lostNodeHours := func(r *Replay) float64 { return r.LostGPUHours / max(r.GPUsPerNode, 1) }
	if len(on) > 0 {
		base := meanOf(on, func(r *Replay) float64 { return r.GPUNodeHours })
		a.SavedPct = savedPct(a.GPUNodeHours, base)
		a.NetSavedPct = savedPct(a.GPUNodeHours+meanOf(rs, lostNodeHours), base+meanOf(on, lostNodeHours))
	}
	if work := meanOf(rs, func(r *Replay) float64 { return r.WorkGPUHours }); work > 0 {
		a.LostGPUHoursPct = 100 * meanOf(rs, func(r *Replay) float64 { return r.LostGPUHours }) / work
	}
	a.EvictionsByCause = map[string]float64{}
	var waits, jcts []float64
	for _, r := range rs {
		for cause, n := range r.Evictions {
			a.EvictionsByCause[cause] += float64(n) / float64(len(rs))
			a.Evictions += float64(n) / float64(len(rs))
		}
		waits = append(waits, r.WaitSeconds...)
		jcts = append(jcts, r.JCTSeconds...)
	}
	a.MeanWaitSeconds, _ = MeanStddev(waits)
	a.P95WaitSeconds = Percentile(waits, 95)
	a.MeanJCTSeconds, _ = MeanStddev(jcts)
}

func meanOf(rs []*Replay, f func(*Replay) float64) float64 {
	var sum float64
	for _, r := range rs {
		sum += f(r)
	}
	return sum / float64(max(len(rs), 1))
}

func savedPct(hours, alwaysOn float64) float64 {
	if alwaysOn <= 0 {
		return 0
	}
	return 100 * (1 - hours/alwaysOn)
}

// autoscaleByTrace pools, per trace, the autoscaled runs of every policy into one
// comparison, which each of the trace's summaries carries.
func autoscaleByTrace(results []Result, out []Summary) {
	byTrace := map[string][]Result{}
	for _, r := range results {
		if r.Autoscaled != nil {
			byTrace[r.Trace] = append(byTrace[r.Trace], r)
		}
	}
	pooled := map[string]*Autoscale{}
	for trace, rs := range byTrace {
		pooled[trace] = newAutoscale(rs)
	}
	for i := range out {
		out[i].Autoscale = pooled[out[i].Trace]
	}
}
