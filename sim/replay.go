package sim

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// Replay timing.
const (
	// sampleEvery is how often the replay records allocation and nodes.
	sampleEvery = 10 * 60
	// retryEvery re-runs the scheduler while jobs wait, so that waiting times (backfill
	// reservations, min-runtime guards) take effect even when nothing arrives or ends.
	retryEvery = 5 * 60
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
	// CheckpointEvery is how often the job saves its progress, in seconds: an eviction
	// loses the work since its last checkpoint. 0: it never checkpoints, loses all of
	// its work to an eviction, and is protected (trace.JobSpec.Protected).
	CheckpointEvery int64
}

// Protected reports whether the job's pods are marked not to be evicted
// (safe-to-evict: "false", do-not-disrupt: "true"): no autoscaler removes their node
// and no scheduler preempts them, though another queue reclaims what their queue
// holds beyond its deserved share (all of their work is then lost). The rule is
// trace.JobSpec.Protected's.
func (j *ReplayJob) Protected() bool { return j.CheckpointEvery == 0 }

// kept is the part of elapsed seconds of progress that the job's checkpoints saved.
func (j *ReplayJob) kept(elapsed int64) int64 {
	if j.CheckpointEvery <= 0 {
		return 0
	}
	return elapsed / j.CheckpointEvery * j.CheckpointEvery
}

// WithProtectedShare returns the input with each job protected (no checkpoints) with
// probability share, drawn from the seed and the job's name, and the others
// checkpointing every trace.CheckpointBatch unless they already do: a variant of the
// scenario's own rule for measuring how much the share of work that cannot move
// decides. A negative share keeps the input's rule.
func (in ReplayInput) WithProtectedShare(share float64, seed int64) ReplayInput {
	if share < 0 {
		return in
	}
	jobs := slices.Clone(in.Jobs)
	for i := range jobs {
		j := &jobs[i]
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s", seed, j.Name)
		switch u := float64(h.Sum64()>>11) / (1 << 53); {
		case u < share:
			j.CheckpointEvery = 0
		case j.CheckpointEvery == 0:
			j.CheckpointEvery = trace.CheckpointBatch
		}
	}
	in.Jobs = jobs
	return in
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
			MilliCPU: j.MilliCPU, MemoryMiB: j.MemoryMiB, Arrival: j.Arrival, Duration: j.Duration, CheckpointEvery: j.CheckpointEvery})
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
			MilliCPU: p.MilliCPU, MemoryMiB: p.MemoryMiB, Arrival: p.Creation - t0, Duration: max(p.Deletion-p.Creation, 1),
			CheckpointEvery: trace.CheckpointForQoS(p.QoS)})
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
	Input   ReplayInput
	Profile string
	Config  *scheduler.Config // replaces the profile's configuration when set
	Seed    int64
	// OnJob is called as each job arrives (progress bars); may be nil.
	OnJob func()
	// Autoscale turns nodes off and on; nil keeps every node on.
	Autoscale *Autoscaling
	// Bounds measures the savings bounds (CeilingNodeHours, NoMigrationNodeHours) the
	// autoscaled runs are compared with. Re-packing every running pod at every instant
	// costs more than the rest of the replay on large clusters, so it is done only
	// when the savings are asked for.
	Bounds bool
	// RightSizing runs the replay as a right-sizing arm; nil: the jobs ask for what
	// the input says.
	RightSizing *RightSizing
	// EveryAutoscaler runs an autoscaled replay under every autoscaler (Autoscalers),
	// not only those paired with its profile (AutoscalersOf).
	EveryAutoscaler bool
}

// recordWait adds a job's wait, its seconds waiting to start and to restart after
// evictions, with its queue, its class and the GPUs it asks for (memory slices counted
// against refMemoryMiB, the cluster's largest GPU).
func recordWait(out *report.Replay, spec *ReplayJob, waited, refMemoryMiB int64) {
	out.WaitSeconds = append(out.WaitSeconds, float64(waited))
	out.WaitQueues = append(out.WaitQueues, spec.Queue)
	out.WaitClasses = append(out.WaitClasses, spec.Class)
	out.WaitGPUs = append(out.WaitGPUs, float64(spec.Tasks)*float64(spec.GPU.NominalMilli(refMemoryMiB))/framework.MilliPerGPU)
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
			GPU:     gpu, Preemptible: !spec.Protected(), CheckpointEvery: time.Duration(spec.CheckpointEvery) * time.Second})
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
