package sim

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/report"
)

// RunReplay plays the jobs' arrivals and completions through the scheduler on a
// virtual clock and measures allocation, useful utilisation, waits and preemptions.
// A job makes progress only while at least MinMember of its tasks run, so pods that a
// scheduler without gangs binds piecemeal hold GPUs without doing work.
func RunReplay(rp Replay) (report.Result, error) {
	wall := time.Now()
	r, err := newReplayer(rp)
	if err != nil {
		return report.Result{}, err
	}
	r.run()
	res := report.Result{Policy: rp.Profile, Seed: rp.Seed, Trace: rp.Input.Name, WallSeconds: time.Since(wall).Seconds(), Replay: r.out}
	return res, nil
}

// replayer is one replay in progress: the cluster and the jobs on the virtual clock,
// and what it has measured so far. Each step of the event loop is one method.
type replayer struct {
	rp    Replay
	cfg   scheduler.Config
	sched *scheduler.Scheduler
	snap  *framework.Snapshot
	// queues are the input's queues by name.
	queues map[string]*framework.Queue
	// capacity is the cluster's GPU milli, the denominator of every GPU share.
	capacity int64
	// refMemoryMiB is the memory of the cluster's largest GPU, to count a job's memory
	// slices as GPUs.
	refMemoryMiB int64
	// end bounds the run; horizon is the window means are taken over.
	end, horizon int64

	// active are the jobs that arrived and have not finished, by job; order holds them
	// in name order, the order of the sessions' snapshots and of every measurement.
	active map[*framework.Job]*running
	order  []*running
	ends   completions
	next   int // the next job to arrive
	now    int64

	// fleet turns nodes off and on; nil: the nodes are always on.
	fleet *fleet
	// allNodes are the input's nodes, present or not; noMigration packs the running
	// tasks onto them as they start, for the savings bounds.
	allNodes    []*framework.Node
	noMigration *noMigration
	// rs runs a right-sizing arm (Replay.RightSizing); nil otherwise.
	rs *rightSizer

	out *report.Replay
	// waitCount counts the active jobs that wait to start or to resume.
	waitCount int
	// lastT is the time up to which the measurements are taken.
	lastT             int64
	allocInt, utilInt float64 // integrals of allocated and useful milli over [0, horizon]
	nodeInt           float64 // integral of the paid GPU nodes over [0, horizon]
	// integrals of the savings bounds' nodes over [0, horizon]
	ceilingInt, noMigrationInt float64
}

// running is a job's progress on the virtual clock.
type running struct {
	spec      *ReplayJob
	job       *framework.Job
	done      int64 // seconds of progress checkpointed so far
	since     int64 // when the current run started; -1 while not progressing
	started   bool
	startedAt int64
	epoch     int // invalidates completion events after an eviction
	// waitFrom is when the job's current wait began (its arrival, or the eviction
	// that stopped it), -1 while it makes progress; waited sums its ended waits.
	waitFrom, waited int64
	// milli is the useful GPU share its running tasks hold while it makes progress.
	milli int64
}

// waiting reports whether the job waits to start or to resume.
func (r *running) waiting() bool { return !r.started || r.since < 0 }

// newReplayer checks the input and builds the cluster, its queues and the clock.
func newReplayer(rp Replay) (*replayer, error) {
	cfg, err := configFor(rp.Profile, rp.Config, rp.Seed)
	if err != nil {
		return nil, err
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, err
	}
	in := rp.Input
	r := &replayer{rp: rp, cfg: cfg, sched: s, queues: map[string]*framework.Queue{}, active: map[*framework.Job]*running{}, out: &report.Replay{}}
	nodes, spare := splitSpare(buildNodes(in.Nodes), rp)
	r.allNodes, r.noMigration = slices.Clone(nodes), newNoMigration(nodes)
	r.snap = &framework.Snapshot{Nodes: nodes, TopologyLevels: []string{"tessera.dev/rack", "topology.kubernetes.io/zone"}}
	for _, q := range in.Queues {
		fq := &framework.Queue{Name: q.Name, Weight: q.Weight, Reclaimable: q.Reclaimable, Capability: framework.Unlimited}
		if q.DeservedGPUs > 0 {
			fq.Deserved.GPU = q.DeservedGPUs * framework.MilliPerGPU
		}
		if q.CapabilityGPUs > 0 {
			fq.Capability.GPU = q.CapabilityGPUs * framework.MilliPerGPU
		}
		r.queues[q.Name] = fq
		r.snap.Queues = append(r.snap.Queues, fq)
		r.out.Queues = append(r.out.Queues, report.QueueSeries{Name: q.Name, DeservedGPUs: q.DeservedGPUs, CapabilityGPUs: q.CapabilityGPUs})
	}
	for _, n := range nodes {
		r.capacity += n.Allocatable.GPU
		for _, g := range n.GPUs {
			r.refMemoryMiB = max(r.refMemoryMiB, g.MemoryMiB)
		}
	}
	if r.capacity == 0 {
		return nil, fmt.Errorf("%s: the cluster has no GPUs", in.Name)
	}
	for i := range in.Jobs {
		if q := in.Jobs[i].Queue; q != "" && r.queues[q] == nil {
			return nil, fmt.Errorf("%s: job %s names queue %q, which the input does not define", in.Name, in.Jobs[i].Name, q)
		}
	}
	if len(in.Jobs) > 0 {
		r.end = in.Jobs[len(in.Jobs)-1].Arrival + drainAfter
	}
	r.horizon = in.Horizon
	if r.horizon <= 0 {
		r.horizon = r.end - drainAfter + 1
	}
	if rp.Autoscale != nil {
		if r.fleet, err = newFleet(*rp.Autoscale, s, nodes); err != nil {
			return nil, err
		}
		r.fleet.addRemoved(spare)
	}
	if rp.RightSizing != nil {
		if r.rs, err = newRightSizer(*rp.RightSizing, rp.Seed, r.refMemoryMiB, cfg.WholeGPUs); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// run is the event loop: measure up to the next instant, then let jobs arrive and
// end, and run a scheduling session, until every job ran or the run's end.
func (r *replayer) run() {
	for {
		t, more := r.nextInstant()
		if !more {
			r.out.AllDoneHours = float64(r.now) / 3600
			break // everything ran
		}
		if t >= r.end {
			r.measure(r.end)
			r.now = r.end
			break
		}
		r.measure(t)
		r.now = t
		r.joinReady()
		r.arrive()
		r.complete()
		r.interruptions()
		r.schedule()
		r.autoscale()
		r.checkPlaced()
	}
	r.close()
}

// nextInstant is the next instant something happens: an arrival, a completion, a
// retry while jobs wait, a node ready after its boot or the autoscaler's next look;
// more is false once every job ran.
func (r *replayer) nextInstant() (t int64, more bool) {
	t = r.end
	if r.next < len(r.rp.Input.Jobs) {
		t = min(t, r.rp.Input.Jobs[r.next].Arrival)
	}
	for r.ends.Len() > 0 && r.ends[0].epoch != r.ends[0].r.epoch {
		heap.Pop(&r.ends)
	}
	if r.ends.Len() > 0 {
		t = min(t, r.ends[0].at)
	}
	waiting := r.anyWaiting()
	if waiting {
		t = min(t, r.now+retryEvery)
	}
	if at, ok := r.rs.next(); ok {
		t = min(t, at)
		waiting = true
	}
	more = r.next < len(r.rp.Input.Jobs) || r.ends.Len() > 0 || waiting
	if r.fleet != nil && more {
		t = min(t, r.now+autoscaleEvery)
		if at, ok := r.fleet.nextReady(); ok {
			t = min(t, at)
		}
	}
	return t, more
}

func (r *replayer) anyWaiting() bool { return r.waitCount > 0 }

// arrive adds the jobs that arrived by now.
func (r *replayer) arrive() {
	jobs := r.rp.Input.Jobs
	for r.next < len(jobs) && jobs[r.next].Arrival <= r.now {
		spec := &jobs[r.next]
		j := replayJob(spec, r.queues[spec.Queue], r.cfg.WholeGPUs)
		a := &running{spec: spec, job: j, since: -1, waitFrom: spec.Arrival}
		r.active[j] = a
		r.waitCount++
		i, _ := slices.BinarySearchFunc(r.order, spec.Name, byName)
		r.order = slices.Insert(r.order, i, a)
		r.rs.arrive(r, a)
		r.next++
		if r.rp.OnJob != nil {
			r.rp.OnJob()
		}
	}
}

// complete frees the jobs that finished by now.
func (r *replayer) complete() {
	for r.ends.Len() > 0 && r.ends[0].at <= r.now {
		c := heap.Pop(&r.ends).(completion)
		if c.epoch != c.r.epoch {
			continue
		}
		for _, t := range c.r.job.Tasks {
			if t.Node != nil {
				t.Node.Remove(t)
			}
			t.Status = framework.TaskSucceeded
		}
		r.rs.completed(r, c.r)
		recordWait(r.out, c.r.spec, c.r.waited, r.refMemoryMiB)
		r.out.WorkGPUHours += float64(c.r.spec.Duration) * float64(c.r.milli) / framework.MilliPerGPU / 3600
		r.out.JCTSeconds = append(r.out.JCTSeconds, float64(r.now-c.r.spec.Arrival))
		delete(r.active, c.r.job)
		i, _ := slices.BinarySearchFunc(r.order, c.r.spec.Name, byName)
		for i < len(r.order) && r.order[i] != c.r { // past others of the same name
			i++
		}
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// byName orders the active jobs by name.
func byName(a *running, name string) int { return strings.Compare(a.spec.Name, name) }

// schedule runs one session on the active jobs and applies its decisions: evicted
// jobs stop, bound tasks run, and jobs start or stop making progress.
func (r *replayer) schedule() {
	snap := r.snap
	snap.Jobs = snap.Jobs[:0]
	for _, a := range r.order {
		snap.Jobs = append(snap.Jobs, a.job)
	}
	snap.Now = epoch.Add(time.Duration(r.now) * time.Second)
	res := r.sched.RunSession(snap)
	evicted := map[*framework.Job]bool{}
	for _, e := range res.Evictions {
		evicted[e.Task.Job] = true
		r.evicted(EvictedByPreemption, 1)
	}
	for _, j := range snap.Jobs {
		if evicted[j] {
			r.out.Preemptions++
			r.stopProgress(r.active[j])
		}
	}
	touched := make([]*running, 0, len(evicted)+len(res.Bindings))
	for j := range evicted {
		touched = append(touched, r.active[j])
	}
	for _, b := range res.Bindings {
		b.Task.Status = framework.TaskRunning
		b.Task.StartTime = snap.Now
		touched = append(touched, r.active[b.Task.Job])
	}
	// Only the jobs the session bound or evicted may start or stop.
	slices.SortFunc(touched, func(a, b *running) int { return byName(a, b.spec.Name) })
	r.updateProgress(slices.Compact(touched))
}

// updateProgress starts those of jobs (in name order, so that waits are recorded in an
// order that does not depend on map iteration) that hold at least MinMember running
// tasks and stops the others.
func (r *replayer) updateProgress(jobs []*running) {
	for _, a := range jobs {
		if holdingRunning(a.job) < a.job.MinMember {
			r.stopProgress(a)
		} else {
			r.startProgress(a)
		}
	}
}

// startProgress starts a job's progress now and schedules its completion; the first
// start records its wait.
func (r *replayer) startProgress(a *running) {
	if a.since >= 0 || holdingRunning(a.job) < a.job.MinMember {
		return
	}
	a.since = r.now
	r.waitCount--
	a.waited += r.now - a.waitFrom
	a.waitFrom = -1
	a.milli = 0
	for _, t := range a.job.Tasks {
		if t.Status == framework.TaskRunning {
			a.milli += usefulMilli(&a.spec.GPU, t)
		}
	}
	if !a.started {
		a.started, a.startedAt = true, r.now
		r.out.Estimates.Add(r.sched.Estimate(a.job).Seconds(), float64(a.spec.Duration))
	}
	heap.Push(&r.ends, completion{at: r.now + a.spec.Duration - a.done, r: a, epoch: a.epoch})
	r.rs.started(r, a)
}

// stopProgress stops a job's progress: it keeps the work up to its last checkpoint,
// the rest is lost, and it waits again from now.
func (r *replayer) stopProgress(a *running) {
	if a.since < 0 {
		return
	}
	r.rs.stopped(r, a)
	elapsed := r.now - a.since
	kept := a.spec.kept(elapsed)
	a.done += kept
	r.lose(a, elapsed-kept)
	a.since, a.waitFrom = -1, r.now
	r.waitCount++
	a.epoch++
}

// Causes of evictions, as the report counts them.
const (
	EvictedByPreemption = "preemption"
	EvictedByScaleDown  = "scale-down"
)

// evicted counts pods evicted for cause.
func (r *replayer) evicted(cause string, pods int) {
	if pods == 0 {
		return
	}
	if r.out.Evictions == nil {
		r.out.Evictions = map[string]int{}
	}
	r.out.Evictions[cause] += pods
}

// lose accounts for the last seconds of a's progress, thrown away by an eviction:
// they count as lost GPU-time and no longer as useful utilisation.
func (r *replayer) lose(a *running, seconds int64) {
	if seconds <= 0 || a.milli == 0 {
		return
	}
	r.out.LostGPUHours += float64(seconds) * float64(a.milli) / framework.MilliPerGPU / 3600
	if span := min(r.now, r.horizon) - min(r.now-seconds, r.horizon); span > 0 {
		r.utilInt -= float64(a.milli) * float64(span)
	}
}

// measure records the samples due up to to and integrates allocation and useful
// utilisation over the window; the cluster held what it holds now since lastT.
func (r *replayer) measure(to int64) {
	if to <= r.lastT && r.lastT > 0 {
		return // no time passed: nothing to record
	}
	r.rs.measureWhole(r, to)
	out := r.out
	a, u := r.held()
	qa, qp := r.perQueue()
	nodes := r.snap.Nodes
	var ceiling, noMigration int
	if r.rp.Bounds {
		ceiling, noMigration = r.bounds()
	}
	for ts := (r.lastT/sampleEvery + 1) * sampleEvery; ts <= to; ts += sampleEvery {
		for i := range out.Queues {
			out.Queues[i].AllocGPUs = append(out.Queues[i].AllocGPUs, qa[i])
			out.Queues[i].PendingJobs = append(out.Queues[i].PendingJobs, qp[i])
		}
		out.Times = append(out.Times, float64(ts)/3600)
		out.AllocPct = append(out.AllocPct, 100*float64(a)/float64(r.capacity))
		out.UtilPct = append(out.UtilPct, 100*float64(u)/float64(r.capacity))
		out.Nodes = append(out.Nodes, r.paidNodes())
		if r.rp.Bounds {
			out.CeilingNodes = append(out.CeilingNodes, ceiling)
		}
		out.IdleNodes = append(out.IdleNodes, idleNodes(nodes))
	}
	if span := min(to, r.horizon) - min(r.lastT, r.horizon); span > 0 {
		r.allocInt += float64(a) * float64(span)
		r.utilInt += float64(u) * float64(span)
		r.nodeInt += float64(r.paidNodes()) * float64(span)
		r.ceilingInt += float64(ceiling) * float64(span)
		r.noMigrationInt += float64(noMigration) * float64(span)
	}
	r.lastT = to
}

// bounds is the nodes the running tasks need re-packed (the ceiling's) and placed
// once as they started (no migration); it brings the no-migration packing up to the
// tasks running now.
func (r *replayer) bounds() (ceiling, noMigration int) {
	var running []*framework.Task
	for _, a := range r.order {
		for _, t := range a.job.Tasks {
			if t.Status == framework.TaskRunning {
				running = append(running, t)
			}
		}
	}
	now := make(map[*framework.Task]bool, len(running))
	for _, t := range running {
		now[t] = true
	}
	for t := range r.noMigration.at {
		if !now[t] {
			r.noMigration.end(t)
		}
	}
	for _, t := range running {
		r.noMigration.start(t)
	}
	return repackNodes(r.allNodes, running), r.noMigration.used()
}

// held is the GPU milli allocated on the nodes and the part of it doing useful work.
func (r *replayer) held() (alloc, useful int64) {
	for _, n := range r.snap.Nodes {
		alloc += n.Used.GPU
	}
	for _, a := range r.order {
		if a.since < 0 {
			continue
		}
		for _, t := range a.job.Tasks {
			if t.Status == framework.TaskRunning {
				useful += usefulMilli(&a.spec.GPU, t)
			}
		}
	}
	return alloc, useful
}

// perQueue is, per queue of the report, the GPUs its running tasks hold and the jobs
// that wait.
func (r *replayer) perQueue() (alloc []float64, pending []int) {
	out := r.out
	milli := make([]int64, len(out.Queues))
	alloc, pending = make([]float64, len(out.Queues)), make([]int, len(out.Queues))
	for _, a := range r.order {
		i := r.queueIndex(a.job.Queue)
		if i < 0 {
			continue
		}
		if a.waiting() {
			pending[i]++
		}
		for _, t := range a.job.Tasks {
			if t.Status == framework.TaskRunning {
				milli[i] += t.Placed.GPU
			}
		}
	}
	for i, m := range milli {
		alloc[i] = float64(m) / framework.MilliPerGPU
	}
	return alloc, pending
}

func (r *replayer) queueIndex(q *framework.Queue) int {
	for i := range r.out.Queues {
		if q != nil && r.out.Queues[i].Name == q.Name {
			return i
		}
	}
	return -1
}

// close counts the starved jobs, records the censored waits of the jobs that never
// started, measures up to the end of the window and takes the means.
func (r *replayer) close() {
	r.out.RightSizing = r.rs.close(r)
	out := r.out
	for _, w := range out.WaitSeconds {
		if w > starvedAfter {
			out.JobsStarved++
		}
	}
	// Jobs that never started wait until the end of the run at least: their waits
	// count as censored there, so the statistics do not leave out the worst cases.
	// Jobs still running or waiting to restart count what they waited so far, and
	// their completion time as the end of the run.
	for _, a := range r.order {
		if a.waitFrom >= 0 {
			a.waited += r.now - a.waitFrom
		}
		switch {
		case !a.started:
			out.JobsStarved++
			out.CensoredWaits++
		case a.waited > starvedAfter:
			out.JobsStarved++
		}
		recordWait(out, a.spec, a.waited, r.refMemoryMiB)
		out.JCTSeconds = append(out.JCTSeconds, float64(r.now-a.spec.Arrival))
	}
	if out.RightSizing != nil {
		out.RightSizing.Waits = report.WaitsByClass(out.WaitClasses, out.WaitSeconds)
	}
	if r.lastT < r.horizon {
		r.measure(r.horizon) // nothing ran at the end of the window
	}
	out.MeanAllocPct = 100 * r.allocInt / float64(r.horizon) / float64(r.capacity)
	out.MeanUtilPct = 100 * r.utilInt / float64(r.horizon) / float64(r.capacity)
	out.GPUNodeHours = r.nodeInt / 3600
	out.CeilingNodeHours, out.NoMigrationNodeHours = r.ceilingInt/3600, r.noMigrationInt/3600
	out.GPUsPerNode = float64(r.capacity) / framework.MilliPerGPU / float64(len(r.allNodes))
	if r.fleet != nil {
		out.NodesRemoved, out.ScaleDownEvictions = r.fleet.removals, r.fleet.evictions
	}
}

type completion struct {
	at    int64
	r     *running
	epoch int
}

// completions is a min-heap of completion events by time.
type completions []completion

func (c completions) Len() int           { return len(c) }
func (c completions) Less(i, j int) bool { return c[i].at < c[j].at }
func (c completions) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *completions) Push(x any)        { *c = append(*c, x.(completion)) }
func (c *completions) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}
