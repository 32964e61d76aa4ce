package autoscale

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// NodeState is what the API objects say about a GPU node beyond the snapshot.
type NodeState struct {
	// GPUsReady is set once the node agent reported the node's GPUs (its GPUNode
	// exists); a node whose GPUs are not ready is never idle.
	GPUsReady bool
	// LastActive is the last time any of its GPUs was above the utilization threshold
	// (GPUNode status.lastActiveTime); zero when unknown.
	LastActive time.Time
	// Blocker is the first rule that keeps the node (NodeBlocker), nil when none.
	Blocker *Blocker
	// Group is the node group (MachineDeployment) the node belongs to, "" for none.
	Group string
	// InProgress is set while the node is being scaled down.
	InProgress bool
	// Removed is set once the node's scale-down finished (its Machine is marked for
	// deletion and its group lowered, or, without one, it is left cordoned): it is no
	// longer counted as selected, nor as in progress.
	Removed bool
	// CountFrom is where the idle count starts for a node the planner sees for the
	// first time (a one-shot plan reads it from the GPUNode); zero: now.
	CountFrom time.Time
	// Ignored are the UIDs of tasks a drain leaves alone (DaemonSet and mirror pods) or
	// that are terminating already: they end with the node.
	Ignored map[string]bool
}

// Group is a node group with a size floor (a MachineDeployment and its
// cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size annotation).
type Group struct {
	Replicas int
	MinSize  int
}

// Cluster is everything one planning round reads.
type Cluster struct {
	Snap *framework.Snapshot
	// Nodes holds the state of each GPU node by name; a node missing here has no GPUNode.
	Nodes  map[string]NodeState
	Groups map[string]Group
	// LastScaleUp is when a node last joined the cluster: the cooldown runs from it, so
	// that a node added for pending work is not removed before that work reaches it.
	// Zero: none is known.
	LastScaleUp time.Time
}

// Decision is the verdict on one GPU node.
type Decision struct {
	Node      string     `json:"node"`
	GPUModel  string     `json:"gpuModel,omitempty"`
	GPUs      int        `json:"gpus"`
	Candidate bool       `json:"candidate"`
	Method    string     `json:"method,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Message   string     `json:"message"`
	IdleSince *time.Time `json:"idleSince,omitempty"`
}

// Plan is what a planning round decided; it changes nothing by itself.
type Plan struct {
	Policy string    `json:"policy"`
	Now    time.Time `json:"now"`
	DryRun bool      `json:"dryRun"`
	// HeadroomGPUs is the GPUs of recent demand the empty nodes are kept for: what
	// workloads created within bootTime hold on the policy's nodes, less what its busy
	// nodes have free (0 when that is negative, or the headroom is off).
	HeadroomGPUs float64    `json:"headroomGPUs"`
	Nodes        []Decision `json:"nodes"`
}

// Candidates are the nodes to scale down, by name.
func (p *Plan) Candidates() []Decision {
	var out []Decision
	for _, d := range p.Nodes {
		if d.Candidate {
			out = append(out, d)
		}
	}
	return out
}

// Planner decides which GPU nodes to remove. It remembers, per node, since when each
// method's condition has held; after a restart it starts counting again, which only
// delays a scale-down. It is not safe for concurrent use.
type Planner struct {
	Policy  Policy
	Sched   *scheduler.Scheduler
	Methods []Method
	// Queues enables the gang and queue rules: a node that a pending gang within its
	// queue's deserved share could use is kept, and removals never leave less GPU than
	// the queues' work asks for of their deserved shares. Off, only the node's own pods
	// must fit elsewhere.
	Queues bool
	since  map[string]map[string]time.Time // method -> node -> since
	// only, when set, restricts the candidates to this node (Revalidate).
	only string
}

// NewPlanner returns a planner with the Empty and (when the policy sets an underused
// share) Underused methods and the gang and queue rules on.
func NewPlanner(p Policy, s *scheduler.Scheduler) *Planner {
	ms := []Method{Empty{}}
	if p.UnderusedShare > 0 {
		ms = append(ms, Underused{Share: p.UnderusedShare})
	}
	return &Planner{Policy: p, Sched: s, Methods: ms, Queues: true}
}

// Inherit carries over from old, the planner of the policy's previous generation, since
// when each node has held each method's condition, so that editing a policy does not
// restart every node's idle clock.
func (pl *Planner) Inherit(old *Planner) { pl.since = old.since }

type candidate struct {
	n      *framework.Node
	d      *Decision
	method Method
	since  time.Time
}

// Plan decides, for every GPU node the policy selects, whether it is a candidate.
func (pl *Planner) Plan(c *Cluster) *Plan {
	snap, now, pol := c.Snap, c.Snap.Now, pl.Policy
	plan := &Plan{Policy: pol.Name, Now: now, DryRun: pol.DryRun}
	if pl.since == nil {
		pl.since = map[string]map[string]time.Time{}
	}
	var cands []candidate
	var decisions []*Decision
	var rows []planRow
	inProgress, selected := 0, 0
	groupGone := map[string]int{}
	seen := map[string]bool{}
	for _, n := range snap.Nodes {
		if len(n.GPUs) == 0 || !pol.Selector.Matches(labelSet(n.Labels)) {
			continue
		}
		seen[n.Name] = true
		st, ok := c.Nodes[n.Name]
		d := &Decision{Node: n.Name, GPUModel: n.GPUModel, GPUs: len(n.GPUs)}
		decisions = append(decisions, d)
		if st.Removed {
			d.Reason, d.Message = ReasonRemoved, "scaled down; waiting for the node to go"
			continue
		}
		if st.InProgress {
			inProgress++
			groupGone[st.Group]++
			d.Reason, d.Message = ReasonInProgress, "being scaled down"
			continue
		}
		selected++
		var best candidate
		for _, m := range pl.Methods {
			since := pl.track(m, n, now, st.CountFrom)
			if ok && !st.LastActive.IsZero() && st.LastActive.After(since) && !since.IsZero() {
				since = st.LastActive
			}
			if since.IsZero() || best.method != nil {
				continue
			}
			best = candidate{n: n, d: d, method: m, since: since}
		}
		rows = append(rows, planRow{n: n, st: st, ready: ok && st.GPUsReady, best: best, d: d})
	}
	head := pl.headroom(rows, now)
	plan.HeadroomGPUs = head.gpus()
	for _, r := range rows {
		n, st, d, best := r.n, r.st, r.d, r.best
		wait := pol.IdleAfter
		if head.surplus[n.Name] {
			wait = pol.SurplusAfter // shorter: headroom keeps every node otherwise
		}
		switch {
		case !r.ready:
			d.Reason, d.Message = ReasonNotReady, "GPUs not reported by the node agent yet (no GPUNode)"
		case best.method == nil:
			d.Reason, d.Message = ReasonNotIdle, describeBusy(n)
		case now.Sub(best.since) < wait:
			t := best.since
			d.IdleSince = &t
			d.Reason, d.Message = ReasonNotIdle, fmt.Sprintf("%s for %s of %s%s", best.method.Name(), now.Sub(best.since).Round(time.Second), wait, head.why(n.Name))
		case pl.only != "" && n.Name != pl.only:
			d.Reason, d.Message = ReasonNotIdle, "not re-validated"
		case st.Blocker != nil:
			t := best.since
			d.IdleSince, d.Method = &t, best.method.Name()
			d.Reason, d.Message = st.Blocker.Reason, st.Blocker.Message
		case waitsForCheckpoint(n, now, d):
			t := best.since
			d.IdleSince, d.Method = &t, best.method.Name()
		default:
			t := best.since
			d.IdleSince, d.Method = &t, best.method.Name()
			cands = append(cands, best)
		}
	}
	for _, m := range pl.Methods {
		for name := range pl.since[m.Name()] {
			if !seen[name] {
				delete(pl.since[m.Name()], name)
			}
		}
	}
	order := map[string]int{}
	for i, m := range pl.Methods {
		order[m.Name()] = i
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(order[a.method.Name()], order[b.method.Name()]), a.since.Compare(b.since), cmp.Compare(a.n.Name, b.n.Name))
	})
	pl.choose(c, cands, inProgress, selected, groupGone)
	for _, d := range decisions {
		plan.Nodes = append(plan.Nodes, *d)
	}
	slices.SortFunc(plan.Nodes, func(a, b Decision) int { return cmp.Compare(a.Node, b.Node) })
	return plan
}

// Revalidate plans again for node, which is being scaled down, as if it were not: the
// decision says whether it is still a candidate. The cooldown and maxParallel do not
// apply (the node holds its slot already), and no other node is chosen besides it.
func (pl *Planner) Revalidate(c *Cluster, node string) Decision {
	cc := *c
	cc.Nodes = maps.Clone(c.Nodes)
	st := cc.Nodes[node]
	st.InProgress = false
	cc.Nodes[node] = st
	cc.LastScaleUp = time.Time{}
	rv := *pl
	rv.Policy.MaxParallel = math.MaxInt
	rv.only = node
	for _, d := range rv.Plan(&cc).Nodes {
		if d.Node == node {
			return d
		}
	}
	return Decision{Node: node, Reason: ReasonNotReady, Message: "no longer a GPU node of the policy"}
}

// Keep reports why node, which is being drained, must stay after all: a pending gang
// within its queue's deserved share needs it, a pod still on it fits on no other node,
// or the queues' deserved GPUs would no longer be left. nil: removing it is still safe.
func (pl *Planner) Keep(c *Cluster, node string) *Blocker {
	var n *framework.Node
	for _, x := range c.Snap.Nodes {
		if x.Name == node {
			n = x
		}
	}
	if n == nil {
		return nil
	}
	return pl.fits(c, []string{node}, n, pl.bound(c, nil))
}

// track updates since when m's condition has held on n and returns it (zero: not now).
func (pl *Planner) track(m Method, n *framework.Node, now, from time.Time) time.Time {
	byNode := pl.since[m.Name()]
	if byNode == nil {
		byNode = map[string]time.Time{}
		pl.since[m.Name()] = byNode
	}
	if !m.Holds(n) {
		delete(byNode, n.Name)
		return time.Time{}
	}
	s, ok := byNode[n.Name]
	if !ok {
		s = now
		if !from.IsZero() && from.Before(now) {
			s = from
		}
		byNode[n.Name] = s
	}
	return s
}

func describeBusy(n *framework.Node) string {
	pods, milli := 0, int64(0)
	for _, t := range n.Tasks {
		if t.GPU.Any() {
			pods++
			milli += int64(t.GPUs.Len()) * t.GPUMilli
		}
	}
	return fmt.Sprintf("%d GPU pods hold %.1f of %d GPUs", pods, float64(milli)/framework.MilliPerGPU, len(n.GPUs))
}

// choose applies the cluster-wide rules in candidate order, then asks the scheduler
// whether the chosen nodes' pods and the pending gangs still fit without them.
func (pl *Planner) choose(c *Cluster, cands []candidate, inProgress, selected int, groupGone map[string]int) {
	pol, now := pl.Policy, c.Snap.Now
	if len(cands) == 0 {
		return
	}
	var baseline *baseline
	var chosen []string
	until := c.LastScaleUp.Add(pol.Cooldown)
	for _, cd := range cands {
		d, st := cd.d, c.Nodes[cd.n.Name]
		if !c.LastScaleUp.IsZero() && now.Before(until) {
			d.Reason, d.Message = ReasonCooldown, fmt.Sprintf("cooldown after a node joined the cluster until %s", until.UTC().Format(time.RFC3339))
			continue
		}
		if inProgress+len(chosen) >= pol.MaxParallel {
			d.Reason, d.Message = ReasonMaxParallel, fmt.Sprintf("%d nodes already being scaled down (maxParallel %d)", inProgress+len(chosen), pol.MaxParallel)
			continue
		}
		if selected-len(chosen)-1 < pol.MinNodes {
			d.Reason, d.Message = ReasonMinNodes, fmt.Sprintf("%d selected nodes left would fall below minNodes %d", selected-len(chosen)-1, pol.MinNodes)
			continue
		}
		if g, ok := c.Groups[st.Group]; ok && st.Group != "" && g.Replicas-groupGone[st.Group]-1 < g.MinSize {
			d.Reason, d.Message = ReasonMinSize, fmt.Sprintf("node group %s at %d replicas may not go below its min size %d", st.Group, g.Replicas-groupGone[st.Group], g.MinSize)
			continue
		}
		if baseline == nil {
			baseline = pl.bound(c, nil)
		}
		if b := pl.fits(c, append(slices.Clip(chosen), cd.n.Name), cd.n, baseline); b != nil {
			d.Reason, d.Message = b.Reason, b.Message
			continue
		}
		chosen = append(chosen, cd.n.Name)
		groupGone[st.Group]++
		d.Candidate, d.Reason = true, ""
		d.Message = fmt.Sprintf("%s for %s", cd.method.Name(), now.Sub(cd.since).Round(time.Second))
	}
}

// baseline is what the next session would decide with every node kept: the tasks it
// would bind per job, and the GPUs (milli) each queue deserves, as the core's
// queue-share rule says (none without one).
type baseline struct {
	bound    map[*framework.Job]int
	deserved map[*framework.Queue]int64
}

// bound runs a what-if without the named nodes and counts, per job, the tasks the
// session would bind, and asks the core what each queue deserves.
func (pl *Planner) bound(c *Cluster, without []string) *baseline {
	out := &baseline{bound: map[*framework.Job]int{}, deserved: map[*framework.Queue]int64{}}
	pl.Sched.WhatIf(c.Snap, func(s *framework.Snapshot) { pl.remove(c, s, without) }, func(s *framework.Snapshot, r *scheduler.Result) {
		for _, b := range r.Bindings {
			out.bound[b.Task.Job]++
		}
		for _, q := range s.Queues {
			if sh, ok := pl.Sched.Share(q); ok {
				out.deserved[q] = sh.Deserved.GPU
			}
		}
	})
	return out
}

// remove takes the nodes out of s; the tasks a drain would leave alone end with them.
func (pl *Planner) remove(c *Cluster, s *framework.Snapshot, names []string) []*framework.Task {
	var moved []*framework.Task
	var ignored []map[string]bool // gathered once: a what-if removes many tasks from few of many nodes
	for _, st := range c.Nodes {
		if len(st.Ignored) > 0 {
			ignored = append(ignored, st.Ignored)
		}
	}
	for _, t := range s.RemoveNodes(names...) {
		if t.Node == nil && slices.ContainsFunc(ignored, func(m map[string]bool) bool { return m[t.UID] }) {
			t.Status = framework.TaskSucceeded
			continue
		}
		moved = append(moved, t)
	}
	return moved
}

// fits reports why removing the nodes in without (the last being n) is not safe: a
// displaced pod that no other node takes without evicting anyone, a job the next
// session would place that no longer fits, a pending gang within its queue's deserved
// share that n could serve, or less GPU left than the queues deserve. nil: safe.
func (pl *Planner) fits(c *Cluster, without []string, n *framework.Node, base *baseline) *Blocker {
	if pl.Queues {
		if j := neededByGang(c.Snap, n, base); j != nil {
			return &Blocker{ReasonNeededByGang, fmt.Sprintf("pending job %s waits within queue %s's deserved share and could use this node", j.Key(), j.Queue.Name)}
		}
	}
	var why *Blocker
	var moved []*framework.Task
	pl.Sched.WhatIf(c.Snap, func(s *framework.Snapshot) {
		moved = pl.remove(c, s, without)
	}, func(s *framework.Snapshot, r *scheduler.Result) {
		if pl.Queues {
			if why = pl.deservedLeft(s); why != nil {
				return
			}
		}
		if len(r.Evictions) > 0 {
			why = &Blocker{ReasonNoPlace, fmt.Sprintf("its pods would fit only by evicting %s", r.Evictions[0].Task.Key())}
			return
		}
		got := map[*framework.Job]int{}
		placed := map[*framework.Task]bool{}
		for _, b := range r.Bindings {
			got[b.Task.Job]++
			placed[b.Task] = true
		}
		for _, t := range moved {
			if !placed[t] {
				why = &Blocker{ReasonNoPlace, fmt.Sprintf("pod %s fits on no other node", t.Key())}
				return
			}
		}
		if !pl.Queues {
			return
		}
		for _, j := range sortedJobs(base.bound) {
			if got[j] < base.bound[j] {
				why = &Blocker{ReasonNeededByGang, fmt.Sprintf("pending job %s would no longer fit", j.Key())}
				return
			}
		}
	})
	return why
}

func sortedJobs(m map[*framework.Job]int) []*framework.Job {
	out := make([]*framework.Job, 0, len(m))
	for j := range m {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *framework.Job) int { return cmp.Compare(a.Key(), b.Key()) })
	return out
}

// neededByGang finds an admitted job that waits within its queue's deserved GPU share,
// that the next session would not place either, and that n could serve (one of its
// tasks fits n's GPUs when empty): removing n would lengthen its wait.
func neededByGang(snap *framework.Snapshot, n *framework.Node, base *baseline) *framework.Job {
	for _, j := range snap.Jobs {
		q := j.Queue
		if q == nil || !j.Inqueue || base.bound[j] > 0 || j.Count(framework.TaskPending) == 0 || base.deserved[q] <= 0 {
			continue
		}
		var want int64
		var shape *framework.Task
		for _, t := range j.Tasks {
			if t.Status == framework.TaskPending && t.GPU.Any() {
				want += t.GPU.NominalMilli(snap.MaxGPUMemoryMiB)
				shape = t
			}
		}
		if shape == nil || q.Allocated.GPU+want > base.deserved[q] || !servable(shape, n) {
			continue
		}
		return j
	}
	return nil
}

// servable reports whether t's GPU request fits n's GPUs with nothing else on them.
func servable(t *framework.Task, n *framework.Node) bool {
	if len(t.GPU.Models) > 0 && !slices.Contains(t.GPU.Models, n.GPUModel) {
		return false
	}
	if t.GPU.Count > 0 {
		return t.GPU.Count <= len(n.GPUs)
	}
	for i := range n.GPUs {
		g := n.GPUs[i]
		g.UsedMilli = 0
		if framework.FitsGPU(&t.GPU, &g) {
			return true
		}
	}
	return false
}

// deservedLeft is nil when the schedulable GPUs left in s, a what-if snapshot after
// its session, still cover what the root queues deserve, as the core's queue-share
// rule counts it: each queue's deserved GPUs up to what its jobs hold and wait for. A
// deserved share is a guarantee under contention, not capacity to keep idle: a queue
// without work lends its share out, and when its work comes the nodes come back
// (scale-up), as they would for any other pending work.
func (pl *Planner) deservedLeft(s *framework.Snapshot) *Blocker {
	var left, needed int64
	for _, n := range s.Nodes {
		if !n.Unschedulable {
			left += int64(len(n.GPUs)) * framework.MilliPerGPU
		}
	}
	for _, q := range s.Queues {
		if sh, ok := pl.Sched.Share(q); ok && q.Parent == nil {
			needed += sh.Deserved.GPU
		}
	}
	if needed > left {
		return &Blocker{ReasonDeserved, fmt.Sprintf("the queues' work asks for %d GPUs of their deserved shares; only %d would be left", needed/framework.MilliPerGPU, left/framework.MilliPerGPU)}
	}
	return nil
}
