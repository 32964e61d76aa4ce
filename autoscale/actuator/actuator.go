package actuator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"

	"github.com/tessera-gpu/tessera/internal/controller"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/cache"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// Options tune the actuator.
type Options struct {
	// Scheduler is the configuration the cluster's scheduler runs; the planner's
	// what-if uses it to decide whether pods fit elsewhere.
	Scheduler scheduler.Config
	// RevalidateAfter is the wait between tainting a candidate and planning again
	// before it is cordoned; default 30s.
	RevalidateAfter time.Duration
	// StepTimeout bounds each phase from Draining on: a drain that a
	// PodDisruptionBudget keeps refusing, or a Machine that cannot be marked or its
	// group lowered, fails the scale-down after it, which is then undone; default 10m.
	StepTimeout time.Duration
	// MarkSettle is the wait between marking a node's Machine for deletion and
	// lowering its group: Cluster API's MachineSet picks the Machine it deletes from its
	// informer cache, which may lag the mark (after an API server restart, for seconds),
	// and then deletes another Machine, whose node may run work that may not move;
	// default DefaultMarkSettle.
	MarkSettle time.Duration
	// Clock is the time source; default the real clock.
	Clock clock.PassiveClock
	// Workloads are the workload kinds whose objects size gangs, as the scheduler
	// watches them (cache.ServedWorkloads), so that the planner sees the same gangs.
	Workloads []workloads.Kind
	// DRA says the API server serves resource.k8s.io/v1 (cache.ServesDRA): the GPUs of
	// pods' resource claims count as the scheduler counts them.
	DRA bool
}

// DefaultMarkSettle is Options.MarkSettle's default.
const DefaultMarkSettle = 10 * time.Second

func (o *Options) defaults() {
	if o.RevalidateAfter <= 0 {
		o.RevalidateAfter = 30 * time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 10 * time.Minute
	}
	if o.MarkSettle <= 0 {
		o.MarkSettle = DefaultMarkSettle
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Actuator carries out the plans of every ScaleDownPolicy: taint a candidate, plan
// again after RevalidateAfter, cordon, drain through the Eviction API, mark its
// Machine for deletion and lower its node group by one, record the scale-down in the
// policy's status. Each step's outcome is written to the API (the node's taint,
// spec.unschedulable and AnnotationScaleDown, the Machine's annotations, the policy's
// status) before the next one starts, so a restarted actuator, or another replica,
// carries on where the last one stopped. It is not safe for concurrent use.
type Actuator struct {
	reader   client.Reader // workload cluster, usually the informer cache
	client   client.Client // workload cluster writes
	infra    Infrastructure
	events   *controller.EventSink
	metrics  *Metrics
	log      logr.Logger
	opts     Options
	planners map[string]*policyPlanner
	savings  savings
	idle     idleReporter
}

// policyPlanner is a policy's planner, rebuilt when the policy's spec changes.
type policyPlanner struct {
	generation int64
	*autoscale.Planner
}

// NewActuator wires an actuator. r reads the workload cluster (an informer cache
// holding cache.Objects()), c writes to it, infra removes machines (nil: none, drained
// nodes stay cordoned), ev records events (nil: none), m may be nil.
func NewActuator(r client.Reader, c client.Client, infra Infrastructure, ev *controller.EventSink, m *Metrics, log logr.Logger, opts Options) *Actuator {
	opts.defaults()
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Actuator{reader: r, client: c, infra: infra, events: ev, metrics: m, log: log, opts: opts,
		planners: map[string]*policyPlanner{}, idle: idleReporter{byPolicy: map[string]*autoscale.IdleGPUs{}}}
}

// round is what one RunOnce read.
type round struct {
	now   time.Time
	nodes []*corev1.Node
	// plans counts the decisions of every policy, for the metrics.
	candidates  int
	unremovable map[string]int
}

// RunOnce plans for every ScaleDownPolicy and advances every scale-down in progress by
// at most one step. Errors of one policy do not stop the others; they are returned
// joined.
func (a *Actuator) RunOnce(ctx context.Context) error {
	r := &round{now: a.opts.Clock.Now(), unremovable: map[string]int{}}
	var pols tesserav1.ScaleDownPolicyList
	if err := a.reader.List(ctx, &pols); err != nil {
		return fmt.Errorf("list ScaleDownPolicies: %w", err)
	}
	var nodes corev1.NodeList
	if err := a.reader.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list Nodes: %w", err)
	}
	for i := range nodes.Items {
		r.nodes = append(r.nodes, &nodes.Items[i])
	}
	slices.SortFunc(pols.Items, func(x, y tesserav1.ScaleDownPolicy) int { return cmp.Compare(x.Name, y.Name) })
	var errs []error
	known := map[string]bool{}
	for i := range pols.Items {
		known[pols.Items[i].Name] = true
		if err := a.runPolicy(ctx, r, &pols.Items[i]); err != nil {
			errs = append(errs, fmt.Errorf("ScaleDownPolicy %s: %w", pols.Items[i].Name, err))
		}
	}
	errs = append(errs, a.orphans(ctx, r, known))
	a.metrics.Candidates.Set(float64(r.candidates))
	a.metrics.UnremovableNodes.Reset()
	for reason, n := range r.unremovable {
		a.metrics.UnremovableNodes.WithLabelValues(reason).Set(float64(n))
	}
	a.savings.accrue(r.now, pols.Items, r.nodes, a.metrics)
	for name := range a.planners {
		if !known[name] {
			delete(a.planners, name)
			a.metrics.HeadroomGPUs.DeleteLabelValues(name)
		}
	}
	return errors.Join(errs...)
}

// runPolicy plans for one policy, advances its scale-downs and starts new ones.
func (a *Actuator) runPolicy(ctx context.Context, r *round, obj *tesserav1.ScaleDownPolicy) error {
	pol, err := autoscale.PolicyFrom(obj)
	if err != nil {
		a.events.Warn(obj, "InvalidSpec", "Plan", "%v", err)
		return a.writeInvalid(ctx, obj, err)
	}
	pl, err := a.planner(obj, pol)
	if err != nil {
		return err
	}
	c, state, err := readCluster(ctx, a.reader, obj, snapshot.Options{WholeGPUs: a.opts.Scheduler.WholeGPUs, Workloads: a.opts.Workloads, DRA: a.opts.DRA}, r.now)
	if err != nil {
		return err
	}
	if err := FillGroups(ctx, c, a.infra, r.nodes); err != nil {
		return fmt.Errorf("node groups: %w", err)
	}
	plan := pl.Plan(c)
	a.metrics.HeadroomGPUs.WithLabelValues(obj.Name).Set(plan.HeadroomGPUs)
	for _, d := range plan.Nodes {
		switch {
		case d.Candidate:
			r.candidates++
		case d.Reason != autoscale.ReasonInProgress && d.Reason != autoscale.ReasonRemoved:
			r.unremovable[d.Reason]++
		}
	}
	a.idle.report(obj.Name, pol, state, r.now, a.metrics, a.events)
	var errs []error
	for _, node := range sortedNodes(state) {
		sd, err := autoscale.StateOf(node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sd == nil || sd.Policy != obj.Name {
			continue
		}
		s := &step{a: a, pl: pl, c: c, state: state, node: node, sd: sd, policy: obj, dryRun: pol.DryRun, now: r.now}
		if err := s.advance(ctx); err != nil {
			errs = append(errs, fmt.Errorf("node %s (%s): %w", node.Name, sd.Phase, err))
		}
	}
	if !pol.DryRun {
		for _, d := range plan.Candidates() {
			if err := a.start(ctx, state.Nodes[d.Node], obj.Name, d, r.now); err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", d.Node, err))
			}
		}
	}
	errs = append(errs, a.writeCandidates(ctx, obj, plan))
	return errors.Join(errs...)
}

// planner returns the policy's planner, keeping its idle tracking while the spec stays.
func (a *Actuator) planner(obj *tesserav1.ScaleDownPolicy, pol autoscale.Policy) (*autoscale.Planner, error) {
	if p, ok := a.planners[obj.Name]; ok && p.generation == obj.Generation {
		return p.Planner, nil
	}
	sched, err := scheduler.New(a.opts.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	p := &policyPlanner{generation: obj.Generation, Planner: autoscale.NewPlanner(pol, sched)}
	if old, ok := a.planners[obj.Name]; ok {
		p.Inherit(old.Planner)
	}
	a.planners[obj.Name] = p
	return p.Planner, nil
}

// start taints a candidate and records that its scale-down began.
func (a *Actuator) start(ctx context.Context, node *corev1.Node, policy string, d autoscale.Decision, now time.Time) error {
	if node == nil {
		return nil
	}
	sd := &autoscale.ScaleDown{Policy: policy, Method: d.Method, Phase: autoscale.PhaseCandidate, Since: now, WasUnschedulable: node.Spec.Unschedulable}
	err := patchNode(ctx, a.client, node, func(n *corev1.Node) {
		setState(n, sd)
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: autoscale.TaintCandidate, Effect: corev1.TaintEffectPreferNoSchedule})
	})
	if err != nil {
		return err
	}
	a.events.Normal(node, "ScaleDownCandidate", "Taint", "%s; tainted %s:PreferNoSchedule, planned again in %s before it is cordoned (ScaleDownPolicy %s)",
		d.Message, autoscale.TaintCandidate, a.opts.RevalidateAfter, policy)
	return nil
}

// orphans cancels the scale-downs of policies that no longer exist, except those
// whose Machine is marked already: they finish, unrecorded.
func (a *Actuator) orphans(ctx context.Context, r *round, known map[string]bool) error {
	var errs []error
	for _, node := range r.nodes {
		sd, err := autoscale.StateOf(node)
		if err != nil || sd == nil || known[sd.Policy] || sd.Phase == autoscale.PhaseRemoved {
			continue
		}
		s := &step{a: a, node: node, sd: sd, now: r.now}
		if sd.Phase == autoscale.PhaseRemoving {
			errs = append(errs, s.advance(ctx))
			continue
		}
		errs = append(errs, s.undo(ctx, "ScaleDownCancelled", fmt.Sprintf("ScaleDownPolicy %s is gone", sd.Policy)))
	}
	return errors.Join(errs...)
}

// sortedNodes are the state's nodes by name.
func sortedNodes(st *cache.State) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(x, y *corev1.Node) int { return cmp.Compare(x.Name, y.Name) })
	return out
}
