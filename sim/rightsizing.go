package sim

import (
	"container/heap"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/rightsize"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/curves"
	"github.com/tessera-gpu/tessera/sim/report"
)

// Right-sizing arms: how the jobs of one GPU or a slice ask for GPU memory.
const (
	// ArmWhole: every such job asks for a whole GPU.
	ArmWhole = report.ArmWhole
	// ArmUser: the slice a user picks by hand (userSlice).
	ArmUser = "user"
	// ArmRightSized: Tessera's recommendation (rightsize.Profile, the shipped
	// configuration) from the workload's finished runs; a whole GPU until it has one.
	ArmRightSized = "rightsized"
	// ArmBurstable: a request and a limit (rightsize.Profile.RecommendBurstable): the
	// scheduler packs on the request, a run may use memory above it up to its limit
	// while its GPU has it free, and GPU-memory pressure evicts the run furthest above
	// its request (burstable.go).
	ArmBurstable = "burstable"
	// ArmReclaim: ArmRightSized, and idle jobs suspended by the queues' idle reclaim;
	// no job opts out (none carries tessera.dev/idle-reclaim: "false").
	ArmReclaim = "rightsized+reclaim"
	// ArmReclaimOptOut: ArmReclaim where the jobs that never checkpoint, whose pods
	// are already marked safe-to-evict: "false", also carry idle-reclaim: "false" and
	// are never suspended.
	ArmReclaimOptOut = "rightsized+reclaim-optout"
	// ArmWorkloadPeak: each workload's slice is the most its curve ever uses, from its
	// first run (perfect knowledge of the workload, none of the run): about the best a
	// recommender that sizes a workload, not a run, can do without running out of memory.
	ArmWorkloadPeak = "workload-peak"
	// ArmPerfect: each run's slice is its own true peak (perfect knowledge), the ceiling.
	ArmPerfect = report.ArmPerfect
)

// RightSizingArms lists the arms in report order.
var RightSizingArms = []string{ArmWhole, ArmUser, ArmRightSized, ArmBurstable, ArmReclaim, ArmReclaimOptOut, ArmWorkloadPeak, ArmPerfect}

// IdleRule is when idle reclaim suspends a job: its GPUs stayed at or below Threshold
// (percent) for IdleFor seconds, and GracePeriod more after its owner was told.
type IdleRule struct {
	Threshold int
	IdleFor   int64
	Grace     int64
}

// DefaultIdleRule is a Queue's spec.idleReclaim defaults: 1%, 1h, 30m.
var DefaultIdleRule = IdleRule{Threshold: 1, IdleFor: 3600, Grace: 1800}

// RightSizing runs a replay as one right-sizing arm: each job gets a GPU curve of its
// workload from the genai2026 pods; a run whose memory passes its slice fails there
// and restarts with a larger one; with reclaim, idle jobs are suspended.
type RightSizing struct {
	Arm    string
	Config rightsize.Config
	Idle   IdleRule
	// SpareNodes is how many of the input's nodes, its last, are a node pool's room
	// to grow: removed at the start of an autoscaled replay, so that scale-up adds
	// them for waiting pods; an always-on replay keeps the whole pool on.
	SpareNodes int
}

// splitSpare is the nodes present at the start of rp and the spare ones.
func splitSpare(nodes []*framework.Node, rp Replay) (present, spare []*framework.Node) {
	rs := rp.RightSizing
	if rs == nil || rp.Autoscale == nil || rs.SpareNodes <= 0 || rs.SpareNodes >= len(nodes) {
		return nodes, nil
	}
	k := len(nodes) - rs.SpareNodes
	return nodes[:k:k], nodes[k:]
}

// addRemoved adds nodes that start removed, after the others in the input's order.
func (f *fleet) addRemoved(nodes []*framework.Node) {
	for _, n := range nodes {
		f.rank[n] = len(f.rank)
		f.removed = append(f.removed, n)
	}
}

// withSpareNodes is the input with as many spare nodes again, copies of its own
// named <name>-spare (RightSizing.SpareNodes).
func withSpareNodes(in ReplayInput) ReplayInput {
	nodes := slices.Clone(in.Nodes)
	for _, n := range in.Nodes {
		n.Name += "-spare"
		nodes = append(nodes, n)
	}
	in.Nodes = nodes
	return in
}

// rightSizer is a right-sizing arm in progress, beside the replayer.
type rightSizer struct {
	RightSizing
	seed   int64
	gpuMiB int64
	scale  float64
	curves []curves.Curve
	long   map[*curves.Curve][]bool
	// profiles are what the recommender knows of each workload; user the slice a
	// user asks for each workload (0: a whole GPU).
	profiles map[string]*rightsize.Profile
	user     map[string]int64
	// priors are the histories of every workload of a class (queue/class) and of a
	// queue (a namespace's), for the burstable arm's first runs.
	priors map[string]*rightsize.Profile
	// live are the running jobs of each workload, in start order (burstable).
	live map[string][]*sizedJob
	// placed are the burstable runs started since their GPUs were last checked.
	placed []*sizedJob
	jobs   map[*running]*sizedJob
	events interrupts
	// suspended are the jobs reclaim suspended, until their resume.
	suspended []*sizedJob
	out       report.RightSizingRun
	// lastT is the time up to which the whole-run integrals are taken.
	lastT int64
	// wholeGPUs: the profile places every slice as a whole GPU.
	wholeGPUs bool
}

// sizedJob is a job's curve and slice.
type sizedJob struct {
	a        *running
	workload string
	curve    jobCurve
	// sized is set for a job of one GPU or a slice, which the arm sizes.
	sized bool
	// pos is the curve time the job has consumed: it runs on while the job runs and
	// while it is suspended, and stands still while it waits; segment is pos when its
	// current run started.
	pos, segment int64
	// slice is the current run's GPU memory in MiB (its request); 0 for a whole GPU.
	// limit is the most it may use (burstable; the slice in the other arms).
	slice, limit int64
	// runEnd is the curve time at which the current run would end (burstable).
	runEnd int64
	// pressureAt is when GPU-memory pressure last evicted it (-1: it has restarted
	// since).
	pressureAt int64
	// oomAt is when it last ran out of memory (-1: it has restarted since);
	// resumeAt when its suspension ends; resumedAt when it came back to wait (-1: it
	// has run since).
	oomAt, resumeAt, resumedAt int64
}

// WholeGPUArms are the arms a profile that cannot share GPUs (wholeGPUs) runs: the
// users' own requests, which it places as whole GPUs, as such a cluster's users ask
// nvidia.com/gpu: 1.
var WholeGPUArms = []string{ArmWhole, ArmUser}

func newRightSizer(rs RightSizing, seed, gpuMiB int64, wholeGPUs bool) (*rightSizer, error) {
	switch {
	case !slices.Contains(RightSizingArms, rs.Arm):
		return nil, fmt.Errorf("right-sizing arm %q: use %s", rs.Arm, strings.Join(RightSizingArms, ", "))
	case wholeGPUs && !slices.Contains(WholeGPUArms, rs.Arm):
		return nil, fmt.Errorf("right-sizing arm %s needs a scheduler that places GPU-memory slices; a profile with wholeGPUs (volcano, volcano-capacity, kube-default) gives every slice a whole GPU and runs only %s: use tessera or volcano-seed",
			rs.Arm, strings.Join(WholeGPUArms, ", "))
	}
	if rs.Idle == (IdleRule{}) {
		rs.Idle = DefaultIdleRule
	}
	s := &rightSizer{RightSizing: rs, seed: seed, gpuMiB: gpuMiB, scale: float64(gpuMiB) / genaiGPUMiB, curves: curves.GenAI(),
		long: map[*curves.Curve][]bool{}, profiles: map[string]*rightsize.Profile{}, user: map[string]int64{}, jobs: map[*running]*sizedJob{},
		priors: map[string]*rightsize.Profile{}, live: map[string][]*sizedJob{}, wholeGPUs: wholeGPUs}
	s.out.Arm = rs.Arm
	return s, nil
}

// workloadOf names the workload a job reruns: its queue, its class and what it asks.
func workloadOf(spec *ReplayJob) string {
	return fmt.Sprintf("%s/%s/%dx%d/%d/%d/%d/%d", spec.Queue, spec.Class, spec.Tasks, spec.GPU.Count, spec.GPU.Milli, spec.GPU.MemoryMiB, spec.MilliCPU, spec.MemoryMiB)
}

// arrive gives an arriving job its curve and its slice: the job gets a spec of its own,
// since its request changes between runs.
func (s *rightSizer) arrive(r *replayer, a *running) {
	if s == nil {
		return
	}
	spec := *a.spec
	a.spec = &spec
	w := workloadOf(&spec)
	c := &s.curves[draw(s.seed, int64(len(s.curves)), "curve", w)]
	j := &sizedJob{a: a, workload: w, oomAt: -1, resumedAt: -1, pressureAt: -1, sized: spec.GPU.Count <= 1 && spec.GPU.Any()}
	j.curve = jobCurve{c: c, offset: draw(s.seed, c.Len(), "offset", spec.Name), scale: s.scale}
	s.jobs[a] = j
	s.out.Jobs++
	if !j.sized {
		return
	}
	s.out.SizedJobs++
	switch s.Arm {
	case ArmWhole:
		j.slice = 0
	case ArmUser:
		j.slice = s.userRequest(j)
		if s.wholeGPUs {
			j.slice = 0
		}
	case ArmBurstable:
		s.sizeBurstable(r, j, 0)
	case ArmRightSized, ArmReclaim, ArmReclaimOptOut:
		j.slice = s.recommend(w)
	case ArmWorkloadPeak:
		j.slice = s.perfect(j.curve.scaled(c.Peak()))
	case ArmPerfect:
		j.slice = s.perfect(j.curve.peak(0, spec.Duration))
	}
	if j.slice == 0 {
		s.out.WholeJobs++
	}
	if s.Arm != ArmBurstable {
		j.limit = j.slice
	}
	s.request(j)
}

// userRequest is the slice the user asks for the job's workload (ArmUser), picked
// once per workload.
func (s *rightSizer) userRequest(j *sizedJob) int64 {
	if _, ok := s.user[j.workload]; !ok {
		s.user[j.workload] = s.userSlice(j)
	}
	return s.user[j.workload]
}

// userTrial is how long a user watches a trial run before picking a slice by hand.
const userTrial = 3600

// userSlice is what a user asks for a workload by hand: the power of two GiB at or
// above the peak they saw in a trial run (an hour of the workload's curve, at an offset
// of its own), a whole GPU when that is no real slice.
func (s *rightSizer) userSlice(j *sizedJob) int64 {
	trial := jobCurve{c: j.curve.c, offset: draw(s.seed, j.curve.c.Len(), "trial", j.workload), scale: s.scale}
	return s.powerOfTwo(trial.peak(0, userTrial))
}

// powerOfTwo is the power of two GiB at or above mib; 0 (a whole GPU) when it is more
// than the configuration's share of the GPU.
func (s *rightSizer) powerOfTwo(mib int64) int64 {
	gib := uint64(max((mib+1023)/1024, 1))
	p := int64(1) << bits.Len64(gib-1) * 1024
	if float64(p) > s.Config.MaxShare*float64(s.gpuMiB) {
		return 0
	}
	return p
}

// recommend is the workload's recommended slice, 0 (its whole-GPU request) when none.
func (s *rightSizer) recommend(w string) int64 {
	p := s.profiles[w]
	if p == nil {
		return 0
	}
	return p.Recommend(s.gpuMiB, s.Config).MiB
}

// perfect is a slice of exactly peak, or a whole GPU when it does not fit one.
func (s *rightSizer) perfect(peak int64) int64 {
	if peak >= s.gpuMiB {
		return 0
	}
	return max(peak, 1)
}

// request sets the job's GPU request to its slice, or a whole GPU.
func (s *rightSizer) request(j *sizedJob) {
	g := framework.GPURequest{Count: 1, Models: j.a.spec.GPU.Models}
	if j.slice > 0 {
		g = framework.GPURequest{MemoryMiB: j.slice, Models: g.Models}
	}
	j.a.spec.GPU = g
	for _, t := range j.a.job.Tasks {
		t.GPU = g
	}
}

// started schedules the job's run ending early: out of memory when its curve passes
// its slice, or suspended when it stays idle long enough (with reclaim).
func (s *rightSizer) started(r *replayer, a *running) {
	if s == nil {
		return
	}
	j := s.jobs[a]
	j.segment = j.pos
	if j.oomAt >= 0 {
		s.out.OOMWaitSeconds += float64(r.now - j.oomAt)
		j.oomAt = -1
	}
	if j.resumedAt >= 0 {
		s.out.ResumeWaitSeconds += float64(r.now - j.resumedAt)
		j.resumedAt = -1
	}
	if j.pressureAt >= 0 {
		s.out.PressureWaitSeconds += float64(r.now - j.pressureAt)
		j.pressureAt = -1
	}
	end := j.pos + a.spec.Duration - a.done
	ev := interrupt{at: -1, j: j, epoch: a.epoch}
	// With perfect knowledge a slice holds its run's true peak: it never runs out.
	if j.sized && j.limit > 0 && s.Arm != ArmPerfect {
		if at, ok := j.curve.firstAbove(j.pos, end, j.limit); ok {
			ev.at, ev.oom = r.now+at-j.pos, true
			end = at
		}
	}
	if s.Arm == ArmBurstable && j.sized && j.slice > 0 {
		s.startBurstable(r, j, end)
	}
	if s.reclaims(a.spec) {
		if at, stretchEnd, ok := j.curve.reclaimAt(j.pos, end, s.Idle, j.pos+a.spec.Duration-a.done); ok {
			ev = interrupt{at: r.now + at - j.pos, j: j, epoch: a.epoch, idleUntil: stretchEnd - at}
		}
	}
	if ev.at >= 0 {
		heap.Push(&s.events, ev)
	}
}

// recommends reports whether the arm sizes jobs with the recommender.
func (s *rightSizer) recommends() bool {
	return s.Arm == ArmRightSized || s.Arm == ArmBurstable || s.Arm == ArmReclaim || s.Arm == ArmReclaimOptOut
}

// reclaims reports whether the arm's idle reclaim may suspend the job.
func (s *rightSizer) reclaims(spec *ReplayJob) bool {
	return s.Arm == ArmReclaim || s.Arm == ArmReclaimOptOut && !spec.Protected()
}

// stopped moves the job's curve time on by the run that ended now and counts its idle
// stretches.
func (s *rightSizer) stopped(r *replayer, a *running) {
	if s == nil {
		return
	}
	j := s.jobs[a]
	from := j.pos
	j.pos += r.now - a.since
	s.countIdle(j, from, j.pos, a.milli)
	s.stopLive(j)
}

func (s *rightSizer) countIdle(j *sizedJob, from, to, milli int64) {
	long := s.long[j.curve.c]
	if long == nil {
		long = longIdle(j.curve.c, s.Idle)
		s.long[j.curve.c] = long
	}
	s.out.IdleGPUHours += float64(j.curve.idleSeconds(from, to, long)) * float64(milli) / framework.MilliPerGPU / 3600
}

// completed records the finished run in the workload's profile, as the node agent and
// the recommender would: its peak, its first sample and its slice.
func (s *rightSizer) completed(r *replayer, a *running) {
	if s == nil {
		return
	}
	j := s.jobs[a]
	if a.since >= 0 {
		s.stopped(r, a)
	}
	delete(s.jobs, a)
	if !j.sized {
		return
	}
	s.record(r, j, rightsize.Run{PeakMiB: j.curve.peak(j.segment, max(j.pos, j.segment+1)), LimitMiB: j.slice})
}

func (s *rightSizer) record(r *replayer, j *sizedJob, run rightsize.Run) {
	if !s.recommends() {
		return
	}
	p := s.profiles[j.workload]
	if p == nil {
		p = &rightsize.Profile{}
		s.profiles[j.workload] = p
	}
	run.FirstMiB, run.GPUMiB, run.End = j.curve.memoryAt(j.segment), s.gpuMiB, epoch.Add(time.Duration(r.now)*time.Second)
	p.Record(run, s.Config)
	if s.Arm == ArmBurstable {
		for _, k := range priorKeys(j.a.spec) {
			prior := s.priors[k]
			if prior == nil {
				prior = &rightsize.Profile{}
				s.priors[k] = prior
			}
			prior.Record(run, s.Config)
		}
	}
}

// next is the next instant an interrupt or a resume is due; ok is false when none is.
func (s *rightSizer) next() (at int64, ok bool) {
	if s == nil {
		return 0, false
	}
	for s.events.Len() > 0 && s.events[0].epoch != s.events[0].j.a.epoch {
		heap.Pop(&s.events)
	}
	at, ok = -1, false
	if s.events.Len() > 0 {
		at, ok = s.events[0].at, true
	}
	for _, j := range s.suspended {
		if !ok || j.resumeAt < at {
			at, ok = j.resumeAt, true
		}
	}
	return at, ok
}

// interruptions ends the runs due by now: out of memory, or suspended as idle; and
// brings back the suspended jobs due.
func (r *replayer) interruptions() {
	s := r.rs
	if s == nil {
		return
	}
	var resumed []*sizedJob
	s.suspended = slices.DeleteFunc(s.suspended, func(j *sizedJob) bool {
		if j.resumeAt <= r.now {
			resumed = append(resumed, j)
			return true
		}
		return false
	})
	for _, j := range resumed {
		r.resume(j)
	}
	for s.events.Len() > 0 && s.events[0].at <= r.now {
		ev := heap.Pop(&s.events).(interrupt)
		if ev.epoch != ev.j.a.epoch {
			continue
		}
		if ev.pressure {
			r.pressureCheck(ev.j)
			continue
		}
		a, j := ev.j.a, ev.j
		elapsed, kept := r.now-a.since, a.spec.kept(r.now-a.since)
		// Of a suspended run, only the busy part since the checkpoint was work.
		busy := float64(j.curve.busySeconds(j.pos+kept, j.pos+elapsed, s.Idle.Threshold)) * float64(a.milli) / framework.MilliPerGPU / 3600
		lost := r.endRun(a)
		if ev.oom {
			s.out.OOMRestarts++
			s.out.OOMLostGPUHours += lost
			r.outOfMemory(ev.j)
		} else {
			s.out.Reclaims++
			s.out.ReclaimLostGPUHours += busy
			r.suspend(ev.j, ev.idleUntil)
		}
	}
}

// endRun stops a's run now, before its end: it loses the work since its last
// checkpoint (returned, in GPU-hours), its tasks leave their nodes and it waits again.
func (r *replayer) endRun(a *running) (lostGPUHours float64) {
	elapsed := r.now - a.since
	lostGPUHours = float64(elapsed-a.spec.kept(elapsed)) * float64(a.milli) / framework.MilliPerGPU / 3600
	r.stopProgress(a)
	for _, t := range a.job.Tasks {
		if t.Node != nil {
			t.Node.Remove(t)
		}
		t.Status, t.StartTime = framework.TaskPending, time.Time{}
	}
	return lostGPUHours
}

// outOfMemory records the failed run and gives the job its next slice: the
// recommender's after the failure, or a user's doubled one, until a whole GPU.
func (r *replayer) outOfMemory(j *sizedJob) {
	s := r.rs
	s.record(r, j, rightsize.Run{PeakMiB: j.limit, LimitMiB: j.limit, OOM: true})
	switch s.Arm {
	case ArmUser:
		s.user[j.workload] = s.powerOfTwo(2 * j.slice)
		j.slice = s.user[j.workload]
	case ArmRightSized, ArmReclaim, ArmReclaimOptOut:
		j.slice = s.recommend(j.workload)
	case ArmBurstable:
		// The user, told the run ran out of memory at the limit, doubles it.
		if j.limit >= s.userRequest(j) && s.user[j.workload] > 0 {
			s.user[j.workload] = s.powerOfTwo(2 * j.limit)
		}
		s.sizeBurstable(r, j, 0)
	default:
		j.slice = 0 // the knowing arms never fail; a whole GPU in any case
	}
	if s.Arm != ArmBurstable {
		j.limit = j.slice
	}
	j.oomAt = r.now
	s.request(j)
}

// suspend takes an idle job off the cluster for idle seconds, the rest of its idle
// stretch, which counts as done: it would have spent them idle.
func (r *replayer) suspend(j *sizedJob, idle int64) {
	s, a := r.rs, j.a
	s.out.ReturnedGPUHours += float64(idle) * float64(a.milli) / framework.MilliPerGPU / 3600
	s.out.IdleGPUHours += float64(idle) * float64(a.milli) / framework.MilliPerGPU / 3600
	j.pos += idle
	a.done = min(a.done+idle, a.spec.Duration)
	r.waitCount--
	a.waited += r.now - a.waitFrom
	a.waitFrom = -1
	j.resumeAt = r.now + idle
	s.suspended = append(s.suspended, j)
	i, _ := slices.BinarySearchFunc(r.order, a.spec.Name, byName)
	for i < len(r.order) && r.order[i] != a {
		i++
	}
	r.order = slices.Delete(r.order, i, i+1)
}

// resume brings a suspended job back: it waits to be placed again, or, when its curve
// stayed idle to its end, it is done.
func (r *replayer) resume(j *sizedJob) {
	a := j.a
	i, _ := slices.BinarySearchFunc(r.order, a.spec.Name, byName)
	r.order = slices.Insert(r.order, i, a)
	if a.done >= a.spec.Duration {
		a.epoch++
		heap.Push(&r.ends, completion{at: r.now, r: a, epoch: a.epoch})
		r.complete()
		return
	}
	r.waitCount++
	a.waitFrom = r.now
	j.oomAt = -1
	j.resumedAt = r.now
}

// measureWhole integrates the occupied GPUs, the allocated shares and the paid nodes
// over the whole run up to to.
func (s *rightSizer) measureWhole(r *replayer, to int64) {
	if s == nil {
		return
	}
	span := float64(to - s.lastT)
	if span <= 0 {
		return
	}
	var occupied, alloc int64
	for _, n := range r.snap.Nodes {
		alloc += n.Used.GPU
		for g := range n.GPUs {
			if n.GPUs[g].Tasks > 0 {
				occupied++
			}
		}
	}
	s.out.GPUHours += float64(occupied) * span / 3600
	s.out.AllocGPUHours += float64(alloc) / framework.MilliPerGPU * span / 3600
	s.out.NodeHours += float64(r.paidNodes()) * span / 3600
	s.lastT = to
}

// close brings back the jobs still suspended, counts the unfinished ones and returns
// the measurements.
func (s *rightSizer) close(r *replayer) *report.RightSizingRun {
	if s == nil {
		return nil
	}
	for _, j := range s.suspended {
		i, _ := slices.BinarySearchFunc(r.order, j.a.spec.Name, byName)
		r.order = slices.Insert(r.order, i, j.a)
	}
	s.suspended = nil
	s.out.Unfinished = len(r.order)
	out := s.out
	return &out
}

// interrupt is a run ending early: out of memory, or suspended as idle for idleUntil
// seconds; or a check of GPU-memory pressure.
type interrupt struct {
	at        int64
	j         *sizedJob
	epoch     int
	oom       bool
	idleUntil int64
	// pressure checks the memory of the job's GPU (burstable).
	pressure bool
}

// interrupts is a min-heap of interrupts by time.
type interrupts []interrupt

func (c interrupts) Len() int           { return len(c) }
func (c interrupts) Less(i, j int) bool { return c[i].at < c[j].at }
func (c interrupts) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *interrupts) Push(x any)        { *c = append(*c, x.(interrupt)) }
func (c *interrupts) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// ArmName names a right-sizing arm's run under an autoscaler: profile/arm under the
// profile's own first autoscaler, profile/arm@rule under another.
func ArmName(name, rule, own string) string {
	if rule == own {
		return name
	}
	return name + "@" + rule
}

// withArms is every run once per right-sizing arm of arms (nil: RightSizingArms), the
// arms of a run together; a profile that cannot share GPUs runs only WholeGPUArms.
func withArms(runs []run, arms []string) ([]run, error) {
	if arms == nil {
		arms = RightSizingArms
	}
	for _, arm := range arms {
		if !slices.Contains(RightSizingArms, arm) {
			return nil, fmt.Errorf("right-sizing arm %q: use %s", arm, strings.Join(RightSizingArms, ", "))
		}
	}
	out := make([]run, 0, len(runs)*len(arms))
	for _, r := range runs {
		whole, err := wholeGPUs(r)
		if err != nil {
			return nil, err
		}
		for _, arm := range arms {
			if whole && !slices.Contains(WholeGPUArms, arm) {
				continue
			}
			r.arm = arm
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no right-sizing arm to run: profiles that cannot share GPUs (wholeGPUs) run only %s", strings.Join(WholeGPUArms, ", "))
	}
	return out, nil
}

// wholeGPUs reports whether the run's scheduler gives every slice a whole GPU.
func wholeGPUs(r run) (bool, error) {
	cfg, err := configFor(r.profile, r.cfg, r.seed)
	return cfg.WholeGPUs, err
}

// runRightSizing replays one arm always on and under the profile's autoscalers
// (RunAutoscaled), so that scale-up driven by the waiting pods is part of it; the
// result is named profile/arm and carries the arm's figures under the first
// autoscaler.
func runRightSizing(rp Replay, a Autoscaling) (report.Result, error) {
	rs := *rp.RightSizing
	rs.SpareNodes = len(rp.Input.Nodes)
	rp.RightSizing, rp.Input = &rs, withSpareNodes(rp.Input)
	res, err := RunAutoscaled(rp, a)
	if err != nil {
		return res, err
	}
	name := rp.Profile + "/" + rp.RightSizing.Arm
	res.Policy = name
	rules := rp.autoscalers()
	for rule, rep := range res.Autoscaled {
		if rep.RightSizing != nil {
			rep.RightSizing.Arm = ArmName(name, rule, rules[0])
		}
	}
	res.RightSizing = res.Autoscaled[rules[0]].RightSizing
	res.Autoscale = report.Summarize([]report.Result{res})[0].Autoscale
	return res, nil
}
