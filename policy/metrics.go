package policy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the policy engine's Prometheus metrics.
type Metrics struct {
	evalDuration  *prometheus.HistogramVec
	compileErrors prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		evalDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tessera_policy_evaluation_duration_seconds",
			Help:    "Time to evaluate one admission policy on one request.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}, []string{"policy"}),
		compileErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tessera_policy_compile_errors_total",
			Help: "Policy sets that failed to compile or whose tests failed.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.evalDuration, m.compileErrors)
	}
	return m
}

func (m *Metrics) observe(policy string, d time.Duration) {
	if m != nil {
		m.evalDuration.WithLabelValues(policy).Observe(d.Seconds())
	}
}

func (m *Metrics) compileFailed() {
	if m != nil {
		m.compileErrors.Inc()
	}
}

// CompileErrors is the tessera_policy_compile_errors_total counter.
func (m *Metrics) CompileErrors() prometheus.Counter { return m.compileErrors }
