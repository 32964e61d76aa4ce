package actuator

import (
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"

	"github.com/tessera-gpu/tessera/internal/controller"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/cache"
)

// savings accrues tessera_autoscale_saved_gpu_hours_total and _saved_cost_total: every
// round, the GPUs of the nodes a policy removed that are still away, times the time
// since the last round. A removed node is away until it is gone from the cluster and
// until a newer node of the policy joins, which takes the place of the oldest removal.
type savings struct {
	last time.Time
}

func (s *savings) accrue(now time.Time, pols []tesserav1.ScaleDownPolicy, nodes []*corev1.Node, m *Metrics) {
	last := s.last
	s.last = now
	if last.IsZero() || !now.After(last) {
		return
	}
	hours := now.Sub(last).Hours()
	for i := range pols {
		pol, err := autoscale.PolicyFrom(&pols[i])
		if err != nil {
			continue
		}
		gpus := awayGPUs(pols[i].Status.RecentScaleDowns, pol, nodes)
		m.SavedGPUHours.Add(float64(gpus) * hours)
		m.SavedCost.Add(float64(gpus) * hours * pol.PricePerGPUHour)
	}
}

// awayGPUs counts the GPUs of the recorded removals that no newer node replaced.
func awayGPUs(recs []tesserav1.ScaleDownRecord, pol autoscale.Policy, nodes []*corev1.Node) int {
	present := map[string]bool{}
	var joined []time.Time
	for _, n := range nodes {
		present[n.Name] = true
		if pol.Selector.Matches(labels.Set(n.Labels)) {
			joined = append(joined, n.CreationTimestamp.Time)
		}
	}
	slices.SortFunc(joined, func(a, b time.Time) int { return a.Compare(b) })
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b tesserav1.ScaleDownRecord) int { return a.Time.Compare(b.Time.Time) })
	gpus := 0
	for _, r := range recs {
		if present[r.Node] {
			continue
		}
		i := slices.IndexFunc(joined, func(t time.Time) bool { return t.After(r.Time.Time) })
		if i >= 0 {
			joined = slices.Delete(joined, i, i+1)
			continue
		}
		gpus += int(r.GPUs)
	}
	return gpus
}

// idleReporter reports pods whose allocated GPUs sat idle for the policy's idleAfter:
// tessera_gpu_allocated_idle_gpus and an event on the pod. It never evicts them.
type idleReporter struct {
	byPolicy map[string]*autoscale.IdleGPUs
}

func (r *idleReporter) report(name string, pol autoscale.Policy, st *cache.State, now time.Time, m *Metrics, ev *controller.EventSink) {
	d := r.byPolicy[name]
	if d == nil || d.Threshold != float64(pol.UtilizationThreshold) || d.After != pol.IdleAfter {
		d = &autoscale.IdleGPUs{Threshold: float64(pol.UtilizationThreshold), After: pol.IdleAfter}
		r.byPolicy[name] = d
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range st.Pods {
		node := st.Nodes[p.Spec.NodeName]
		gn := st.GPUNodes[p.Spec.NodeName]
		if node == nil || gn == nil || gn.Status.ObservedTime == nil || !pol.Selector.Matches(labels.Set(node.Labels)) || p.Status.Phase != corev1.PodRunning {
			continue
		}
		util, gpus, ok := autoscale.PodUtilization(p, gn)
		if !ok {
			continue
		}
		key := p.Namespace + "/" + p.Name
		pods[key] = p
		d.Observe(key, gpus, util, gn.Status.ObservedTime.Time)
	}
	for _, k := range d.Known() {
		if pods[k] == nil {
			d.Forget(k)
			ns, name, _ := strings.Cut(k, "/")
			m.AllocatedIdleGPUs.DeleteLabelValues(ns, name)
		}
	}
	idle := map[string]bool{}
	for _, ip := range d.Idle(now) {
		idle[ip.Pod] = true
		p := pods[ip.Pod]
		m.AllocatedIdleGPUs.WithLabelValues(p.Namespace, p.Name).Set(float64(ip.GPUs))
		ev.Warn(p, "GPUsIdle", "Report", "%d allocated GPUs at or below %d%% utilization since %s; the ScaleDownPolicy never evicts it (only its Queue's spec.idleReclaim may): release the GPUs if they are not needed",
			ip.GPUs, pol.UtilizationThreshold, ip.Since.UTC().Format(time.RFC3339))
	}
	for k := range pods {
		if !idle[k] {
			ns, name, _ := strings.Cut(k, "/")
			m.AllocatedIdleGPUs.DeleteLabelValues(ns, name)
		}
	}
}
