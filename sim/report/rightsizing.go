package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RightSizingRun is what one replay of a right-sizing arm measured, over the whole
// run (until every job finished or the run ended), not only the arrival window.
type RightSizingRun struct {
	// Arm is the policy and the arm, "tessera/rightsized".
	Arm string `json:"arm"`
	// GPUHours integrates the GPUs with anything on them: a GPU holding one slice or
	// more counts whole, as the GPUs the cluster must keep for the work.
	GPUHours float64 `json:"gpu_hours"`
	// AllocGPUHours integrates the GPU shares allocated (a slice as its share of the
	// GPU's memory).
	AllocGPUHours float64 `json:"alloc_gpu_hours"`
	// NodeHours integrates the GPU nodes paid for (present or booting).
	NodeHours float64 `json:"node_hours"`
	// Jobs counts the jobs; SizedJobs those of one GPU or a slice, which the arm sizes.
	Jobs      int `json:"jobs"`
	SizedJobs int `json:"sized_jobs"`
	// WholeJobs counts the sized jobs that first asked for a whole GPU: all of them in
	// the whole-GPU arm; with the recommender, those of workloads without a
	// recommendation yet (fewer finished runs than it needs) or with none to give.
	WholeJobs int `json:"whole_jobs"`
	// OOMRestarts counts the runs that ran out of GPU memory and restarted;
	// OOMLostGPUHours is the work they threw away (since their last checkpoint, at
	// their slice's share); OOMWaitSeconds sums their waits to restart.
	OOMRestarts     int     `json:"oom_restarts"`
	OOMLostGPUHours float64 `json:"oom_lost_gpu_hours"`
	OOMWaitSeconds  float64 `json:"oom_wait_seconds"`
	// IdleGPUHours is the GPU share-hours of the jobs' idle stretches (utilisation at
	// or below the threshold for longer than idleFor), held or returned.
	IdleGPUHours float64 `json:"idle_gpu_hours"`
	// Reclaims counts the suspensions of idle jobs; ReturnedGPUHours the share-hours
	// they gave back; ReclaimLostGPUHours the work thrown away (since the last
	// checkpoint); ResumeWaitSeconds sums the waits to resume once busy again.
	Reclaims            int     `json:"reclaims"`
	ReturnedGPUHours    float64 `json:"returned_gpu_hours"`
	ReclaimLostGPUHours float64 `json:"reclaim_lost_gpu_hours"`
	ResumeWaitSeconds   float64 `json:"resume_wait_seconds"`
	// PressureEvictions counts the runs GPU-memory pressure evicted (burstable arm);
	// PressureLostGPUHours is the work they threw away (since their last checkpoint);
	// PressureWaitSeconds sums their waits to restart.
	PressureEvictions    int     `json:"pressure_evictions,omitempty"`
	PressureLostGPUHours float64 `json:"pressure_lost_gpu_hours,omitempty"`
	PressureWaitSeconds  float64 `json:"pressure_wait_seconds,omitempty"`
	// Unfinished counts the jobs not done at the end of the run.
	Unfinished int `json:"unfinished"`
	// Waits are the jobs' waits (to start and to restart) by class.
	Waits []ClassWait `json:"waits,omitempty"`
}

// ClassWait is the waits of one class of jobs: how many jobs, their waits' sum or,
// pooled, mean.
type ClassWait struct {
	Class       string  `json:"class"`
	Jobs        int     `json:"jobs"`
	Seconds     float64 `json:"seconds,omitempty"`
	MeanSeconds float64 `json:"mean_seconds"`
}

// WaitsByClass sums the waits (parallel to their classes) by class, in class order.
func WaitsByClass(classes []string, waits []float64) []ClassWait {
	var p classWaits
	for i, c := range classes {
		p.add(c, 1, waits[i])
	}
	return p.list()
}

// classWaits sums waits by class.
type classWaits map[string]*ClassWait

func (p *classWaits) add(class string, jobs int, seconds float64) {
	if *p == nil {
		*p = classWaits{}
	}
	w := (*p)[class]
	if w == nil {
		w = &ClassWait{Class: class}
		(*p)[class] = w
	}
	w.Jobs += jobs
	w.Seconds += seconds
}

// list is the classes in order, with their mean waits.
func (p classWaits) list() []ClassWait {
	out := make([]ClassWait, 0, len(p))
	for _, w := range p {
		out = append(out, ClassWait{Class: w.Class, Jobs: w.Jobs, Seconds: w.Seconds, MeanSeconds: ratio(w.Seconds, float64(w.Jobs))})
	}
	slices.SortFunc(out, func(a, b ClassWait) int { return strings.Compare(a.Class, b.Class) })
	return out
}

// RightSizing compares right-sizing arms on one trace, each arm pooled over its runs:
// hours are means per run, shares are ratios of the runs' totals.
type RightSizing struct {
	Arms []RightSizingArm `json:"arms"`
}

// RightSizingArm is one arm of RightSizing.
type RightSizingArm struct {
	Arm           string  `json:"arm"`
	Runs          int     `json:"runs"`
	GPUHours      float64 `json:"gpu_hours"`
	AllocGPUHours float64 `json:"alloc_gpu_hours"`
	NodeHours     float64 `json:"node_hours"`
	// SavingVsWhole is 1 - GPUHours / the whole-GPU arm's; ShareOfPerfectSaving is the
	// saving over the perfect-knowledge arm's saving. Nil without those arms.
	SavingVsWhole        *float64 `json:"saving_vs_whole,omitempty"`
	ShareOfPerfectSaving *float64 `json:"share_of_perfect_saving,omitempty"`
	// NodeSavingVsWhole is 1 - NodeHours / the whole-GPU arm's.
	NodeSavingVsWhole *float64 `json:"node_saving_vs_whole,omitempty"`
	Jobs              int      `json:"jobs"`
	SizedJobs         int      `json:"sized_jobs"`
	// WholeJobShare is the sized jobs that first asked for a whole GPU, over sized jobs.
	WholeJobShare float64 `json:"whole_job_share"`
	OOMRestarts   int     `json:"oom_restarts"`
	// OOMRestartShare is OOM restarts over sized jobs.
	OOMRestartShare float64 `json:"oom_restart_share"`
	LostGPUHours    float64 `json:"lost_gpu_hours"`
	// LostShare is the work OOM restarts threw away over AllocGPUHours.
	LostShare          float64 `json:"lost_share"`
	MeanOOMWaitSeconds float64 `json:"mean_oom_wait_seconds"`
	IdleGPUHours       float64 `json:"idle_gpu_hours"`
	Reclaims           int     `json:"reclaims"`
	ReturnedGPUHours   float64 `json:"returned_gpu_hours"`
	// IdleReturnedShare is ReturnedGPUHours over IdleGPUHours.
	IdleReturnedShare float64 `json:"idle_returned_share"`
	// ReclaimLostShare is the work reclaims threw away over AllocGPUHours.
	ReclaimLostShare      float64 `json:"reclaim_lost_share"`
	MeanResumeWaitSeconds float64 `json:"mean_resume_wait_seconds"`
	Unfinished            int     `json:"unfinished"`
	// PressureEvictions counts the runs GPU-memory pressure evicted;
	// PressureEvictionShare is that over jobs; PressureLostShare the work they threw
	// away over AllocGPUHours; MeanPressureWaitSeconds their mean wait to restart.
	PressureEvictions       int     `json:"pressure_evictions"`
	PressureEvictionShare   float64 `json:"pressure_eviction_share"`
	PressureLostShare       float64 `json:"pressure_lost_share"`
	MeanPressureWaitSeconds float64 `json:"mean_pressure_wait_seconds"`
	// MeanWaitSeconds is the jobs' mean wait, and Waits the mean by class.
	MeanWaitSeconds float64     `json:"mean_wait_seconds"`
	Waits           []ClassWait `json:"waits,omitempty"`
}

// Right-sizing arms whose names the comparison looks for (the part after the policy).
const (
	ArmWhole   = "whole"
	ArmPerfect = "perfect"
)

// rightSizingByTrace pools the right-sizing runs of each trace and sets them on every
// summary of the trace.
func rightSizingByTrace(results []Result, out []Summary) {
	byTrace := map[string][]*RightSizingRun{}
	for _, r := range results {
		if r.RightSizing == nil {
			continue
		}
		// The arm under its profile's first autoscaler, then under the others.
		byTrace[r.Trace] = append(byTrace[r.Trace], r.RightSizing)
		for _, rule := range slices.Sorted(maps.Keys(r.Autoscaled)) {
			if rs := r.Autoscaled[rule].RightSizing; rule != AlwaysOn && rs != nil && rs != r.RightSizing {
				byTrace[r.Trace] = append(byTrace[r.Trace], rs)
			}
		}
	}
	pooled := map[string]*RightSizing{}
	for trace, rs := range byTrace {
		pooled[trace] = newRightSizing(rs)
	}
	for i := range out {
		out[i].RightSizing = pooled[out[i].Trace]
	}
}

func newRightSizing(rs []*RightSizingRun) *RightSizing {
	var order []string
	runs := map[string][]*RightSizingRun{}
	for _, r := range rs {
		a := r.Arm
		if runs[a] == nil {
			order = append(order, a)
		}
		runs[a] = append(runs[a], r)
	}
	out := &RightSizing{}
	for _, name := range order {
		out.Arms = append(out.Arms, poolArm(name, runs[name]))
	}
	for i := range out.Arms {
		a := &out.Arms[i]
		base, _, _ := strings.Cut(a.Arm, "/")
		whole, perfect := out.find(base+"/"+ArmWhole), out.find(base+"/"+ArmPerfect)
		if whole == nil || whole.GPUHours <= 0 {
			continue
		}
		saving := 1 - a.GPUHours/whole.GPUHours
		nodes := 1 - a.NodeHours/whole.NodeHours
		a.SavingVsWhole, a.NodeSavingVsWhole = &saving, &nodes
		if perfect != nil && perfect.GPUHours < whole.GPUHours {
			share := (whole.GPUHours - a.GPUHours) / (whole.GPUHours - perfect.GPUHours)
			a.ShareOfPerfectSaving = &share
		}
	}
	return out
}

func (s *RightSizing) find(arm string) *RightSizingArm {
	for i := range s.Arms {
		if s.Arms[i].Arm == arm {
			return &s.Arms[i]
		}
	}
	return nil
}

// poolArm sums the runs of one arm and takes means and shares.
func poolArm(name string, runs []*RightSizingRun) RightSizingArm {
	a := RightSizingArm{Arm: name, Runs: len(runs)}
	var oomWait, resumeWait, reclaimLost, whole, pressureLost, pressureWait float64
	for _, r := range runs {
		a.PressureEvictions += r.PressureEvictions
		pressureLost += r.PressureLostGPUHours
		pressureWait += r.PressureWaitSeconds
		a.GPUHours += r.GPUHours
		a.AllocGPUHours += r.AllocGPUHours
		a.NodeHours += r.NodeHours
		a.Jobs += r.Jobs
		a.SizedJobs += r.SizedJobs
		whole += float64(r.WholeJobs)
		a.OOMRestarts += r.OOMRestarts
		a.LostGPUHours += r.OOMLostGPUHours
		oomWait += r.OOMWaitSeconds
		a.IdleGPUHours += r.IdleGPUHours
		a.Reclaims += r.Reclaims
		a.ReturnedGPUHours += r.ReturnedGPUHours
		reclaimLost += r.ReclaimLostGPUHours
		resumeWait += r.ResumeWaitSeconds
		a.Unfinished += r.Unfinished
	}
	a.OOMRestartShare = ratio(float64(a.OOMRestarts), float64(a.SizedJobs))
	a.WholeJobShare = ratio(whole, float64(a.SizedJobs))
	a.LostShare = ratio(a.LostGPUHours, a.AllocGPUHours)
	a.MeanOOMWaitSeconds = ratio(oomWait, float64(a.OOMRestarts))
	a.IdleReturnedShare = ratio(a.ReturnedGPUHours, a.IdleGPUHours)
	a.ReclaimLostShare = ratio(reclaimLost, a.AllocGPUHours)
	a.MeanResumeWaitSeconds = ratio(resumeWait, float64(a.Reclaims))
	a.PressureEvictionShare = ratio(float64(a.PressureEvictions), float64(a.Jobs))
	a.PressureLostShare = ratio(pressureLost, a.AllocGPUHours)
	a.MeanPressureWaitSeconds = ratio(pressureWait, float64(a.PressureEvictions))
	a.Waits = poolWaits(runs)
	var jobs int
	var total float64
	for _, w := range a.Waits {
		jobs += w.Jobs
		total += w.MeanSeconds * float64(w.Jobs)
	}
	a.MeanWaitSeconds = ratio(total, float64(jobs))
	n := float64(len(runs))
	a.GPUHours, a.AllocGPUHours, a.NodeHours = a.GPUHours/n, a.AllocGPUHours/n, a.NodeHours/n
	a.LostGPUHours, a.IdleGPUHours, a.ReturnedGPUHours = a.LostGPUHours/n, a.IdleGPUHours/n, a.ReturnedGPUHours/n
	return a
}

// poolWaits pools the runs' waits by class.
func poolWaits(runs []*RightSizingRun) []ClassWait {
	var p classWaits
	for _, r := range runs {
		for _, w := range r.Waits {
			p.add(w.Class, w.Jobs, w.Seconds)
		}
	}
	return p.list()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// writeRightSizing adds the right-sizing table of a trace, when its runs have one.
func writeRightSizing(l layout, replay []Summary) {
	if len(replay) == 0 || replay[0].RightSizing == nil {
		return
	}
	s := replay[0].RightSizing
	l.title("GPU right-sizing and idle reclaim (autoscaled; hours per run, over the whole run)")
	rows := [][]string{{"arm", "runs", "GPU-h", "saved", "of perfect", "node-h", "slice GPU-h", "whole first", "OOM restarts", "OOM lost", "OOM wait",
		"pressure evictions", "pressure lost", "pressure wait", "idle GPU-h", "returned", "reclaim lost", "resume wait", "wait mean", "unfinished"}}
	share := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100**v)
	}
	for _, a := range s.Arms {
		rows = append(rows, []string{a.Arm, fmt.Sprint(a.Runs), fmt.Sprintf("%.1f", a.GPUHours), share(a.SavingVsWhole), share(a.ShareOfPerfectSaving),
			fmt.Sprintf("%.1f", a.NodeHours), fmt.Sprintf("%.1f", a.AllocGPUHours), fmt.Sprintf("%.1f%%", 100*a.WholeJobShare),
			fmt.Sprintf("%d (%.2f%%)", a.OOMRestarts, 100*a.OOMRestartShare), fmt.Sprintf("%.2f%%", 100*a.LostShare), FormatSeconds(a.MeanOOMWaitSeconds),
			fmt.Sprintf("%d (%.2f%%)", a.PressureEvictions, 100*a.PressureEvictionShare), fmt.Sprintf("%.2f%%", 100*a.PressureLostShare), FormatSeconds(a.MeanPressureWaitSeconds),
			fmt.Sprintf("%.1f", a.IdleGPUHours), fmt.Sprintf("%.1f%%", 100*a.IdleReturnedShare), fmt.Sprintf("%.2f%%", 100*a.ReclaimLostShare),
			FormatSeconds(a.MeanResumeWaitSeconds), FormatSeconds(a.MeanWaitSeconds), fmt.Sprint(a.Unfinished)})
	}
	l.table(rows)
	l.note(rightSizingKey)
}

const rightSizingKey = "GPU-h: GPUs holding any pod (a GPU with one slice counts whole); saved: against whole-GPU requests; of perfect: that saving over the perfect-knowledge arm's (slices of each run's true peak); " +
	"slice GPU-h: allocated GPU shares; whole first: one-GPU jobs whose first request was a whole GPU (the recommender had no slice for them yet); OOM restarts: share of the one-GPU jobs; " +
	"OOM lost: work since the last checkpoint thrown away by out-of-memory restarts, reclaim lost: the busy part of it thrown away by suspensions, both over slice GPU-h; " +
	"pressure evictions: runs evicted because their GPU's memory use passed 95% while they used more than their request (burstable), share of all jobs, the work they lost over slice GPU-h, and their mean wait to restart; " +
	"idle GPU-h: slice share-hours of idle stretches (at or below 1% for over 1 h); returned: the part reclaim gave back; wait mean: all jobs' waits to start and restart; " +
	"profile/arm@autoscaler: the arm under another autoscaler than its profile's own."
