package report

import (
	"maps"
	"math"
	"slices"
)

// Arrived percentages at which fill-up results report allocation (the keys of
// Result.AllocPctAt).
var AllocKeys = []string{"50", "90", "100", "130"}

// Result is one simulation run: one policy, one seed, one trace.
type Result struct {
	Policy string `json:"policy"`
	Seed   int64  `json:"seed"`
	// Trace names the input: a pod list file's base name or a scenario name.
	Trace string `json:"trace"`
	// AllocPctAt is the allocation % of cluster GPUs when the arrived GPU request
	// reached 50, 90, 100 and 130 % of cluster capacity (fill-up mode).
	AllocPctAt map[string]float64 `json:"alloc_pct_at"`
	// UnallocatedPctAt100 is 100 - AllocPctAt["100"]; nil (JSON null) when the run
	// did not reach 100% arrived, and for replay runs.
	UnallocatedPctAt100 *float64 `json:"unallocated_pct_at_100"`
	// FragPctAt90 is the fragmented GPU milli (FGD definition) as % of cluster GPUs at
	// 90% arrived; nil when the run did not reach it, and for replay runs.
	FragPctAt90 *float64 `json:"frag_pct_at_90"`
	WallSeconds float64  `json:"wall_seconds"`
	// OfflineUnallocatedPctAt100 is the unallocated % at 100% arrived of an offline
	// packing of the same arrivals (fill-up mode): the reference a policy is measured
	// against.
	OfflineUnallocatedPctAt100 float64 `json:"offline_unallocated_pct_at_100,omitempty"`
	// PublishedUnallocatedPctAt100 is the figure published for the FGD paper's
	// simulator on the same pod list and policy (mean of its seeds 42-51), when the
	// simulator knows one; nil otherwise.
	PublishedUnallocatedPctAt100 *float64 `json:"published_unallocated_pct_at_100,omitempty"`
	// Curve is the run's allocation and fragmentation against arrived request (fill-up
	// mode), in order of ArrivedPct; it feeds the HTML charts and is not in the JSON.
	Curve []Point `json:"-"`
	// Replay holds the replay-mode measurements; nil for fill-up runs.
	Replay *Replay `json:"replay,omitempty"`
	// Autoscaled, for an autoscaled replay, holds the same jobs' replays under each
	// autoscaler paired with the policy, by autoscaler (AlwaysOn is Replay itself).
	Autoscaled map[string]*Replay `json:"-"`
	// Autoscale compares this run's autoscalers (the policy's arms only).
	Autoscale *Autoscale `json:"autoscale,omitempty"`
	// RightSizing is the run's right-sizing arm, measured under the policy's first
	// autoscaler; nil unless right-sizing arms ran.
	RightSizing *RightSizingRun `json:"rightsizing,omitempty"`
}

// Point is one sample of a fill-up run: arrived GPU request, allocated GPUs and
// fragmented GPUs, each in % of cluster GPU capacity.
type Point struct {
	ArrivedPct float64
	AllocPct   float64
	FragPct    float64
}

// Replay is what a replay-mode run measures over time. Times, AllocPct, Nodes (and
// UtilPct, IdleNodes when set) are parallel series, one entry per sample.
type Replay struct {
	// Times are the sample times in hours since the start of the trace.
	Times []float64 `json:"times_hours"`
	// AllocPct is the allocated % of the cluster's GPUs (every node of the input) at
	// each time.
	AllocPct []float64 `json:"alloc_pct"`
	// UtilPct is the GPU utilisation % where the trace knows it; empty otherwise.
	UtilPct []float64 `json:"util_pct,omitempty"`
	// Nodes is the number of GPU nodes paid for (present or booting) at each time.
	Nodes []int `json:"nodes"`
	// IdleNodes is the number of nodes running no pod at each time; empty if not recorded.
	IdleNodes []int `json:"idle_nodes,omitempty"`
	// WaitSeconds has one entry per job: the time it waited, to start and to restart
	// after each eviction; for a job that never started, arrival to the end of the run
	// (a censored wait).
	WaitSeconds []float64 `json:"wait_seconds"`
	// WaitQueues and WaitClasses, parallel to WaitSeconds, name each job's queue and
	// class ("" when the input has none).
	WaitQueues  []string `json:"wait_queues,omitempty"`
	WaitClasses []string `json:"wait_classes,omitempty"`
	// WaitGPUs, parallel to WaitSeconds, is the GPUs each job asks for (all of its
	// tasks; a memory slice as its share of the cluster's largest GPU), the weight of
	// its wait in the GPU-weighted mean.
	WaitGPUs []float64 `json:"wait_gpus,omitempty"`
	// CensoredWaits counts the jobs that never started, whose waits are lower bounds.
	CensoredWaits int `json:"censored_waits"`
	Preemptions   int `json:"preemptions"`
	// JobsStarved counts jobs that never started, or waited beyond the driver's starvation limit.
	JobsStarved int `json:"jobs_starved"`
	// MeanAllocPct is the time-weighted mean of AllocPct over the run.
	MeanAllocPct float64 `json:"mean_alloc_pct"`
	// MeanUtilPct is the time-weighted mean of UtilPct: GPU share doing useful work
	// (held by jobs that can run, counting a memory slice as its share of the GPU).
	MeanUtilPct float64 `json:"mean_util_pct"`
	// Queues are per-queue series, parallel to Times; empty when the input has no queues.
	Queues []QueueSeries `json:"queues,omitempty"`
	// AllDoneHours is when every job had finished, in hours; 0 when some never did.
	AllDoneHours float64 `json:"all_done_hours,omitempty"`
	// NodesRemoved is set when autoscaling is on.
	NodesRemoved int `json:"nodes_removed,omitempty"`
	// GPUNodeHours are the hours of the GPU nodes paid for (present or booting),
	// summed over the window means are taken over; Autoscale reports them.
	GPUNodeHours float64 `json:"gpu_node_hours"`
	// GPUsPerNode is the input's GPUs per node, to charge lost GPU-hours as node-hours.
	GPUsPerNode float64 `json:"-"`
	// CeilingNodes is, at each sample, the fewest nodes that hold the pods running then
	// re-packed first-fit-decreasing; CeilingNodeHours integrates it over the window
	// (measured in the runs of --autoscale only, Replay.Bounds).
	CeilingNodes     []int   `json:"ceiling_nodes,omitempty"`
	CeilingNodeHours float64 `json:"ceiling_node_hours,omitempty"`
	// NoMigrationNodeHours integrates the nodes holding a pod when each pod, as it
	// starts, goes first-fit onto the nodes in a fixed order and never moves.
	NoMigrationNodeHours float64 `json:"no_migration_node_hours,omitempty"`
	// ScaleDownEvictions counts the pods evicted from nodes the autoscaler removed.
	ScaleDownEvictions int `json:"scale_down_evictions,omitempty"`
	// Evictions counts the pods evicted, by cause (preemption, scale-down).
	Evictions map[string]int `json:"evictions,omitempty"`
	// LostGPUHours is the GPU-hours of work that evictions threw away: what jobs had
	// done since their last checkpoint (all of it for jobs without checkpoints). It is
	// not counted as useful utilisation.
	LostGPUHours float64 `json:"lost_gpu_hours"`
	// WorkGPUHours is the GPU-hours of work the jobs that completed needed.
	WorkGPUHours float64 `json:"work_gpu_hours"`
	// JCTSeconds has one entry per job, parallel to WaitSeconds: arrival to completion,
	// so its waits, its runs and the work evictions threw away, which it ran again; for
	// a job not done at the end of the run, arrival to the end (censored).
	JCTSeconds []float64 `json:"jct_seconds"`
	// Estimates compares the scheduler's runtime estimates with the true runtimes.
	Estimates RuntimeEstimates `json:"runtime_estimates"`
	// RightSizing is set when the replay ran a right-sizing arm (in the JSON as the
	// result's rightsizing, of the autoscaled replay).
	RightSizing *RightSizingRun `json:"-"`
}

// QueueSeries is one queue of a replay over time: what it holds against what it
// deserves and may hold, and how many of its jobs wait.
type QueueSeries struct {
	Name           string    `json:"name"`
	DeservedGPUs   int64     `json:"deserved_gpus,omitempty"`
	CapabilityGPUs int64     `json:"capability_gpus,omitempty"`
	AllocGPUs      []float64 `json:"alloc_gpus"`
	PendingJobs    []int     `json:"pending_jobs"`
}

// Summary aggregates the runs of one policy on one trace across seeds: means and
// sample standard deviations (0 for a single run). A figure that some run lacks (a
// point it did not reach) is nil, JSON null.
type Summary struct {
	Policy                    string   `json:"policy"`
	Trace                     string   `json:"trace"`
	Runs                      int      `json:"runs"`
	MeanUnallocatedPctAt100   *float64 `json:"mean_unallocated_pct_at_100"`
	StddevUnallocatedPctAt100 *float64 `json:"stddev_unallocated_pct_at_100"`
	// MeanAllocPctAt averages Result.AllocPctAt key by key, over keys every run has.
	MeanAllocPctAt    map[string]float64 `json:"mean_alloc_pct_at"`
	MeanFragPctAt90   *float64           `json:"mean_frag_pct_at_90"`
	StddevFragPctAt90 *float64           `json:"stddev_frag_pct_at_90"`
	MeanWallSeconds   float64            `json:"mean_wall_seconds"`
	// MeanOfflineUnallocatedPctAt100 averages Result.OfflineUnallocatedPctAt100.
	MeanOfflineUnallocatedPctAt100   float64 `json:"mean_offline_unallocated_pct_at_100,omitempty"`
	StddevOfflineUnallocatedPctAt100 float64 `json:"stddev_offline_unallocated_pct_at_100,omitempty"`
	// PublishedUnallocatedPctAt100 is the runs' Result.PublishedUnallocatedPctAt100
	// when they all carry the same one; nil otherwise.
	PublishedUnallocatedPctAt100 *float64 `json:"published_unallocated_pct_at_100,omitempty"`
	// Curve is the mean of the runs' binned curves (BinCurve) at each whole arrived
	// percent they all reach; not in the JSON.
	Curve []Point `json:"-"`
	// Replay aggregates the replay measurements; nil unless every run has them.
	Replay *ReplaySummary `json:"replay,omitempty"`
	// Autoscale compares, for an autoscaled replay, every scheduler with the
	// autoscalers paired with it on this trace, all policies of the run together (the
	// same in each summary of the trace); nil when not autoscaled.
	Autoscale *Autoscale `json:"autoscale,omitempty"`
	// RightSizing compares the right-sizing arms of the trace (the same in each
	// summary of the trace); nil when none ran.
	RightSizing *RightSizing `json:"rightsizing,omitempty"`
}

// ReplaySummary aggregates replay runs.
type ReplaySummary struct {
	MeanAllocPct   float64 `json:"mean_alloc_pct"`
	StddevAllocPct float64 `json:"stddev_alloc_pct"`
	MeanUtilPct    float64 `json:"mean_util_pct"`
	StddevUtilPct  float64 `json:"stddev_util_pct"`
	// Wait statistics pool the waits of all runs, censored ones included.
	MeanWaitSeconds float64 `json:"mean_wait_seconds"`
	P95WaitSeconds  float64 `json:"p95_wait_seconds"`
	P99WaitSeconds  float64 `json:"p99_wait_seconds"`
	MaxWaitSeconds  float64 `json:"max_wait_seconds"`
	// GPUWeightedMeanWaitSeconds weighs each job's wait by the GPUs it asks for: a
	// 32-GPU gang counts 32 times, a quarter-GPU slice a quarter.
	GPUWeightedMeanWaitSeconds float64 `json:"gpu_weighted_mean_wait_seconds"`
	// JobsWaitedOver6h and JobsWaitedOver12h are the worst run's count of jobs whose
	// wait exceeded 6 and 12 hours, jobs still waiting at the end of the run included.
	JobsWaitedOver6h  int `json:"jobs_waited_over_6h"`
	JobsWaitedOver12h int `json:"jobs_waited_over_12h"`
	// Job completion times (arrival to completion: waits, runs and the work evictions
	// threw away) pool the jobs of all runs; a job not done counts up to the end of its
	// run.
	MeanJCTSeconds float64 `json:"mean_jct_seconds"`
	P95JCTSeconds  float64 `json:"p95_jct_seconds"`
	P99JCTSeconds  float64 `json:"p99_jct_seconds"`
	// MeanLostGPUHours is the GPU-hours of work evictions threw away, mean per run.
	MeanLostGPUHours float64 `json:"lost_gpu_hours"`
	// CensoredWaits is the runs' total of jobs that never started.
	CensoredWaits int `json:"censored_waits"`
	// MeanPreemptions is per run; MaxJobsStarved is the worst run's count.
	MeanPreemptions float64 `json:"mean_preemptions"`
	MaxJobsStarved  int     `json:"max_jobs_starved"`
	// Waits is the wait distribution per queue, then per job class, pooled over the
	// runs, censored waits included: a mean over all jobs hides who waits.
	Waits []GroupWaits `json:"waits,omitempty"`
}

// GroupWaits is the wait distribution of the jobs of one queue or one class.
type GroupWaits struct {
	// By is "queue" or "class"; Name the queue or class.
	By          string  `json:"by"`
	Name        string  `json:"name"`
	Jobs        int     `json:"jobs"`
	MeanSeconds float64 `json:"mean_seconds"`
	P50Seconds  float64 `json:"p50_seconds"`
	P95Seconds  float64 `json:"p95_seconds"`
	P99Seconds  float64 `json:"p99_seconds"`
	MaxSeconds  float64 `json:"max_seconds"`
	// GPUWeightedMeanSeconds weighs each job's wait by the GPUs it asks for.
	GPUWeightedMeanSeconds float64 `json:"gpu_weighted_mean_seconds"`
	// MeanJCTSeconds and P95JCTSeconds are the group's job completion times.
	MeanJCTSeconds float64 `json:"mean_jct_seconds"`
	P95JCTSeconds  float64 `json:"p95_jct_seconds"`
}

// jobFigures are the per-job figures of runs pooled: waits, the GPUs weighing them
// and completion times.
type jobFigures struct{ waits, gpus, jcts []float64 }

// add appends job i of r.
func (f *jobFigures) add(r *Replay, i int) {
	f.waits = append(f.waits, r.WaitSeconds[i])
	f.gpus = append(f.gpus, at(r.WaitGPUs, i))
	if i < len(r.JCTSeconds) {
		f.jcts = append(f.jcts, r.JCTSeconds[i])
	}
}

// at is v[i], or 0 past its end.
func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// WeightedMean is the mean of v weighted by w (parallel to v); 0 when the weights sum
// to 0.
func WeightedMean(v, w []float64) float64 {
	var sum, weight float64
	for i, x := range v {
		if i < len(w) {
			sum += x * w[i]
			weight += w[i]
		}
	}
	if weight == 0 {
		return 0
	}
	return sum / weight
}

// groupWaits splits the runs' waits by queue and by class, in name order.
func groupWaits(rs []Result) []GroupWaits {
	var out []GroupWaits
	for _, by := range []string{"queue", "class"} {
		groups := map[string]*jobFigures{}
		for _, r := range rs {
			names := r.Replay.WaitQueues
			if by == "class" {
				names = r.Replay.WaitClasses
			}
			for i, name := range names {
				if name != "" && i < len(r.Replay.WaitSeconds) {
					if groups[name] == nil {
						groups[name] = &jobFigures{}
					}
					groups[name].add(r.Replay, i)
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(groups)) {
			g := groups[name]
			w := g.waits
			mean, _ := MeanStddev(w)
			jct, _ := MeanStddev(g.jcts)
			out = append(out, GroupWaits{By: by, Name: name, Jobs: len(w), MeanSeconds: mean,
				P50Seconds: Percentile(w, 50), P95Seconds: Percentile(w, 95), P99Seconds: Percentile(w, 99), MaxSeconds: slices.Max(w),
				GPUWeightedMeanSeconds: WeightedMean(w, g.gpus), MeanJCTSeconds: jct, P95JCTSeconds: Percentile(g.jcts, 95)})
		}
	}
	return out
}

// Summarize groups results by (policy, trace), in the order each pair first appears,
// and computes means and sample standard deviations across the group's runs.
func Summarize(results []Result) []Summary {
	type key struct{ policy, trace string }
	var order []key
	groups := map[key][]Result{}
	for _, r := range results {
		k := key{r.Policy, r.Trace}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		out = append(out, summarizeGroup(k.policy, k.trace, groups[k]))
	}
	autoscaleByTrace(results, out)
	rightSizingByTrace(results, out)
	return out
}

func summarizeGroup(policy, trace string, rs []Result) Summary {
	s := Summary{Policy: policy, Trace: trace, Runs: len(rs)}
	pick := func(f func(Result) float64) []float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return v
	}
	s.MeanUnallocatedPctAt100, s.StddevUnallocatedPctAt100 = meanStddevAll(rs, func(r Result) *float64 { return r.UnallocatedPctAt100 })
	s.MeanFragPctAt90, s.StddevFragPctAt90 = meanStddevAll(rs, func(r Result) *float64 { return r.FragPctAt90 })
	s.MeanWallSeconds, _ = MeanStddev(pick(func(r Result) float64 { return r.WallSeconds }))
	s.MeanOfflineUnallocatedPctAt100, s.StddevOfflineUnallocatedPctAt100 = MeanStddev(pick(func(r Result) float64 { return r.OfflineUnallocatedPctAt100 }))
	s.PublishedUnallocatedPctAt100 = samePublished(rs)
	s.MeanAllocPctAt = map[string]float64{}
	for _, k := range AllocKeys {
		if m, _ := meanStddevAll(rs, func(r Result) *float64 {
			if v, ok := r.AllocPctAt[k]; ok {
				return &v
			}
			return nil
		}); m != nil {
			s.MeanAllocPctAt[k] = *m
		}
	}
	s.Curve = meanCurve(rs)
	if !slices.ContainsFunc(rs, func(r Result) bool { return r.Replay == nil }) {
		rep := &ReplaySummary{}
		var all jobFigures
		for _, r := range rs {
			for i := range r.Replay.WaitSeconds {
				all.add(r.Replay, i)
			}
			rep.CensoredWaits += r.Replay.CensoredWaits
			rep.MeanPreemptions += float64(r.Replay.Preemptions) / float64(len(rs))
			rep.MaxJobsStarved = max(rep.MaxJobsStarved, r.Replay.JobsStarved)
			rep.JobsWaitedOver6h = max(rep.JobsWaitedOver6h, countOver(r.Replay.WaitSeconds, 6*3600))
			rep.JobsWaitedOver12h = max(rep.JobsWaitedOver12h, countOver(r.Replay.WaitSeconds, 12*3600))
		}
		waits := all.waits
		rep.MeanAllocPct, rep.StddevAllocPct = MeanStddev(pick(func(r Result) float64 { return r.Replay.MeanAllocPct }))
		rep.MeanUtilPct, rep.StddevUtilPct = MeanStddev(pick(func(r Result) float64 { return r.Replay.MeanUtilPct }))
		rep.MeanWaitSeconds, _ = MeanStddev(waits)
		rep.P95WaitSeconds = Percentile(waits, 95)
		rep.P99WaitSeconds = Percentile(waits, 99)
		if len(waits) > 0 {
			rep.MaxWaitSeconds = slices.Max(waits)
		}
		rep.GPUWeightedMeanWaitSeconds = WeightedMean(waits, all.gpus)
		rep.MeanJCTSeconds, _ = MeanStddev(all.jcts)
		rep.P95JCTSeconds = Percentile(all.jcts, 95)
		rep.P99JCTSeconds = Percentile(all.jcts, 99)
		rep.MeanLostGPUHours, _ = MeanStddev(pick(func(r Result) float64 { return r.Replay.LostGPUHours }))
		rep.Waits = groupWaits(rs)
		s.Replay = rep
	}
	return s
}

// countOver counts the values above limit.
func countOver(v []float64, limit float64) int {
	n := 0
	for _, x := range v {
		if x > limit {
			n++
		}
	}
	return n
}

// samePublished is the published figure every run carries, or nil when some run
// carries none or another.
func samePublished(rs []Result) *float64 {
	var v *float64
	for i, r := range rs {
		p := r.PublishedUnallocatedPctAt100
		if p == nil || (i > 0 && *p != *v) {
			return nil
		}
		v = p
	}
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// meanStddevAll is MeanStddev of a figure every run has, or nil, nil when one lacks it.
func meanStddevAll(rs []Result, f func(Result) *float64) (mean, stddev *float64) {
	v := make([]float64, 0, len(rs))
	for _, r := range rs {
		p := f(r)
		if p == nil {
			return nil, nil
		}
		v = append(v, *p)
	}
	if len(v) == 0 {
		return nil, nil
	}
	m, sd := MeanStddev(v)
	return &m, &sd
}

// MeanStddev returns the mean and the sample standard deviation (n-1 in the
// denominator) of v; the deviation is 0 for fewer than two values, both are 0 for none.
func MeanStddev(v []float64) (mean, stddev float64) {
	if len(v) == 0 {
		return 0, 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// Percentile returns the p-th percentile (0..100) of v by linear interpolation
// between closest ranks; 0 for an empty slice. v is not modified.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// meanCurve bins each run's curve (BinCurve) and averages the runs at each whole
// arrived percent that every run has.
func meanCurve(rs []Result) []Point {
	sum := map[int]Point{}
	count := map[int]int{}
	top := math.MaxInt
	for _, r := range rs {
		b := BinCurve(r.Curve)
		if len(b) == 0 {
			return nil
		}
		top = min(top, int(b[len(b)-1].ArrivedPct))
		for _, p := range b {
			k := int(p.ArrivedPct)
			s := sum[k]
			s.AllocPct += p.AllocPct
			s.FragPct += p.FragPct
			sum[k] = s
			count[k]++
		}
	}
	var out []Point
	for k := 0; k <= top; k++ {
		if count[k] == len(rs) {
			s := sum[k]
			out = append(out, Point{ArrivedPct: float64(k), AllocPct: s.AllocPct / float64(len(rs)), FragPct: s.FragPct / float64(len(rs))})
		}
	}
	return out
}
