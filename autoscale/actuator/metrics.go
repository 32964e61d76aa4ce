package actuator

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the autoscaler's Prometheus metrics: what it removed, what that saved,
// what it could not remove and why, and GPUs that are allocated but unused.
type Metrics struct {
	ScaledDownNodes   *prometheus.CounterVec
	SavedGPUHours     prometheus.Counter
	SavedCost         prometheus.Counter
	Candidates        prometheus.Gauge
	HeadroomGPUs      *prometheus.GaugeVec
	UnremovableNodes  *prometheus.GaugeVec
	AllocatedIdleGPUs *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ScaledDownNodes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tessera_autoscale_scaled_down_nodes_total",
			Help: "GPU nodes removed, by reason (Empty, Underused) and GPU model."}, []string{"reason", "gpu_model"}),
		SavedGPUHours: prometheus.NewCounter(prometheus.CounterOpts{Name: "tessera_autoscale_saved_gpu_hours_total",
			Help: "GPU-hours not paid for since nodes were removed (GPUs of removed nodes times the time they stayed away)."}),
		SavedCost: prometheus.NewCounter(prometheus.CounterOpts{Name: "tessera_autoscale_saved_cost_total",
			Help: "Saved GPU-hours times the ScaleDownPolicy's pricePerGPUHour."}),
		Candidates: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tessera_autoscale_candidates",
			Help: "GPU nodes the last plan found removable."}),
		HeadroomGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_autoscale_headroom_gpus",
			Help: "GPUs of recent demand a ScaleDownPolicy keeps empty nodes for (workloads created within bootTime, less what busy nodes have free), by policy."}, []string{"policy"}),
		UnremovableNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_autoscale_unremovable_nodes",
			Help: "GPU nodes the last plan kept, by the reason that kept them."}, []string{"reason"}),
		AllocatedIdleGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_gpu_allocated_idle_gpus",
			Help: "GPUs allocated to a pod whose utilization stayed near 0 for idleAfter, by namespace and pod."}, []string{"namespace", "pod"}),
	}
	if reg != nil {
		reg.MustRegister(m.ScaledDownNodes, m.SavedGPUHours, m.SavedCost, m.Candidates, m.HeadroomGPUs, m.UnremovableNodes, m.AllocatedIdleGPUs)
	}
	return m
}
