package scheduler

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Runtime estimates let work run on nodes reserved for a waiting gang when it is
// expected to end before the gang can start (EASY backfill). A job's estimate is what
// it declares (Job.ExpectedRuntime), else the 90th percentile of the last runs of its
// class: its queue, its runtime class and its shape. Runs are learnt by watching jobs
// start and disappear; a run interrupted by an eviction is not learnt.
const (
	// historyRuns is how many recent runs of a class are kept.
	historyRuns = 32
	// historyMin is how many runs a class needs before its history estimates.
	historyMin = 5
)

// run is a job seen making progress: its class, when it started, whether an eviction
// interrupted it, and the session that last saw it.
type run struct {
	class, shape string
	started      time.Time
	interrupted  bool
	seen         uint64
}

// history is the recent runtimes of one class and their 90th percentile.
type history struct {
	runs     []time.Duration
	next     int
	estimate time.Duration
}

func (h *history) add(d time.Duration) {
	if len(h.runs) < historyRuns {
		h.runs = append(h.runs, d)
	} else {
		h.runs[h.next] = d
		h.next = (h.next + 1) % historyRuns
	}
	if len(h.runs) >= historyMin {
		sorted := slices.Sorted(slices.Values(h.runs))
		h.estimate = sorted[(len(sorted)*9+9)/10-1]
	}
}

// classOf is the key of the job's runtime history, and of the history of its shape
// in every queue and class, which stands in while its class has too few runs.
func classOf(j *framework.Job) (class, shape string) {
	q := ""
	if j.Queue != nil {
		q = j.Queue.Name
	}
	if len(j.Tasks) > 0 {
		g := &j.Tasks[0].GPU
		shape = strconv.Itoa(len(j.Tasks)) + "x" + strconv.Itoa(g.GPUs())
		if g.Shared() {
			shape += "s"
		}
	}
	return q + "/" + j.Class + "/" + shape, shape
}

// estimate is Estimate, remembered for the session.
func (s *Session) estimate(j *framework.Job) time.Duration {
	e, ok := s.estimates[j]
	if !ok {
		if s.estimates == nil {
			s.estimates = map[*framework.Job]time.Duration{}
		}
		e = s.Estimate(j)
		s.estimates[j] = e
	}
	return e
}

// Estimate is how long one run of the job is expected to take; 0 when nothing says.
func (s *Scheduler) Estimate(j *framework.Job) time.Duration {
	if j.ExpectedRuntime > 0 {
		return j.ExpectedRuntime
	}
	class, shape := classOf(j)
	if h := s.history[class]; h != nil && h.estimate > 0 {
		return h.estimate
	}
	if h := s.history[shape]; h != nil {
		return h.estimate
	}
	return 0
}

// learnRuns follows the jobs that make progress: a run that ended since the last
// session (its job succeeded, or is gone) adds its runtime to its class's history; one
// that stopped otherwise (evicted, failed) is not learnt.
func (s *Session) learnRuns() {
	s.gen++
	now := s.Snap.Now
	for _, j := range s.Snap.Jobs {
		r, ok := s.runs[j.UID]
		switch {
		case j.Count(framework.TaskRunning) >= j.MinMember:
			if !ok {
				r = run{started: cmp.Or(j.StartedAt(), now)}
				r.class, r.shape = classOf(j)
			}
		case !ok:
			continue
		case j.Count(framework.TaskSucceeded) >= j.MinMember:
			s.learn(r, now)
			delete(s.runs, j.UID)
			continue
		default:
			r.interrupted = true
		}
		r.seen = s.gen
		s.runs[j.UID] = r
	}
	for uid, r := range s.runs {
		if r.seen != s.gen {
			s.learn(r, now)
			delete(s.runs, uid)
		}
	}
}

// learn adds a run that ended at end to its class's history.
func (s *Session) learn(r run, end time.Time) {
	d := end.Sub(r.started)
	if r.interrupted || d <= 0 {
		return
	}
	for _, key := range []string{r.class, r.shape} {
		h := s.history[key]
		if h == nil {
			h = &history{}
			s.history[key] = h
		}
		h.add(d)
	}
}

// reservedStart is when the job nodes are reserved for is expected to start: when the
// last task on its nodes is expected to end. Zero when a task there has no estimate.
func (s *Session) reservedStart(r *framework.Job) time.Time {
	if s.shadowFor == r {
		return s.shadow
	}
	s.shadowFor, s.shadow = r, time.Time{}
	var at time.Time
	for _, n := range s.Snap.Nodes {
		if n.Reserved != r {
			continue
		}
		for _, t := range n.Tasks {
			if t.Job == r {
				continue
			}
			e := s.estimate(t.Job)
			if e == 0 {
				return time.Time{}
			}
			start := t.StartTime
			if start.IsZero() {
				start = s.Snap.Now
			}
			if end := start.Add(e); end.After(at) {
				at = end
			}
		}
	}
	if at.Before(s.Snap.Now) {
		at = s.Snap.Now
	}
	s.shadow = at
	return at
}

// overran reports whether a job runs past its estimate.
func (s *Session) overran(j *framework.Job) bool {
	e := s.estimate(j)
	start := j.StartedAt()
	return e > 0 && !start.IsZero() && s.Snap.Now.Sub(start) > e
}
