package idlereclaim

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are idle reclaim's Prometheus metrics.
type Metrics struct {
	PendingGPUs  *prometheus.GaugeVec
	ReclaimedGPU *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		PendingGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_gpu_idle_reclaim_pending_gpus",
			Help: "GPUs of a pod told that its workload will be suspended: idle for its Queue's spec.idleReclaim.idleFor, by namespace, pod and queue."},
			[]string{"namespace", "pod", "queue"}),
		ReclaimedGPU: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tessera_gpu_idle_reclaimed_gpus_total",
			Help: "GPUs taken back from idle pods by their Queue's idle reclaim, by queue, action (suspend, scale, evict) and dry_run (true: only reported, nothing suspended)."},
			[]string{"queue", "action", "dry_run"}),
	}
	if reg != nil {
		reg.MustRegister(m.PendingGPUs, m.ReclaimedGPU)
	}
	return m
}
