package sim

import (
	"container/heap"
	"fmt"
	"sort"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/sim/report"
	"github.com/tessera-gpu/tessera/scheduler/sim/trace"
)

// Replay timing.
const (
	// sampleEvery is how often the replay records allocation and nodes.
	sampleEvery = 10 * 60
	// retryEvery re-runs the scheduler while jobs wait, so that waiting times (backfill
	// reservations, min-runtime guards) take effect even when nothing arrives or ends.
	retryEvery = 5 * 60
	// checkpointEvery is how often jobs checkpoint: an evicted job loses the work since.
	checkpointEvery = 10 * 60
	// drainAfter bounds the run after the last arrival.
	drainAfter = 48 * 3600
	// starvedAfter is the wait beyond which a job counts as starved.
	starvedAfter = 12 * 3600
	// MaxReplaySpan bounds the arrival window of a replay (366 days), and with it the
	// samples a run records.
	MaxReplaySpan = 366 * 24 * 3600
)

// ReplayJob is one job of a replay: Tasks identical pods, MinMember of which must run
// for the job to make progress; it needs Duration seconds of progress.
type ReplayJob struct {
	Name, Class, Queue  string
	Priority            int32
	MinMember, Tasks    int
	GPU                 framework.GPURequest
	MilliCPU, MemoryMiB int64
	Arrival, Duration   int64
}

// ReplayInput is a cluster and the jobs that arrive on it.
type ReplayInput struct {
	Name   string
	Nodes  []trace.NodeSpec
	Queues []trace.QueueSpec
	Jobs   []ReplayJob
	// Horizon is the arrival window in seconds; means are taken over it.
	Horizon int64
}

// ScenarioInput converts a built-in scenario.
func ScenarioInput(s trace.Scenario) ReplayInput {
	in := ReplayInput{Name: s.Name, Nodes: s.Nodes, Queues: s.Queues, Horizon: s.Horizon}
	for _, j := range s.Jobs {
		in.Jobs = append(in.Jobs, ReplayJob{Name: j.Name, Class: j.Class, Queue: j.Queue, Priority: j.Priority,
			MinMember: j.MinMember, Tasks: j.Tasks, GPU: framework.GPURequest{Count: j.GPUsPerTask, MemoryMiB: j.GPUMemoryMiB},
			MilliCPU: j.MilliCPU, MemoryMiB: j.MemoryMiB, Arrival: j.Arrival, Duration: j.Duration})
	}
	return in
}

// PodTraceInput turns a pod list with creation and deletion times into jobs of one pod;
// pods without both times are left out of a replay (they have no lifetime).
func PodTraceInput(name string, nodes []trace.NodeSpec, pods []trace.PodSpec) (ReplayInput, error) {
	in := ReplayInput{Name: name, Nodes: nodes}
	var t0 int64 = -1
	for _, p := range pods {
		if p.Creation >= 0 && (t0 < 0 || p.Creation < t0) {
			t0 = p.Creation
		}
	}
	for _, p := range pods {
		if p.Creation < 0 || p.Deletion < 0 {
			continue
		}
		in.Jobs = append(in.Jobs, ReplayJob{Name: p.Name, Class: "pod", MinMember: 1, Tasks: 1, GPU: gpuRequest(&p, false),
			MilliCPU: p.MilliCPU, MemoryMiB: p.MemoryMiB, Arrival: p.Creation - t0, Duration: max(p.Deletion-p.Creation, 1)})
	}
	if len(in.Jobs) == 0 {
		return in, fmt.Errorf("%s: no pod has creation_time and deletion_time; replay needs them (use --mode fillup)", name)
	}
	sort.SliceStable(in.Jobs, func(a, b int) bool { return in.Jobs[a].Arrival < in.Jobs[b].Arrival })
	last := in.Jobs[len(in.Jobs)-1]
	if last.Arrival > MaxReplaySpan {
		return in, fmt.Errorf("%s: pod %s is created %s after the first pod; replay covers at most 366 days of creation_time",
			name, last.Name, report.FormatSeconds(float64(last.Arrival)))
	}
	in.Horizon = last.Arrival + 1
	return in, nil
}

// Replay describes one replay run.
type Replay struct {
	Input  ReplayInput
	Policy string
	Config *scheduler.Config // replaces the policy's configuration when set
	Seed   int64
	// OnJob is called as each job arrives (progress bars); may be nil.
	OnJob func()
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
}

type completion struct {
	at    int64
	r     *running
	epoch int
}

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

// RunReplay plays the jobs' arrivals and completions through the scheduler on a
// virtual clock and measures allocation, useful utilisation, waits and preemptions.
// A job makes progress only while at least MinMember of its tasks run, so pods that a
// scheduler without gangs binds piecemeal hold GPUs without doing work.
func RunReplay(rp Replay) (report.Result, error) {
	wall := time.Now()
	cfg, err := configFor(rp.Policy, rp.Config, rp.Seed)
	if err != nil {
		return report.Result{}, err
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return report.Result{}, err
	}
	in := rp.Input
	nodes := buildNodes(in.Nodes)
	queues := map[string]*framework.Queue{}
	snap := &framework.Snapshot{Nodes: nodes, TopologyLevels: []string{"tessera.dev/rack", "topology.kubernetes.io/zone"}}
	for _, q := range in.Queues {
		fq := &framework.Queue{Name: q.Name, Weight: q.Weight, Reclaimable: q.Reclaimable, Capability: framework.Unlimited}
		if q.DeservedGPUs > 0 {
			fq.Deserved.GPU = q.DeservedGPUs * framework.MilliPerGPU
		}
		if q.CapabilityGPUs > 0 {
			fq.Capability.GPU = q.CapabilityGPUs * framework.MilliPerGPU
		}
		queues[q.Name] = fq
		snap.Queues = append(snap.Queues, fq)
	}
	var capacity int64
	for _, n := range nodes {
		capacity += n.Allocatable.GPU
	}
	if capacity == 0 {
		return report.Result{}, fmt.Errorf("%s: the cluster has no GPUs", in.Name)
	}
	for i := range in.Jobs {
		if q := in.Jobs[i].Queue; q != "" && queues[q] == nil {
			return report.Result{}, fmt.Errorf("%s: job %s names queue %q, which the input does not define", in.Name, in.Jobs[i].Name, q)
		}
	}

	out := &report.Replay{}
	var (
		pending  = completions{}
		active   = map[*framework.Job]*running{}
		next     = 0
		now      int64
		lastT    int64
		allocInt float64 // integral of allocated milli over [0, horizon]
		utilInt  float64
	)
	end := int64(0)
	if len(in.Jobs) > 0 {
		end = in.Jobs[len(in.Jobs)-1].Arrival + drainAfter
	}
	horizon := in.Horizon
	if horizon <= 0 {
		horizon = end - drainAfter + 1
	}
	held := func() (alloc, useful int64) {
		for _, n := range nodes {
			alloc += n.Used.GPU
		}
		for _, r := range active {
			if r.since < 0 {
				continue
			}
			for _, t := range r.job.Tasks {
				if t.Status == framework.TaskRunning {
					useful += usefulMilli(&r.spec.GPU, t)
				}
			}
		}
		return alloc, useful
	}
	for _, q := range in.Queues {
		out.Queues = append(out.Queues, report.QueueSeries{Name: q.Name, DeservedGPUs: q.DeservedGPUs, CapabilityGPUs: q.CapabilityGPUs})
	}
	queueIndex := func(q *framework.Queue) int {
		for i := range out.Queues {
			if q != nil && out.Queues[i].Name == q.Name {
				return i
			}
		}
		return -1
	}
	perQueue := func() (alloc []float64, pending []int) {
		milli := make([]int64, len(out.Queues))
		alloc, pending = make([]float64, len(out.Queues)), make([]int, len(out.Queues))
		for _, r := range active {
			i := queueIndex(r.job.Queue)
			if i < 0 {
				continue
			}
			if !r.started || r.since < 0 {
				pending[i]++
			}
			for _, t := range r.job.Tasks {
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
	advance := func(to int64) {
		a, u := held()
		qa, qp := perQueue()
		for ts := (lastT/sampleEvery + 1) * sampleEvery; ts <= to; ts += sampleEvery {
			for i := range out.Queues {
				out.Queues[i].AllocGPUs = append(out.Queues[i].AllocGPUs, qa[i])
				out.Queues[i].PendingJobs = append(out.Queues[i].PendingJobs, qp[i])
			}
			out.Times = append(out.Times, float64(ts)/3600)
			out.AllocPct = append(out.AllocPct, 100*float64(a)/float64(capacity))
			out.UtilPct = append(out.UtilPct, 100*float64(u)/float64(capacity))
			out.Nodes = append(out.Nodes, len(nodes))
			out.IdleNodes = append(out.IdleNodes, idleNodes(nodes))
		}
		if span := min(to, horizon) - min(lastT, horizon); span > 0 {
			allocInt += float64(a) * float64(span)
			utilInt += float64(u) * float64(span)
		}
		lastT = to
	}
	startProgress := func(r *running) {
		if r.since >= 0 || holdingRunning(r.job) < r.job.MinMember {
			return
		}
		r.since = now
		if !r.started {
			r.started, r.startedAt = true, now
			recordWait(out, r.spec, now)
		}
		heap.Push(&pending, completion{at: now + r.spec.Duration - r.done, r: r, epoch: r.epoch})
	}
	stopProgress := func(r *running) {
		if r.since < 0 {
			return
		}
		r.done += (now - r.since) / checkpointEvery * checkpointEvery
		r.since = -1
		r.epoch++
	}

	for {
		// The next instant: an arrival, a completion, or a retry while jobs wait.
		t := end
		if next < len(in.Jobs) {
			t = min(t, in.Jobs[next].Arrival)
		}
		for pending.Len() > 0 && pending[0].epoch != pending[0].r.epoch {
			heap.Pop(&pending)
		}
		if pending.Len() > 0 {
			t = min(t, pending[0].at)
		}
		waiting := false
		for _, r := range active {
			if !r.started || r.since < 0 {
				waiting = true
				break
			}
		}
		if waiting {
			t = min(t, now+retryEvery)
		}
		if next >= len(in.Jobs) && pending.Len() == 0 && !waiting {
			out.AllDoneHours = float64(now) / 3600
			break // everything ran
		}
		if t >= end {
			advance(end)
			now = end
			break
		}
		advance(t)
		now = t
		for next < len(in.Jobs) && in.Jobs[next].Arrival <= now {
			spec := &in.Jobs[next]
			j := replayJob(spec, queues[spec.Queue], cfg.WholeGPUs)
			active[j] = &running{spec: spec, job: j, since: -1}
			snap.Jobs = append(snap.Jobs, j)
			next++
			if rp.OnJob != nil {
				rp.OnJob()
			}
		}
		for pending.Len() > 0 && pending[0].at <= now {
			c := heap.Pop(&pending).(completion)
			if c.epoch != c.r.epoch {
				continue
			}
			for _, t := range c.r.job.Tasks {
				if t.Node != nil {
					t.Node.Remove(t)
				}
				t.Status = framework.TaskSucceeded
			}
			delete(active, c.r.job)
		}
		snap.Jobs = snap.Jobs[:0]
		for j := range active {
			snap.Jobs = append(snap.Jobs, j)
		}
		sort.Slice(snap.Jobs, func(a, b int) bool { return snap.Jobs[a].Name < snap.Jobs[b].Name })
		snap.Now = epoch.Add(time.Duration(now) * time.Second)
		res := s.RunSession(snap)
		evicted := map[*framework.Job]bool{}
		for _, e := range res.Evictions {
			evicted[e.Task.Job] = true
		}
		for j := range evicted {
			out.Preemptions++
			stopProgress(active[j])
		}
		for _, b := range res.Bindings {
			b.Task.Status = framework.TaskRunning
			b.Task.StartTime = snap.Now
		}
		for _, r := range active {
			if holdingRunning(r.job) < r.job.MinMember {
				stopProgress(r)
			} else {
				startProgress(r)
			}
		}
	}
	for _, w := range out.WaitSeconds {
		if w > starvedAfter {
			out.JobsStarved++
		}
	}
	// Jobs that never started wait until the end of the run at least: their waits
	// count as censored there, so the statistics do not leave out the worst cases.
	for _, r := range active {
		if !r.started {
			out.JobsStarved++
			out.CensoredWaits++
			recordWait(out, r.spec, now)
		}
	}
	if lastT < horizon {
		advance(horizon) // nothing ran at the end of the window
	}
	out.MeanAllocPct = 100 * allocInt / float64(horizon) / float64(capacity)
	out.MeanUtilPct = 100 * utilInt / float64(horizon) / float64(capacity)
	res := report.Result{Policy: rp.Policy, Seed: rp.Seed, Trace: in.Name, WallSeconds: time.Since(wall).Seconds(), Replay: out}
	return res, nil
}

// recordWait adds a job's wait, arrival to now, with its queue and class.
func recordWait(out *report.Replay, spec *ReplayJob, now int64) {
	out.WaitSeconds = append(out.WaitSeconds, float64(now-spec.Arrival))
	out.WaitQueues = append(out.WaitQueues, spec.Queue)
	out.WaitClasses = append(out.WaitClasses, spec.Class)
}

// epoch is the virtual clock's origin.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func replayJob(spec *ReplayJob, q *framework.Queue, wholeGPUs bool) *framework.Job {
	j := &framework.Job{Name: spec.Name, Namespace: "sim", UID: spec.Name, Queue: q, Priority: spec.Priority,
		MinMember: max(spec.MinMember, 1), Created: epoch.Add(time.Duration(spec.Arrival) * time.Second)}
	gpu := spec.GPU
	if wholeGPUs && gpu.Shared() {
		gpu = framework.GPURequest{Count: 1, Models: gpu.Models}
	}
	for i := 0; i < spec.Tasks; i++ {
		name := fmt.Sprintf("%s-%d", spec.Name, i)
		j.Tasks = append(j.Tasks, &framework.Task{Name: name, Namespace: "sim", UID: name, Job: j, Container: "main",
			Request: framework.Resources{MilliCPU: spec.MilliCPU, Memory: spec.MemoryMiB << 20, Pods: 1},
			GPU:     gpu, Preemptible: true})
	}
	return j
}

// usefulMilli is the GPU share a running task actually needs: its whole GPUs, its share,
// or its memory slice as a share of the GPU it runs on (a slice holding a whole GPU
// under a scheduler without sharing wastes the rest).
func usefulMilli(asked *framework.GPURequest, t *framework.Task) int64 {
	switch {
	case asked.Count > 0:
		return int64(asked.Count) * framework.MilliPerGPU
	case asked.Milli > 0:
		return asked.Milli
	case asked.MemoryMiB > 0 && t.Node != nil && t.GPUs != 0:
		g := &t.Node.GPUs[t.GPUs.Indices()[0]]
		return min(framework.MilliPerGPU, asked.MemoryMiB*framework.MilliPerGPU/max(g.MemoryMiB, 1))
	}
	return 0
}

// holdingRunning counts the job's running tasks.
func holdingRunning(j *framework.Job) int { return j.Count(framework.TaskRunning) }

func idleNodes(nodes []*framework.Node) int {
	c := 0
	for _, n := range nodes {
		if n.Idle() {
			c++
		}
	}
	return c
}
