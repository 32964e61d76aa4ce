package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the scheduler's Prometheus metrics.
type Metrics struct {
	SessionDuration    prometheus.Histogram
	E2ESchedulingDelay prometheus.Histogram
	ScheduleAttempts   *prometheus.CounterVec
	PreemptionVictims  prometheus.Counter
	QueueAllocated     *prometheus.GaugeVec
	QueueDeserved      *prometheus.GaugeVec
	QueueCapability    *prometheus.GaugeVec
	QueuePendingJobs   *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		SessionDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tessera_scheduler_session_duration_seconds",
			Help: "Time of one scheduling session: snapshot, actions and commit.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		E2ESchedulingDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tessera_scheduler_e2e_scheduling_duration_seconds",
			Help: "Time from a pod's creation to its bind.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 20)}),
		ScheduleAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tessera_scheduler_schedule_attempts_total",
			Help: "Pods the scheduler tried to place, by result (scheduled, unschedulable, error)."}, []string{"result"}),
		PreemptionVictims: prometheus.NewCounter(prometheus.CounterOpts{Name: "tessera_scheduler_preemption_victims_total",
			Help: "Pods evicted to make room for preemptors or reclaiming queues."}),
		QueueAllocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_queue_allocated",
			Help: "Resources the queue's running pods hold (GPUs, CPU cores, memory bytes)."}, []string{"queue", "resource"}),
		QueueDeserved: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_queue_deserved",
			Help: "The queue's deserved share."}, []string{"queue", "resource"}),
		QueueCapability: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_queue_capability",
			Help: "The queue's capability (absent when unlimited)."}, []string{"queue", "resource"}),
		QueuePendingJobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tessera_queue_pending_jobs",
			Help: "Jobs of the queue with pods waiting for placement."}, []string{"queue"}),
	}
	if reg != nil {
		reg.MustRegister(m.SessionDuration, m.E2ESchedulingDelay, m.ScheduleAttempts, m.PreemptionVictims,
			m.QueueAllocated, m.QueueDeserved, m.QueueCapability, m.QueuePendingJobs)
	}
	return m
}
