package scheduler

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// numFeasibleToFind bounds how many feasible nodes are scored per task, as
// kube-scheduler's percentageOfNodesToScore: all nodes up to 100, then an adaptive
// percentage (50% minus 1% per 125 nodes, at least 5%), never fewer than 100.
func (s *Session) numFeasibleToFind(total int) int {
	pct := s.cfg.PercentageOfNodesToScore
	if pct <= 0 {
		pct = max(50-total/125, 5)
	}
	if total <= 100 || pct >= 100 {
		return total
	}
	return max(total*pct/100, 100)
}

// fits runs the filters.
func (s *Session) fits(t *framework.Task, n *framework.Node) framework.FitCode {
	if r := n.Reserved; r != nil && r != t.Job && !s.mayUseReserved(t.Job, r) {
		return framework.FitReserved
	}
	for _, f := range s.filters {
		if c := f.Filter(t, n); c != framework.FitOK {
			return c
		}
	}
	return framework.FitOK
}

// selectNode finds the best node among candidates for t, scoring at most
// numFeasibleToFind feasible nodes from a rotating start; ties are broken at random.
func (s *Session) selectNode(t *framework.Task, candidates []*framework.Node, all bool, stats *framework.FitStats) (*framework.Node, framework.GPUSet) {
	total := len(candidates)
	if total == 0 {
		return nil, 0
	}
	want := s.numFeasibleToFind(total)
	start := 0
	if all {
		start = s.next % total
	}
	var (
		best      *framework.Node
		bestGPUs  framework.GPUSet
		bestScore float64
		ties      int
		found     int
		i         int
	)
	for i = 0; i < total && found < want; i++ {
		n := candidates[(start+i)%total]
		code := s.fits(t, n)
		if stats != nil {
			stats.Add(code)
		}
		if code != framework.FitOK {
			continue
		}
		score := 0.0
		var gpus framework.GPUSet
		ok := true
		switch {
		case s.placer != nil:
			var gs float64
			gpus, gs, ok = s.placer.PlaceGPUs(t, n)
			if ok && !t.GPU.Matches(n, gpus) { // (a placer that knows no claim constraints)
				gpus = framework.PickGPUs(&t.GPU, n)
				ok = gpus != 0
			}
			score += s.placerWeight * gs
		case t.GPU.Any():
			gpus = framework.PickGPUs(&t.GPU, n)
			ok = gpus != 0
		}
		if !ok {
			if stats != nil {
				stats.Counts[framework.FitOK]--
				stats.Counts[framework.FitGPUMemory]++
			}
			continue
		}
		found++
		for _, sc := range s.scorers {
			score += sc.weight * sc.ScoreNode(t, n)
		}
		switch {
		case best == nil || score > bestScore:
			best, bestGPUs, bestScore, ties = n, gpus, score, 1
		case score == bestScore && !s.firstTie:
			ties++
			if s.rng.IntN(ties) == 0 {
				best, bestGPUs = n, gpus
			}
		}
	}
	if all {
		s.next = start + i
	}
	return best, bestGPUs
}

// shapeKey identifies tasks that fit exactly the same nodes; tasks with node
// constraints get no key.
type shapeKey struct {
	cpu, mem, pods, milli, memMiB int64
	count                         int
	models                        string
	// tolerations is tolerationsKey of the task's tolerations.
	tolerations string
	// yields, holder and ends are set while nodes are reserved (see Session.fits).
	yields, holder, ends bool
}

func keyOf(t *framework.Task) (shapeKey, bool) {
	if t.HasNodeConstraints() || t.Request.Scalar != nil {
		return shapeKey{}, false
	}
	k := shapeKey{cpu: t.Request.MilliCPU, mem: t.Request.Memory, pods: t.Request.Pods, milli: t.GPU.Milli, memMiB: t.GPU.MemoryMiB, count: t.GPU.Count,
		tolerations: tolerationsKey(t.Tolerations)}
	if len(t.GPU.Models) > 0 {
		k.models = fmt.Sprint(t.GPU.Models)
	}
	return k, true
}

// tolerationsKey spells out what of the tolerations decides which taints they
// tolerate (not how long: tolerationSeconds does not change where a task fits), so
// that pods alike, which the API server gives the same default tolerations, share a key.
func tolerationsKey(ts []corev1.Toleration) string {
	if len(ts) == 0 {
		return ""
	}
	var b strings.Builder
	for i := range ts {
		t := &ts[i]
		b.WriteString(t.Key)
		b.WriteByte(0)
		b.WriteString(string(t.Operator))
		b.WriteByte(0)
		b.WriteString(t.Value)
		b.WriteByte(0)
		b.WriteString(string(t.Effect))
		b.WriteByte(0)
	}
	return b.String()
}

// placeTasks places the job's pending tasks on candidates in st and returns how many
// were placed and the fit statistics of the first task that did not fit.
func (s *Session) placeTasks(j *framework.Job, st *Statement, candidates []*framework.Node, all, pipelined bool) (int, *framework.FitStats, string) {
	placed := 0
	var firstFail *framework.FitStats
	queueMsg := ""
	for _, t := range j.Tasks {
		if t.Status != framework.TaskPending || s.evicted[t] {
			continue
		}
		key, cacheable := keyOf(t)
		if s.reservedFor != nil {
			// Reserved nodes take some jobs and not others.
			key.yields, key.holder, key.ends = yields(j, s.reservedFor), j == s.reservedFor, s.endsBefore(j, s.reservedFor)
		}
		if cacheable && all && s.unfit[key] {
			if firstFail == nil {
				firstFail = s.unfitStats[key]
			}
			continue
		}
		if q := j.Queue; q != nil && s.admission != nil {
			req := t.Request
			req.GPU = t.GPU.NominalMilli(s.Snap.MaxGPUMemoryMiB)
			if ok, msg := s.admission.Admit(q, &req); !ok {
				queueMsg = msg
				break
			}
		}
		var stats *framework.FitStats
		if firstFail == nil {
			stats = &framework.FitStats{}
		}
		n, gpus := s.selectNode(t, candidates, all, stats)
		if n == nil {
			if firstFail == nil {
				firstFail = stats
			}
			// Only a failure against committed allocations holds for the rest of the
			// session: this job's tentative placements may yet be rolled back.
			if cacheable && all && placed == 0 {
				s.unfit[key] = true
				s.unfitStats[key] = stats
			}
			continue
		}
		milli := int64(0)
		if gpus != 0 {
			milli = t.GPU.MilliOn(&n.GPUs[gpus.Indices()[0]])
		}
		// A memory slice takes a larger share of a smaller GPU than the estimate admitted.
		if q := j.Queue; q != nil && s.admission != nil && int64(gpus.Len())*milli > t.GPU.NominalMilli(s.Snap.MaxGPUMemoryMiB) {
			req := t.Request
			req.GPU = int64(gpus.Len()) * milli
			if ok, msg := s.admission.Admit(q, &req); !ok {
				queueMsg = msg
				break
			}
		}
		st.Allocate(t, n, gpus, milli, pipelined)
		placed++
	}
	return placed, firstFail, queueMsg
}

// holding counts the job's tasks that hold (or held, having finished) resources.
func holding(j *framework.Job) int {
	return j.Count(framework.TaskAllocated, framework.TaskRunning, framework.TaskReleasing, framework.TaskSucceeded)
}

// tryJob places the job all-or-nothing (minAvailable tasks at least) and commits it.
// Without success it leaves the snapshot as it was and sets the job's pending reason.
func (s *Session) tryJob(j *framework.Job, pipelined bool) bool {
	st := s.NewStatement()
	if !s.placeJob(j, st, pipelined) {
		return false
	}
	st.Commit()
	return true
}

// placeJob adds the job's placement to st, or adds nothing and sets the pending reason.
func (s *Session) placeJob(j *framework.Job, st *Statement, pipelined bool) bool {
	mark := st.mark()
	need := s.minAvailable(j)
	have := holding(j)
	pending := j.Count(framework.TaskPending)
	if pending == 0 {
		return have >= need
	}
	if have+pending < need {
		j.Pending = &framework.Reason{Code: framework.ReasonGangPodsMissing,
			Message: fmt.Sprintf("%d of %d pods exist; the gang waits for the rest to be created", have+pending, need)}
		return false
	}
	if level := topologyLevel(j); level != "" && need-have > 1 {
		for _, nodes := range s.domainsBySize(level, j) {
			placed, stats, queueMsg := s.placeTasks(j, st, nodes, false, pipelined)
			if have+placed >= need {
				s.explainLeftover(j, placed, pending, stats, queueMsg)
				return true
			}
			st.rollback(mark)
		}
		if j.Topology.Required != "" {
			j.Pending = &framework.Reason{Code: framework.ReasonTopology,
				Message: fmt.Sprintf("gang needs %d x %s within one %s; no domain fits", need-have, describeTask(firstPending(j)), level)}
			return false
		}
	}
	placed, stats, queueMsg := s.placeTasks(j, st, s.Snap.Nodes, true, pipelined)
	if have+placed >= need {
		s.explainLeftover(j, placed, pending, stats, queueMsg)
		return true
	}
	st.rollback(mark)
	switch {
	case queueMsg != "":
		j.Pending = &framework.Reason{Code: framework.ReasonQueueCapability, Message: queueMsg}
	case need > 1:
		j.Pending = &framework.Reason{Code: framework.ReasonGangIncomplete,
			Message: fmt.Sprintf("gang needs %d x %s, only %d fit together; %s", need-have, describeTask(firstPending(j)), placed, statsString(stats))}
	default:
		j.Pending = &framework.Reason{Code: framework.ReasonUnschedulable,
			Message: fmt.Sprintf("%s does not fit: %s", describeTask(firstPending(j)), statsString(stats))}
	}
	return false
}

// explainLeftover gives a job that runs but keeps pending tasks beyond its gang the
// reason the first of them did not fit.
func (s *Session) explainLeftover(j *framework.Job, placed, pending int, stats *framework.FitStats, queueMsg string) {
	if placed >= pending {
		return
	}
	if queueMsg != "" {
		j.Pending = &framework.Reason{Code: framework.ReasonQueueCapability, Message: queueMsg}
		return
	}
	j.Pending = &framework.Reason{Code: framework.ReasonUnschedulable,
		Message: fmt.Sprintf("%d of %d pending pods placed; %s does not fit: %s", placed, pending, describeTask(firstPending(j)), statsString(stats))}
}

func statsString(s *framework.FitStats) string {
	if s == nil {
		return "no node fits"
	}
	return s.String()
}

func firstPending(j *framework.Job) *framework.Task {
	for _, t := range j.Tasks {
		if t.Status == framework.TaskPending {
			return t
		}
	}
	return j.Tasks[0]
}

// describeTask renders a task's size for messages: "8 GPUs", "20000MiB GPU slice", "0.5 GPU".
func describeTask(t *framework.Task) string {
	switch {
	case t.GPU.Count == 1:
		return "1 GPU"
	case t.GPU.Count > 1:
		return fmt.Sprintf("%d GPUs", t.GPU.Count)
	case t.GPU.MemoryMiB > 0:
		return fmt.Sprintf("%dMiB GPU slice", t.GPU.MemoryMiB)
	case t.GPU.Milli > 0:
		return framework.FormatGPU(t.GPU.Milli) + " GPU"
	}
	return "pod (" + t.Request.String() + ")"
}

func topologyLevel(j *framework.Job) string {
	if j.Topology.Required != "" {
		return j.Topology.Required
	}
	return j.Topology.Preferred
}

// domainsBySize groups nodes by their value of the level label and returns the groups,
// the ones with the least free GPU capacity that could still hold the gang first (so
// large domains stay free for large gangs).
func (s *Session) domainsBySize(level string, j *framework.Job) [][]*framework.Node {
	groups := map[string][]*framework.Node{}
	var order []string
	for _, n := range s.Snap.Nodes {
		v, ok := n.Labels[level]
		if !ok {
			continue
		}
		if _, seen := groups[v]; !seen {
			order = append(order, v)
		}
		groups[v] = append(groups[v], n)
	}
	var need int64
	for _, t := range j.Tasks {
		if t.Status == framework.TaskPending {
			need += t.GPU.NominalMilli(s.Snap.MaxGPUMemoryMiB)
		}
	}
	free := func(nodes []*framework.Node) int64 {
		var f int64
		for _, n := range nodes {
			f += n.FreeGPUMilli()
		}
		return f
	}
	out := make([][]*framework.Node, 0, len(order))
	for _, v := range order {
		if free(groups[v]) >= need {
			out = append(out, groups[v])
		}
	}
	slices.SortStableFunc(out, func(a, b []*framework.Node) int {
		fa, fb := free(a), free(b)
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	})
	return out
}
