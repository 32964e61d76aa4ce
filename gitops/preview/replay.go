package preview

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/sim"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// ReplayQueue is one queue's figures in a replay, averaged over seeds.
type ReplayQueue struct {
	Queue           string  `json:"queue"`
	MeanWaitSeconds float64 `json:"mean_wait_seconds"`
	P95WaitSeconds  float64 `json:"p95_wait_seconds"`
	MeanGPUs        float64 `json:"mean_gpus_held"`
}

// ReplaySide is what one version of the queues gives in the replay.
type ReplaySide struct {
	Queues      []ReplayQueue `json:"queues"`
	Preemptions float64       `json:"preemptions"`
	Starved     float64       `json:"jobs_starved"`
	// ScaleDown names the ScaleDownPolicy that removed the scenario's idle nodes;
	// empty: every node stayed on.
	ScaleDown string `json:"scale_down_policy,omitempty"`
	// GPUNodeHours are the GPU nodes paid for (present or booting), mean per run.
	GPUNodeHours float64 `json:"gpu_node_hours"`
	NodesRemoved float64 `json:"nodes_removed"`
	// ScaleDownEvictions are the pods evicted from removed nodes and LostGPUHours the
	// work every eviction threw away (since the job's last checkpoint), mean per run.
	ScaleDownEvictions float64 `json:"scale_down_evictions"`
	LostGPUHours       float64 `json:"lost_gpu_hours"`
}

// ReplayPreview is a built-in scenario replayed under the base's and the head's queues.
type ReplayPreview struct {
	Scenario string `json:"scenario"`
	Seeds    int    `json:"seeds"`
	// Scale multiplies the repository's GPU figures so that its deserved shares add up
	// to the scenario's cluster, as the scenario scales its own queues.
	Scale float64 `json:"scale"`
	// Objects are the objects head adds, removes or changes; none: no change.
	Objects []ObjectChange `json:"objects"`
	Base    ReplaySide     `json:"base"`
	Head    ReplaySide     `json:"head"`
}

// RunReplay replays the scenario for seeds (from sim.FirstSeed) with the base's and
// the head's queues in place of the scenario's, with the same job mix. Queue shares are
// proportions of a cluster, so the repository's GPU figures are scaled by the
// scenario's GPUs over the base's deserved GPUs (one factor for both sides, so a change
// of deserved shows); a job whose queue the repository lacks fails the run. A side's
// ScaleDownPolicy removes the scenario's idle nodes as Tessera's autoscaler would
// (autoscaling). With WithProgress, each side's replays report their jobs as they
// arrive.
func RunReplay(scenario string, base, head *trace.Manifests, profile string, cfg *scheduler.Config, seeds int, opts ...Option) (ReplayPreview, error) {
	o := options(opts)
	if err := CheckPolicies(context.Background(), base, head); err != nil {
		return ReplayPreview{}, err
	}
	p := ReplayPreview{Scenario: scenario, Seeds: seeds, Objects: Diff(base, head)}
	first, err := trace.BuildScenario(scenario, sim.FirstSeed)
	if err != nil {
		return p, err
	}
	deserved := int64(0)
	for _, q := range base.Queues {
		deserved += gpus(q.Spec.Deserved)
	}
	if deserved == 0 {
		return p, fmt.Errorf("--base: its queues deserve no GPUs, so they cannot be scaled to the scenario's cluster; give spec.deserved")
	}
	clusterGPUs := int64(0)
	for _, n := range first.Nodes {
		clusterGPUs += int64(n.GPUs)
	}
	p.Scale = float64(clusterGPUs) / float64(deserved)
	for _, side := range []struct {
		repo *trace.Manifests
		out  *ReplaySide
		name string
	}{{base, &p.Base, "--base"}, {head, &p.Head, "--head"}} {
		queues := scaledQueues(side.repo.Queues, p.Scale)
		as, err := autoscaling(side.repo)
		if err != nil {
			return p, fmt.Errorf("%s: %w", side.name, err)
		}
		var inputs []sim.ReplayInput
		jobs := 0
		for seed := int64(sim.FirstSeed); seed < int64(sim.FirstSeed+seeds); seed++ {
			s, err := trace.BuildScenario(scenario, seed)
			if err != nil {
				return p, err
			}
			in := sim.ScenarioInput(s)
			in.Queues = queues
			for _, j := range in.Jobs {
				if !slices.ContainsFunc(queues, func(q trace.QueueSpec) bool { return q.Name == j.Queue }) {
					return p, fmt.Errorf("%s: the scenario's jobs use queue %s, which the repository does not define", side.name, j.Queue)
				}
			}
			inputs = append(inputs, in)
			jobs += len(in.Jobs)
		}
		progress := o.progress(jobs, fmt.Sprintf("replaying %s (%s)", strings.TrimPrefix(side.name, "--"), plural(seeds, "seed")))
		var runs []report.Replay
		for i, in := range inputs {
			res, err := sim.RunReplay(sim.Replay{Input: in, Profile: profile, Config: cfg, Seed: int64(sim.FirstSeed + i), OnJob: func() { progress.Add(1) }, Autoscale: as})
			if err != nil {
				progress.Done()
				return p, fmt.Errorf("%s: %w", side.name, err)
			}
			runs = append(runs, *res.Replay)
		}
		progress.Done()
		*side.out = summarize(runs, queues)
		if as != nil {
			side.out.ScaleDown = as.Policy.Name
		}
	}
	return p, nil
}

// autoscaling is how a side's ScaleDownPolicy removes the scenario's nodes, nil when
// it has none that removes nodes (dryRun only reports). The scenario's nodes are not
// the cluster's, so the policy's settings apply to all of them and its nodeSelector to
// none; removed nodes come back after sim.DefaultBootDelay when work waits.
func autoscaling(m *trace.Manifests) (*sim.Autoscaling, error) {
	var active []string
	var pol *tesserav1.ScaleDownPolicy
	for i := range m.ScaleDownPolicies {
		if p := &m.ScaleDownPolicies[i]; !p.Spec.DryRun {
			active, pol = append(active, p.Name), p.DeepCopy()
		}
	}
	switch len(active) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%d ScaleDownPolicies remove nodes (%s), and the replay applies one to the scenario's nodes; preview a change to one of them with the others set to dryRun: true",
			len(active), strings.Join(active, ", "))
	}
	pol.Spec.NodeSelector = nil
	return &sim.Autoscaling{Rule: sim.RuleTessera, BootDelay: sim.DefaultBootDelay, Policy: pol}, nil
}

// plural is "1 seed", "3 seeds".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// gpus reads a resource list's GPUs (tessera.dev/gpu, else nvidia.com/gpu).
func gpus(rl corev1.ResourceList) int64 {
	for _, name := range []corev1.ResourceName{tesserav1.ResourceGPU, tesserav1.ResourceNvidiaGPU} {
		if q, ok := rl[name]; ok {
			return q.Value()
		}
	}
	return 0
}

// scaledQueues turns the repository's Queues into the scenario's queue specs, GPU
// figures multiplied by scale; a queue without a capability gets none (0).
func scaledQueues(queues []tesserav1.Queue, scale float64) []trace.QueueSpec {
	out := make([]trace.QueueSpec, 0, len(queues))
	for _, q := range queues {
		out = append(out, trace.QueueSpec{Name: q.Name, Weight: q.Spec.Weight, Reclaimable: q.Spec.Reclaimable == nil || *q.Spec.Reclaimable,
			DeservedGPUs: int64(float64(gpus(q.Spec.Deserved)) * scale), CapabilityGPUs: int64(float64(gpus(q.Spec.Capability)) * scale)})
	}
	return out
}

// summarize averages the runs' per-queue waits and holdings.
func summarize(runs []report.Replay, queues []trace.QueueSpec) ReplaySide {
	var side ReplaySide
	n := float64(len(runs))
	for _, q := range queues {
		rq := ReplayQueue{Queue: q.Name}
		for _, r := range runs {
			var waits []float64
			for i, w := range r.WaitSeconds {
				if i < len(r.WaitQueues) && r.WaitQueues[i] == q.Name {
					waits = append(waits, w)
				}
			}
			rq.MeanWaitSeconds += mean(waits) / n
			rq.P95WaitSeconds += report.Percentile(waits, 95) / n
			for _, s := range r.Queues {
				if s.Name == q.Name {
					rq.MeanGPUs += mean(s.AllocGPUs) / n
				}
			}
		}
		side.Queues = append(side.Queues, rq)
	}
	for _, r := range runs {
		side.Preemptions += float64(r.Preemptions) / n
		side.Starved += float64(r.JobsStarved) / n
		side.GPUNodeHours += r.GPUNodeHours / n
		side.NodesRemoved += float64(r.NodesRemoved) / n
		side.ScaleDownEvictions += float64(r.ScaleDownEvictions) / n
		side.LostGPUHours += r.LostGPUHours / n
	}
	return side
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// WriteText prints the per-queue waits and holdings, base → head.
func (p ReplayPreview) WriteText(w io.Writer) error {
	if err := writeObjectsText(w, p.Objects); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nreplay of the %s scenario, %d seed(s), the repository's GPU figures x%.3g:\n", p.Scenario, p.Seeds, p.Scale)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tMEAN WAIT\tP95 WAIT\tMEAN GPUS HELD")
	for _, r := range p.rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "preemptions: %s; jobs starved: %s\n%s", change(p.Base.Preemptions, p.Head.Preemptions), change(p.Base.Starved, p.Head.Starved), p.scaleDownLine())
	return err
}

// scaleDownLine says what each side's ScaleDownPolicy removed and what it cost, or
// nothing when neither side removes nodes.
func (p ReplayPreview) scaleDownLine() string {
	if p.Base.ScaleDown == "" && p.Head.ScaleDown == "" {
		return ""
	}
	policy := func(s ReplaySide) string {
		if s.ScaleDown == "" {
			return "none (every node on)"
		}
		return s.ScaleDown
	}
	by := policy(p.Base)
	if h := policy(p.Head); h != by {
		by += " → " + h
	}
	return fmt.Sprintf("scale-down by %s, its settings on every node of the scenario: GPU-node-hours %s; nodes removed %s; pods evicted by scale-down %s; GPU-hours of work lost to evictions %s\n",
		by, change(p.Base.GPUNodeHours, p.Head.GPUNodeHours), change(p.Base.NodesRemoved, p.Head.NodesRemoved),
		change(p.Base.ScaleDownEvictions, p.Head.ScaleDownEvictions), change(p.Base.LostGPUHours, p.Head.LostGPUHours))
}

// WriteMarkdown prints the same as WriteText as a markdown table.
func (p ReplayPreview) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	writeObjectsMarkdown(&b, p.Objects)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n#### Replay of the `%s` scenario (%d seeds, GPU figures x%.3g)\n\n| queue | mean wait | p95 wait | mean GPUs held |\n|---|---|---|---|\n", p.Scenario, p.Seeds, p.Scale)
	for _, r := range p.rows() {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", r[0], r[1], r[2], r[3])
	}
	_, err := fmt.Fprintf(w, "\npreemptions: %s; jobs starved: %s\n%s", change(p.Base.Preemptions, p.Head.Preemptions), change(p.Base.Starved, p.Head.Starved), p.scaleDownLine())
	return err
}

// rows pairs the queues of both sides by name (a queue one side lacks reads as –).
func (p ReplayPreview) rows() [][4]string {
	var names []string
	for _, q := range append(slices.Clone(p.Base.Queues), p.Head.Queues...) {
		if !slices.Contains(names, q.Queue) {
			names = append(names, q.Queue)
		}
	}
	slices.Sort(names)
	find := func(qs []ReplayQueue, name string) *ReplayQueue {
		for i := range qs {
			if qs[i].Queue == name {
				return &qs[i]
			}
		}
		return nil
	}
	var out [][4]string
	for _, name := range names {
		b, h := find(p.Base.Queues, name), find(p.Head.Queues, name)
		out = append(out, [4]string{name, durationChange(b, h, func(q *ReplayQueue) float64 { return q.MeanWaitSeconds }),
			durationChange(b, h, func(q *ReplayQueue) float64 { return q.P95WaitSeconds }),
			valueChange(b, h, func(q *ReplayQueue) float64 { return q.MeanGPUs })})
	}
	return out
}

// durationChange prints a wait in base and head, "–" for a side without the queue.
func durationChange(b, h *ReplayQueue, f func(*ReplayQueue) float64) string {
	d := func(q *ReplayQueue) string {
		if q == nil {
			return "–"
		}
		return minutes(time.Duration(f(q) * float64(time.Second)))
	}
	if b != nil && h != nil && d(b) == d(h) {
		return d(b)
	}
	return d(b) + " → " + d(h)
}

// valueChange prints a number in base and head, "–" for a side without the queue.
func valueChange(b, h *ReplayQueue, f func(*ReplayQueue) float64) string {
	switch {
	case b == nil:
		return "– → " + trim(f(h))
	case h == nil:
		return trim(f(b)) + " → –"
	}
	return change(f(b), f(h))
}

// minutes prints d to the minute: "0m", "18m", "1h47m".
func minutes(d time.Duration) string {
	s := strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	if s == "" {
		return "0m"
	}
	return s
}
