package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/test/e2e"
)

// endOfSchedule is the pseudo-point of the checks after a schedule's last fault.
const endOfSchedule = "end of schedule"

// Result is one fault of a schedule: how many faults it injected (a crash, each error
// returned, a delay, a process killed), whether its point was reached, how long the
// fault lasted, how long the system took to recover after it, and the invariants
// violated after it.
type Result struct {
	Seed     uint64
	Step     int
	Fault    Fault
	Injected int
	Reached  bool
	// Lasted is from the fault's first injection to its end: the last of its errors,
	// the end of its delay, the killed process serving again (the API server, etcd)
	// or started again (the webhook, a node agent); nothing for a leader's kill, whose
	// standby must take over whether or not the killed replica comes back.
	Lasted time.Duration
	// Recovery is from the fault's end to the next pod bound, scale-down step or
	// leader (see inject).
	Recovery   time.Duration
	Recovered  bool
	Violations []string
}

// Driver runs schedules against a cluster.
type Driver struct {
	c       *e2e.Cluster
	sup     *supervisor
	load    *workload
	kubelet *kubelet
	mon     *monitor
	logf    func(string, ...any)
	// reported are the evicted-twice pods already reported.
	reported map[string]bool
	probes   int
	// replaced counts the leaders' pods replaced, for their new UIDs.
	replaced int
	// Only, when set, keeps only these points of each schedule ($FAULT_POINTS).
	Only []string
}

// NewDriver starts the driver's background work (process supervision, the workload,
// the kubelets' part for claims, the invariant monitor and a stand-in scale-up) on c
// until ctx ends.
func NewDriver(ctx context.Context, c *e2e.Cluster, logf func(string, ...any)) (*Driver, error) {
	d := &Driver{c: c, sup: newSupervisor(c, logf), kubelet: newKubelet(c), mon: newMonitor(c.Client), logf: logf,
		load: &workload{c: c.Client, rng: rand.New(rand.NewPCG(0, 0)), logf: logf}, reported: map[string]bool{}}
	if err := d.load.install(ctx); err != nil {
		return nil, err
	}
	go d.sup.run(ctx)
	go d.load.run(ctx)
	go d.kubelet.run(ctx)
	go d.mon.run(ctx)
	go e2e.StandInScaleUp(ctx, c.Client, maxNodes, func(string, ...any) {})
	return d, nil
}

// maxNodes bounds the stand-in scale-up.
const maxNodes = 4

// RunSeed runs seed's schedule and then checks that every workload ran or says why.
func (d *Driver) RunSeed(ctx context.Context, seed uint64) []Result {
	d.load.mu.Lock()
	d.load.rng = rand.New(rand.NewPCG(seed, 0x10ad))
	d.load.mu.Unlock()
	d.load.quiet.Store(false)
	schedule := Schedule(seed)
	if len(d.Only) > 0 {
		schedule = slices.DeleteFunc(schedule, func(f Fault) bool { return !slices.Contains(d.Only, f.Point) })
	}
	planned := len(schedule)
	var out []Result
	for i := 0; i < len(schedule); i++ {
		f := schedule[i]
		r := d.inject(ctx, seed, i+1, f)
		if !r.Reached && i < planned {
			// A second chance, at the end of the schedule: what reaches a point races
			// with the rest of the load.
			schedule = append(schedule, f)
		}
		out = append(out, r)
		status := "not reached"
		if r.Reached {
			status = fmt.Sprintf("%d injected over %s, recovered %s after", r.Injected, r.Lasted.Round(10*time.Millisecond), r.Recovery.Round(10*time.Millisecond))
			if !r.Recovered {
				status = fmt.Sprintf("%d injected, NOT recovered within %s", r.Injected, r.Recovery.Round(time.Second))
			}
		}
		d.logf("seed %d step %d/%d %s: %s; %d violations", seed, i+1, len(schedule), f, status, len(r.Violations))
		for _, v := range r.Violations {
			d.logf("  VIOLATION seed %d step %d (%s): %s", seed, i+1, f, v)
		}
	}
	// The end of the schedule: no new work; what was admitted runs or says why.
	d.load.quiet.Store(true)
	last := Result{Seed: seed, Step: len(schedule) + 1, Fault: Fault{Point: endOfSchedule, Action: "drain"}, Reached: true, Recovered: true}
	if err := waitWorkDone(ctx, d.c.Client, 4*time.Minute); err != nil {
		if why, err := unexplained(ctx, d.c.Client, time.Minute); err == nil {
			last.Violations = append(last.Violations, prefix(InvNoReason, why)...)
		}
	}
	last.Violations = append(last.Violations, d.checks(ctx)...)
	for _, v := range last.Violations {
		d.logf("  VIOLATION seed %d at the end: %s", seed, v)
	}
	d.cleanUp(ctx)
	return append(out, last)
}

// inject runs one fault: the workload that reaches its point, the fault, the wait for
// recovery, and the checks.
func (d *Driver) inject(ctx context.Context, seed uint64, step int, f Fault) Result {
	r := Result{Seed: seed, Step: step, Fault: f}
	var first, at, back time.Time // the fault's first injection, its end, and normal seen again
	var targets []string
	var scale string
	var normal func(end time.Time, scale string) bool
	undo := d.prepare(ctx, f.Point)
	if strings.HasPrefix(f.Point, "process/") {
		r.Injected, r.Reached, first = 1, true, time.Now()
		var err error
		if targets, err = d.kill(ctx, f); err != nil {
			d.logf("seed %d step %d %s: %v", seed, step, f, err)
			r.Reached = false
		}
		at = time.Now()
		if f.Point == KillSchedulerLeader || f.Point == KillAutoscalerLeader {
			at = first
		}
		normal = d.normal(ctx, f.Point, targets)
	} else {
		targets = d.targets(ctx, failpoint.Point(f.Point))
		normal = d.normal(ctx, f.Point, targets)
		r.Injected, first, at, back, scale = d.failpoint(ctx, f, targets, normal)
		r.Reached = r.Injected > 0
	}
	r.Lasted = at.Sub(first)
	undo()
	if !r.Reached {
		d.load.quiet.Store(false)
		return r
	}
	switch {
	case !back.IsZero():
		// Seen back to normal while the driver still waited for more of the fault.
		r.Recovery, r.Recovered = back.Sub(at), true
	case normal != nil:
		r.Recovery, r.Recovered = until(ctx, at, func() bool { return normal(at, scale) })
	default:
		r.Recovery, r.Recovered = d.waitBind(ctx, at)
	}
	d.load.quiet.Store(false)
	r.Violations = d.checks(ctx)
	return r
}

// failpoint arms f in the processes that reach it, waits until it fires and returns
// how many faults it injected, when the first fired, when the fault ended (the last
// fire, or the end of a delay), when normal (nil: not polled) first held after the
// last fire while it waited for more (zero: not seen), and the scale-down state at the
// last fire.
func (d *Driver) failpoint(ctx context.Context, f Fault, targets []string, normal func(time.Time, string) bool) (n int, first, end, back time.Time, scale string) {
	point := failpoint.Point(f.Point)
	if len(targets) == 0 {
		return 0, time.Time{}, time.Time{}, time.Time{}, ""
	}
	base := map[string]int{}
	for _, name := range targets {
		if st, err := stats(d.c, name); err == nil {
			base[name] = st[point].Fired
		}
	}
	crashes := d.sup.crashed()
	for _, name := range targets {
		if err := arm(d.c, name, f.Point, f.Action); err != nil {
			d.logf("arm %s in %s: %v", f, name, err)
		}
	}
	defer func() {
		for _, name := range targets {
			disarm(d.c, name, f.Point)
		}
	}()
	want := 1
	if n, _, ok := strings.Cut(f.Action, "*"); ok {
		fmt.Sscan(n, &want)
	}
	timeout := 2 * time.Minute
	if point.Component() == "autoscaler" {
		timeout = 4 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if c := point.Component(); (c == "scheduler" || c == "autoscaler") && first.IsZero() {
			// Leadership moved (a lease lost under load): arm the new leader too.
			if l := leader(d.c, "tessera-"+c); l != "" && !slices.Contains(targets, l) {
				if st, err := stats(d.c, l); err == nil && arm(d.c, l, f.Point, f.Action) == nil {
					base[l] = st[point].Fired
					targets = append(targets, l)
				}
			}
		}
		fired := d.sup.crashed() - crashes
		for _, name := range targets {
			if st, err := stats(d.c, name); err == nil {
				fired += max(st[point].Fired-base[name], 0)
			}
		}
		if fired > n {
			// The step's outcome is written before its fault point: the state now is
			// what the next step moves on from.
			n, end, back, scale = fired, time.Now(), time.Time{}, d.scaleState(ctx)
			if first.IsZero() {
				first = end
			}
		} else if n > 0 && back.IsZero() && normal != nil && !strings.Contains(f.Action, "sleep") && normal(end, scale) {
			back = time.Now()
		}
		if n >= want || (n > 0 && time.Since(first) > 15*time.Second) || (n > 0 && strings.Contains(f.Action, "crash")) {
			if strings.Contains(f.Action, "sleep") {
				time.Sleep(time.Until(end.Add(actionDelay(f.Action))))
				end = time.Now()
			}
			if n >= want {
				back = time.Time{} // the fault's last fire: recovery is measured from now on
			}
			return n, first, end, back, scale
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, time.Time{}, time.Time{}, time.Time{}, ""
}

// actionDelay is a sleep action's delay.
func actionDelay(action string) time.Duration {
	_, rest, _ := strings.Cut(action, "sleep(")
	dur, _ := time.ParseDuration(strings.TrimSuffix(rest, ")"))
	return dur
}

// targets are the processes that reach point: the leader of the scheduler or the
// autoscaler, the webhook, or the node agents (all of them for prepare, whose claims
// may land anywhere; one for the others).
func (d *Driver) targets(ctx context.Context, point failpoint.Point) []string {
	switch point.Component() {
	case "scheduler", "autoscaler":
		component := "tessera-" + point.Component()
		for range 60 {
			if l := leader(d.c, component); l != "" {
				return []string{l}
			}
			time.Sleep(500 * time.Millisecond)
		}
		return nil
	case "webhook":
		return []string{"tessera-webhook"}
	}
	agents := d.agents()
	if point == failpoint.NodeAgentPrepare || len(agents) == 0 {
		return agents
	}
	return []string{agents[d.load.intn(len(agents))]}
}

// agents are the running node agents' process names.
func (d *Driver) agents() []string {
	var out []string
	for _, name := range d.c.ProcessNames() {
		if strings.HasPrefix(name, "agent-") {
			if exited, _ := d.c.Process(name).Exited(); !exited {
				out = append(out, name)
			}
		}
	}
	return out
}

// kill runs a process fault and returns the processes it killed.
func (d *Driver) kill(ctx context.Context, f Fault) ([]string, error) {
	down := time.Second
	if _, rest, ok := strings.Cut(f.Action, "kill("); ok {
		down, _ = time.ParseDuration(strings.TrimSuffix(rest, ")"))
	}
	switch f.Point {
	case KillAPIServer:
		return []string{"kube-apiserver"}, d.c.Env().Restart(ctx, "kube-apiserver", down)
	case KillEtcd:
		return []string{"etcd"}, d.c.Env().Restart(ctx, "etcd", down)
	case KillWebhook:
		return []string{"tessera-webhook"}, d.sup.kill(ctx, "tessera-webhook", down)
	case KillSchedulerLeader, KillAutoscalerLeader:
		component := "tessera-scheduler"
		if f.Point == KillAutoscalerLeader {
			component = "tessera-autoscaler"
		}
		name := leader(d.c, component)
		if name == "" {
			return nil, fmt.Errorf("no %s leader", component)
		}
		// The leader's pod is replaced (its node lost, say): the new pod has a new UID,
		// so it does not resume the Lease, and the standby takes over once it expires.
		// A crash at a fault point restarts the container instead, which resumes it.
		// (A UID no replica has had: "<name>-<n>" would be the second replica's own.)
		d.replaced++
		d.c.Process(name).SetEnv("POD_UID", fmt.Sprintf("%s-replaced-%d", name, d.replaced))
		return []string{name}, d.sup.kill(ctx, name, down)
	case KillNodeAgent:
		agents := d.agents()
		if len(agents) == 0 {
			return nil, fmt.Errorf("no node agent runs")
		}
		name := agents[d.load.intn(len(agents))]
		return []string{name}, d.sup.kill(ctx, name, down)
	}
	return nil, fmt.Errorf("unknown fault point %s", f.Point)
}

// prepare makes the workload that reaches point and returns what undoes it.
func (d *Driver) prepare(ctx context.Context, point string) func() {
	none := func() {}
	switch failpoint.Point(point) {
	case failpoint.SchedulerBound:
		_ = d.load.create(ctx, gang(prod, d.load.name("gang"), 2, 1, 10*time.Second))
	case failpoint.SchedulerClaimsAllocated, failpoint.NodeAgentPrepare:
		_ = d.load.create(ctx, claimJob(dev, d.load.name("claim"), 2, "gpu-share", 15*time.Second))
	case failpoint.SchedulerEvicted:
		// Work of the lowest priority on every node, then a gang of the highest that
		// can only run in its place.
		d.load.quiet.Store(true)
		nodes := int32(min(max(d.nodes(ctx), 2), maxNodes))
		low := withLabel(e2e.Job(prod, d.load.name("low"), nodes, 8, 0, 5*time.Minute))
		low.Spec.Template.Spec.PriorityClassName = "offline-low"
		_ = d.load.create(ctx, low)
		waitBound(ctx, d.c.Client, low, int(nodes), 90*time.Second)
		high := gang(prod, d.load.name("urgent"), 2, 8, 10*time.Second)
		_ = d.load.create(ctx, high)
		return func() { d.delete(ctx, low); d.delete(ctx, high) }
	case failpoint.SchedulerReserved:
		// All nodes but one busy for a minute (two at least); a gang of three nodes
		// waits behind them until nodes are reserved for it, even once scale-up brought
		// the cluster to its largest.
		n := int32(max(min(d.nodes(ctx), maxNodes)-1, 2))
		busy := gang(prod, d.load.name("busy"), n, 8, time.Minute)
		_ = d.load.create(ctx, busy)
		waitBound(ctx, d.c.Client, busy, int(n), time.Minute)
		big := gang(dev, d.load.name("wide"), maxNodes-1, 8, 5*time.Second)
		_ = d.load.create(ctx, big)
		return func() { d.delete(ctx, busy); d.delete(ctx, big) }
	case failpoint.SchedulerUnschedulable:
		// More than the cluster can ever hold: pending, with a reason.
		huge := gang(dev, d.load.name("huge"), maxNodes+1, 8, 5*time.Second)
		_ = d.load.create(ctx, huge)
		return func() { d.delete(ctx, huge) }
	case failpoint.AutoscalerCordoned, failpoint.AutoscalerDrained, failpoint.AutoscalerMachineMarked, failpoint.AutoscalerLowered:
		// No new work: nodes go idle and are removed. A cluster at its minimum grows
		// for a short gang first.
		d.load.quiet.Store(true)
		gctx, stop := context.WithCancel(ctx)
		go d.keepScaling(gctx)
		return stop
	}
	return none
}

// keepScaling submits a short gang of three nodes whenever the cluster is at its
// minimum of two and no such gang is under way, until ctx ends: the scale-up it causes
// leaves nodes to remove once it ends.
func (d *Driver) keepScaling(ctx context.Context) {
	var last *batchv1.Job
	for ctx.Err() == nil {
		if d.nodes(ctx) <= 2 && (last == nil || jobDone(ctx, d.c.Client, last)) {
			last = gang(prod, d.load.name("grow"), 3, 8, 5*time.Second)
			_ = d.load.create(ctx, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(3 * time.Second):
		}
	}
}

// jobDone reports whether a Job ended or is gone.
func jobDone(ctx context.Context, c client.Client, job *batchv1.Job) bool {
	var j batchv1.Job
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
		return apierrors.IsNotFound(err)
	}
	return jobEnded(&j)
}

// nodes is the cluster's node count.
func (d *Driver) nodes(ctx context.Context) int {
	var nodes corev1.NodeList
	if err := d.c.Client.List(ctx, &nodes); err != nil {
		return 0
	}
	return len(nodes.Items)
}

// delete deletes a Job and its pods.
func (d *Driver) delete(ctx context.Context, o client.Object) {
	_ = d.c.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
}

// recoveryTimeout bounds every wait for recovery.
const recoveryTimeout = 3 * time.Minute

// until polls done every 100ms and returns how long after at it first held, or false
// once recoveryTimeout after at passed.
func until(ctx context.Context, at time.Time, done func() bool) (time.Duration, bool) {
	deadline := at.Add(recoveryTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if done() {
			return time.Since(at), true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(at), false
}

// waitBind returns how long after at the scheduler next bound a pod: the next
// successful bind after the fault, of a probe pod it creates or of any other pod.
func (d *Driver) waitBind(ctx context.Context, at time.Time) (time.Duration, bool) {
	before, err := boundPods(ctx, d.c.Client)
	if err != nil {
		return time.Since(at), false
	}
	d.probes++
	if err := d.load.create(ctx, probe(fmt.Sprintf("probe-%d", d.probes))); err != nil {
		return time.Since(at), false
	}
	return until(ctx, at, func() bool {
		now, err := boundPods(ctx, d.c.Client)
		if err != nil {
			return false
		}
		for uid := range now {
			if !before[uid] {
				return true
			}
		}
		return false
	})
}

// boundPods are the UIDs of the pods Tessera's scheduler placed that are bound.
func boundPods(ctx context.Context, c client.Client) (map[types.UID]bool, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return nil, err
	}
	out := map[types.UID]bool{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Spec.NodeName != "" && p.Spec.SchedulerName == tesserav1.SchedulerName {
			out[p.UID] = true
		}
	}
	return out, nil
}

// scaleState sums up the scale-downs in flight: each node's scale-down annotation and
// the MachineDeployment's replicas.
func (d *Driver) scaleState(ctx context.Context) string {
	var nodes corev1.NodeList
	if err := d.c.Client.List(ctx, &nodes); err != nil {
		return ""
	}
	var parts []string
	for _, n := range nodes.Items {
		parts = append(parts, n.Name+"="+n.Annotations[autoscale.AnnotationScaleDown])
	}
	if replicas, err := e2e.Replicas(ctx, d.c.Client); err == nil {
		parts = append(parts, fmt.Sprintf("replicas=%d", replicas))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// normal is how the cluster is seen back to normal after a fault at point, given the
// fault's end and the scale-down state then; nil where a probe pod must bind:
//   - the autoscaler's points: the scale-down the fault cut into took its next step;
//   - its leader's kill: a replica leads again;
//   - a node agent's (but prepare's, which the kubelet retries): the agent published its
//     GPUs again, observed in the second after the end or later, as the API keeps
//     seconds (a node removed meanwhile has nothing to publish).
func (d *Driver) normal(ctx context.Context, point string, targets []string) func(end time.Time, scale string) bool {
	switch {
	case strings.HasPrefix(point, "autoscaler/"):
		return func(_ time.Time, before string) bool {
			s := d.scaleState(ctx)
			return s != "" && s != before
		}
	case point == KillAutoscalerLeader:
		return func(time.Time, string) bool { return leader(d.c, "tessera-autoscaler") != "" }
	case len(targets) > 0 && (point == KillNodeAgent || strings.HasPrefix(point, "node-agent/") && failpoint.Point(point) != failpoint.NodeAgentPrepare):
		node := strings.TrimPrefix(targets[0], "agent-")
		return func(end time.Time, _ string) bool {
			var gn tesserav1.GPUNode
			err := d.c.Client.Get(ctx, client.ObjectKey{Name: node}, &gn)
			return apierrors.IsNotFound(err) || err == nil && gn.Status.ObservedTime != nil &&
				!gn.Status.ObservedTime.Time.Before(end.Truncate(time.Second).Add(time.Second))
		}
	}
	return nil
}

// checks runs the invariants that hold at any time.
func (d *Driver) checks(ctx context.Context) []string {
	out := d.mon.take()
	use, memory, err := apiUse(ctx, d.c.Client)
	if err == nil {
		out = append(out, prefix(InvOversubscribe, oversubscribed(use, func(u string) int64 { return memoryOr(memory, u) }))...)
	}
	ledger := map[string]*gpuUse{}
	for _, p := range d.kubelet.ledger() {
		for _, uuid := range p.uuids {
			if ledger[uuid] == nil {
				ledger[uuid] = &gpuUse{}
			}
			ledger[uuid].add("claim "+p.claim+" on "+p.node, p.shareMiB)
		}
	}
	out = append(out, prefix(InvLedger, oversubscribed(ledger, func(u string) int64 { return memoryOr(memory, u) }))...)
	if twice, err := evictedTwice(ctx, d.c.Client); err == nil {
		for _, v := range twice {
			if !d.reported[v] {
				d.reported[v] = true
				out = append(out, InvEvictedTwice+": "+v)
			}
		}
	}
	if stale, err := queueLag(ctx, d.c.Client, 6*time.Second, func() bool { return leader(d.c, "tessera-scheduler") != "" }); err == nil {
		out = append(out, prefix(InvStaleStatus, stale)...)
	}
	return out
}

// memoryOr is a GPU's memory as published, or an A100's 80 GiB.
func memoryOr(memory map[string]int64, uuid string) int64 {
	if m, ok := memory[uuid]; ok {
		return m
	}
	return 81920
}

func prefix(what string, items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = what + ": " + s
	}
	return out
}

// waitBound waits until n pods of job are bound.
func waitBound(ctx context.Context, c client.Client, job *batchv1.Job, n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if pods, err := e2e.JobPods(ctx, c, job); err == nil && e2e.Bound(pods) >= n {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitWorkDone waits until no workload pod is left running or pending.
func waitWorkDone(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.MatchingLabels{LabelWorkload: "true"}); err != nil {
			return err
		}
		left := 0
		for i := range pods.Items {
			if !finished(&pods.Items[i]) {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d workload pods still pending or running", left)
		}
		time.Sleep(time.Second)
	}
}

// cleanUp deletes the schedule's workloads.
func (d *Driver) cleanUp(ctx context.Context) {
	for _, ns := range []string{prod, dev} {
		_ = d.c.Client.DeleteAllOf(ctx, &batchv1.Job{}, client.InNamespace(ns), client.MatchingLabels{LabelWorkload: "true"},
			client.PropagationPolicy(metav1.DeletePropagationBackground))
		_ = d.c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{LabelWorkload: "true"})
	}
}
