package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/test/e2e"
)

// The invariants, as the report names them.
const (
	InvGang          = "gang bound below its minimum past its grace"
	InvOversubscribe = "GPU or memory share oversubscribed (API)"
	InvLedger        = "GPU or memory share oversubscribed (node agent's ledger)"
	InvNodeRemoved   = "node removed while it ran work that may not move"
	InvEvictedTwice  = "pod evicted twice for one decision"
	InvStaleStatus   = "Queue status stale beyond one period"
	InvNoReason      = "admitted workload neither ran nor says why"
	InvLeftCordoned  = "node drained and left cordoned though a Machine stands behind it"
)

// gangGrace is how long a gang may stay bound below its minimum: the scheduler's repair
// grace for pods not made yet (a minute), two periods, and the recovery of a
// scheduler that was down (two lease durations at most).
const gangGrace = 90 * time.Second

// monitor watches what must never happen between checks: nodes removed with unmovable
// work, gangs partly bound for longer than their grace.
type monitor struct {
	c          client.Client
	mu         sync.Mutex
	partial    map[types.UID]time.Time // gang Job: when it was first seen partly bound
	violations []string
	nodes      map[string]bool
	// leftCordoned are the nodes reported left cordoned, once each.
	leftCordoned map[string]bool
}

func newMonitor(c client.Client) *monitor {
	return &monitor{c: c, partial: map[types.UID]time.Time{}, leftCordoned: map[string]bool{}}
}

// run checks every second until ctx ends.
func (m *monitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		m.check(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// take returns the violations seen since the last call.
func (m *monitor) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.violations
	m.violations = nil
	return out
}

func (m *monitor) report(format string, args ...any) {
	m.mu.Lock()
	m.violations = append(m.violations, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}

func (m *monitor) check(ctx context.Context) {
	var nodes corev1.NodeList
	var pods corev1.PodList
	if m.c.List(ctx, &nodes) != nil || m.c.List(ctx, &pods) != nil {
		return
	}
	present := map[string]bool{}
	for _, n := range nodes.Items {
		present[n.Name] = true
	}
	// A node gone since the last look: its pods that may not move must have ended.
	for name := range m.nodes {
		if present[name] {
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == name && !finished(p) && p.DeletionTimestamp == nil && mayNotMove(p) {
				m.report("%s: node %s was removed while pod %s/%s ran on it (safe-to-evict=false)", InvNodeRemoved, name, p.Namespace, p.Name)
			}
		}
	}
	m.nodes = present
	m.checkGangs(ctx, pods.Items)
	m.checkLeftCordoned(ctx, nodes.Items)
}

// checkLeftCordoned finds nodes a scale-down finished without a Machine to remove
// (they stay cordoned for an operator) although Cluster API has one behind them: GPUs
// taken out of service for good.
func (m *monitor) checkLeftCordoned(ctx context.Context, nodes []corev1.Node) {
	machines, err := e2e.MachineNodes(ctx, m.c)
	if err != nil {
		return
	}
	for _, n := range nodes {
		sd, err := autoscale.StateOf(&n)
		if err != nil || sd == nil || sd.Phase != autoscale.PhaseRemoved || sd.Machine != "" || !machines[n.Name] || m.leftCordoned[n.Name] {
			continue
		}
		m.leftCordoned[n.Name] = true
		m.report("%s: node %s (Machine %s/%s)", InvLeftCordoned, n.Name, e2e.ClusterNamespace, n.Name)
	}
}

// mayNotMove reports whether the autoscaler must never evict p.
func mayNotMove(p *corev1.Pod) bool {
	return p.Annotations[autoscale.AnnotationSafeToEvict] == "false"
}

// checkGangs finds gang Jobs bound below their minimum for longer than gangGrace.
func (m *monitor) checkGangs(ctx context.Context, pods []corev1.Pod) {
	var jobs batchv1.JobList
	if err := m.c.List(ctx, &jobs, client.MatchingLabels{LabelWorkload: "true"}); err != nil {
		return
	}
	now := time.Now()
	seen := map[types.UID]bool{}
	for _, j := range jobs.Items {
		want, _ := strconv.Atoi(j.Annotations[tesserav1.AnnotationMinAvailable])
		if want <= 1 || jobEnded(&j) {
			continue
		}
		// Pods that succeeded count, even once deleted (with their removed node).
		bound := int(j.Status.Succeeded)
		for i := range pods {
			p := &pods[i]
			if p.Namespace == j.Namespace && p.Labels[batchv1.JobNameLabel] == j.Name && p.Spec.NodeName != "" &&
				!finished(p) && p.DeletionTimestamp == nil {
				bound++
			}
		}
		if bound == 0 || bound >= want {
			continue
		}
		seen[j.UID] = true
		first, ok := m.partial[j.UID]
		if !ok {
			m.partial[j.UID] = now
		} else if now.Sub(first) > gangGrace {
			m.report("%s: Job %s/%s has %d of %d pods bound since %s", InvGang, j.Namespace, j.Name, bound, want, first.Format(time.TimeOnly))
			m.partial[j.UID] = now // once per grace
		}
	}
	for uid := range m.partial {
		if !seen[uid] {
			delete(m.partial, uid)
		}
	}
}

// jobEnded reports whether a Job completed or failed.
func jobEnded(j *batchv1.Job) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue
	})
}

// gpuUse is what is held on one GPU.
type gpuUse struct {
	whole    []string
	shareMiB int64
	shares   []string
}

// oversubscribed lists the GPUs holding more than they have: two holders of a whole
// GPU, a whole GPU also shared, or shares past its memory.
func oversubscribed(use map[string]*gpuUse, memoryMiB func(uuid string) int64) []string {
	var out []string
	for _, uuid := range slicesSorted(use) {
		u := use[uuid]
		switch {
		case len(u.whole) > 1:
			out = append(out, fmt.Sprintf("GPU %s held whole by %v", uuid, u.whole))
		case len(u.whole) == 1 && len(u.shares) > 0:
			out = append(out, fmt.Sprintf("GPU %s held whole by %v and shared by %v", uuid, u.whole, u.shares))
		case u.shareMiB > memoryMiB(uuid):
			out = append(out, fmt.Sprintf("GPU %s shared past its %d MiB: %d MiB by %v", uuid, memoryMiB(uuid), u.shareMiB, u.shares))
		}
	}
	return out
}

func slicesSorted(m map[string]*gpuUse) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (u *gpuUse) add(holder string, shareMiB int64) {
	if shareMiB > 0 {
		u.shareMiB += shareMiB
		u.shares = append(u.shares, holder)
	} else {
		u.whole = append(u.whole, holder)
	}
}

// apiUse is what the API says each GPU holds: the scheduler's GPU assignments of bound
// pods that have not ended, and the allocations of claims.
func apiUse(ctx context.Context, c client.Client) (map[string]*gpuUse, map[string]int64, error) {
	use := map[string]*gpuUse{}
	at := func(uuid string) *gpuUse {
		if use[uuid] == nil {
			use[uuid] = &gpuUse{}
		}
		return use[uuid]
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return nil, nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		raw := p.Annotations[tesserav1.AnnotationGPUAssign]
		if p.Spec.NodeName == "" || finished(p) || raw == "" || len(p.Spec.ResourceClaims) > 0 {
			continue
		}
		a, err := tesserav1.ParseGPUAssignment(raw)
		if err != nil {
			continue
		}
		for _, ctr := range a.Containers {
			for _, uuid := range ctr.UUIDs {
				at(uuid).add("pod "+p.Namespace+"/"+p.Name, ctr.MemoryMiB)
			}
		}
	}
	var slices resourcev1.ResourceSliceList
	if err := c.List(ctx, &slices); err != nil {
		return nil, nil, err
	}
	uuids, memory := map[string]string{}, map[string]int64{}
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			if a := d.Attributes[tesserav1.DeviceAttributeUUID].StringValue; a != nil {
				uuids[s.Spec.Pool.Name+"/"+d.Name] = *a
				if q, ok := d.Capacity[tesserav1.DeviceCapacityMemory]; ok {
					memory[*a] = quantityMiB(q.Value)
				}
			}
		}
	}
	var claims resourcev1.ResourceClaimList
	if err := c.List(ctx, &claims); err != nil {
		return nil, nil, err
	}
	for _, cl := range claims.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			uuid := uuids[r.Pool+"/"+r.Device]
			if r.Driver != tesserav1.DRADriver || uuid == "" {
				continue
			}
			var share int64
			if q, ok := r.ConsumedCapacity[tesserav1.DeviceCapacityMemory]; ok && r.ShareID != nil && quantityMiB(q) < memory[uuid] {
				share = quantityMiB(q)
			}
			at(uuid).add("claim "+cl.Namespace+"/"+cl.Name, share)
		}
	}
	return use, memory, nil
}

// evictedTwice lists the pods Tessera's events say were evicted more than once.
func evictedTwice(ctx context.Context, c client.Client) ([]string, error) {
	var events eventsv1.EventList
	if err := c.List(ctx, &events); err != nil {
		return nil, err
	}
	count := map[types.UID]int{}
	names := map[types.UID]string{}
	for _, e := range events.Items {
		if e.Regarding.Kind != "Pod" || (e.Reason != "Preempted" && e.Reason != "Evicted") {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		} else if e.DeprecatedCount > 1 {
			n = int(e.DeprecatedCount)
		}
		count[e.Regarding.UID] += n
		names[e.Regarding.UID] = e.Regarding.Namespace + "/" + e.Regarding.Name
	}
	var out []string
	for uid, n := range count {
		if n > 1 {
			out = append(out, fmt.Sprintf("pod %s evicted %d times", names[uid], n))
		}
	}
	slices.Sort(out)
	return out, nil
}

// queueLag reports the queues whose status' allocated CPU differs from their bound pods'
// requests at every look over window while a scheduler leads: a status left stale.
// While none leads (a leader killed, or one that lost its Lease, until the standby
// takes it), nobody writes status, and the window starts again.
func queueLag(ctx context.Context, c client.Client, window time.Duration, leading func() bool) ([]string, error) {
	deadline := time.Now().Add(window)
	for {
		if !leading() {
			deadline = time.Now().Add(window)
		}
		var queues tesserav1.QueueList
		var pods corev1.PodList
		if err := c.List(ctx, &queues); err != nil {
			return nil, err
		}
		if err := c.List(ctx, &pods); err != nil {
			return nil, err
		}
		want := map[string]int64{}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == "" || finished(p) || p.Spec.SchedulerName != tesserav1.SchedulerName {
				continue
			}
			for _, ctr := range p.Spec.Containers {
				want[p.Labels[tesserav1.LabelQueue]] += ctr.Resources.Requests.Cpu().MilliValue()
			}
		}
		var stale []string
		for _, q := range queues.Items {
			if have := q.Status.Allocated.Cpu().MilliValue(); have != want[q.Name] {
				stale = append(stale, fmt.Sprintf("queue %s: status allocates %dm CPU, its bound pods ask %dm", q.Name, have, want[q.Name]))
			}
		}
		if len(stale) == 0 || time.Now().After(deadline) {
			return stale, nil
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// unexplained lists the pending pods that have waited past window without a
// PodScheduled=False condition saying why (what tessera explain and kubectl show).
func unexplained(ctx context.Context, c client.Client, window time.Duration) ([]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{LabelWorkload: "true"}); err != nil {
		return nil, err
	}
	var out []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || finished(p) || p.DeletionTimestamp != nil || time.Since(p.CreationTimestamp.Time) < window {
			continue
		}
		i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
		if i < 0 || p.Status.Conditions[i].Reason == "" {
			out = append(out, fmt.Sprintf("pod %s/%s pending %s with no reason", p.Namespace, p.Name, time.Since(p.CreationTimestamp.Time).Round(time.Second)))
		}
	}
	return out, nil
}
