package scheduler

import (
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Runtime history: how long finished jobs ran, per queue and job shape, so that a job
// that declares no runtime is expected to run about as long as its like did.
const (
	// historySize is how many recent runtimes are kept per shape.
	historySize = 64
	// historyMin is how many runtimes a shape needs before they predict anything.
	historyMin = 5
	// historyQuantile is the share of recent runtimes an estimate covers: a job is
	// expected to end when nine in ten of its like had ended.
	historyQuantile = 0.9
)

// runtimeKey groups jobs whose runtimes predict each other: the same queue, gang size
// and per-task GPU shape (whole GPUs, or a slice of one).
type runtimeKey struct {
	queue string
	tasks int
	gpus  int
	slice bool
}

func runtimeKeyOf(j *framework.Job) runtimeKey {
	k := runtimeKey{tasks: len(j.Tasks)}
	if j.Queue != nil {
		k.queue = j.Queue.Name
	}
	if len(j.Tasks) > 0 {
		g := &j.Tasks[0].GPU
		k.gpus, k.slice = g.Count, g.Shared()
	}
	return k
}

// recordRuntime remembers that a job of shape k held its resources for d.
func (s *Scheduler) recordRuntime(k runtimeKey, d time.Duration) {
	if d <= 0 {
		return
	}
	h := append(s.history[k], d)
	if len(h) > historySize {
		h = slices.Clone(h[len(h)-historySize:])
	}
	s.history[k] = h
}

// expectedRuntime is how long j is expected to run once started: what its owner
// declared, else what recent jobs of its shape took; false when neither is known.
// Estimates from history are computed once per session and shape.
func (s *Session) expectedRuntime(j *framework.Job) (time.Duration, bool) {
	if j.ExpectedRuntime > 0 {
		return j.ExpectedRuntime, true
	}
	k := runtimeKeyOf(j)
	if d, ok := s.estimates[k]; ok {
		return d, d > 0
	}
	var d time.Duration
	if h := s.history[k]; len(h) >= historyMin {
		sorted := slices.Sorted(slices.Values(h))
		d = sorted[min(len(sorted)-1, int(historyQuantile*float64(len(sorted))))]
	}
	if s.estimates == nil {
		s.estimates = map[runtimeKey]time.Duration{}
	}
	s.estimates[k] = d
	return d, d > 0
}

// expectedEnd is when a running job is expected to release its resources: its start
// plus its expected runtime, now for a job past its estimate (it may end any moment),
// false when its runtime is unknown.
func (s *Session) expectedEnd(j *framework.Job) (time.Time, bool) {
	d, ok := s.expectedRuntime(j)
	started := j.StartedAt()
	if !ok || started.IsZero() {
		return time.Time{}, false
	}
	end := started.Add(d)
	if end.Before(s.Snap.Now) {
		end = s.Snap.Now
	}
	return end, true
}

// endsBefore reports whether j, started now, is expected to end by t.
func (s *Session) endsBefore(j *framework.Job, t time.Time) bool {
	if t.IsZero() {
		return false
	}
	d, ok := s.expectedRuntime(j)
	return ok && !s.Snap.Now.Add(d).After(t)
}

// readyAt is, for each node that could hold tasks like t, when it is expected to hold
// how many: the counts grow as running tasks end, in order of their expected ends.
// Tasks of unknown end never end here.
type readyStep struct {
	at    time.Time
	count int
}

func (s *Session) readySteps(t *framework.Task, n *framework.Node) []readyStep {
	type release struct {
		at   time.Time
		task *framework.Task
	}
	var rel []release
	for _, x := range n.Tasks {
		if end, ok := s.expectedEnd(x.Job); ok {
			rel = append(rel, release{end, x})
		}
	}
	slices.SortStableFunc(rel, func(a, b release) int { return a.at.Compare(b.at) })
	used := n.Used
	gpuUsed := make([]int64, len(n.GPUs))
	for i := range n.GPUs {
		gpuUsed[i] = n.GPUs[i].UsedMilli
	}
	steps := []readyStep{{s.Snap.Now, fitCount(t, n, &used, gpuUsed)}}
	for _, r := range rel {
		used.Sub(&r.task.Placed)
		for _, g := range r.task.GPUs.Indices() {
			gpuUsed[g] -= r.task.GPUMilli
		}
		c := fitCount(t, n, &used, gpuUsed)
		if last := &steps[len(steps)-1]; last.at.Equal(r.at) {
			last.count = c
		} else if c > last.count {
			steps = append(steps, readyStep{r.at, c})
		}
	}
	return steps
}

// fitCount is how many tasks like t fit on n with used and per-GPU usage gpuUsed.
func fitCount(t *framework.Task, n *framework.Node, used *framework.Resources, gpuUsed []int64) int {
	c := 1 << 30
	free := func(alloc, use, req int64) {
		if req > 0 {
			c = min(c, int(max(alloc-use, 0)/req))
		}
	}
	free(n.Allocatable.MilliCPU, used.MilliCPU, t.Request.MilliCPU)
	free(n.Allocatable.Memory, used.Memory, t.Request.Memory)
	if !t.GPU.Any() || len(n.GPUs) == 0 {
		return c
	}
	milli := t.GPU.MilliOn(&n.GPUs[0])
	slots := 0
	for i, u := range gpuUsed {
		if n.GPUs[i].Healthy {
			if t.GPU.Shared() {
				slots += int(max(framework.MilliPerGPU-u, 0) / max(milli, 1))
			} else if u == 0 {
				slots++
			}
		}
	}
	return min(c, slots/max(t.GPU.GPUs(), 1))
}
