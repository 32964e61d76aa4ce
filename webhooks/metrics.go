package webhooks

import "github.com/prometheus/client_golang/prometheus"

// Results counted by tessera_admission_requests_total.
const (
	ResultAllowed = "allowed"
	ResultPatched = "patched"
	ResultWarned  = "warned"
	ResultDenied  = "denied"
	ResultError   = "error"
)

// Metrics are the admission handlers' Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tessera_admission_requests_total",
		Help: "Admission requests by operation, kind and result (allowed, patched, warned, denied, error).",
	}, []string{"operation", "kind", "result"})}
	if reg != nil {
		reg.MustRegister(m.requests)
	}
	return m
}

// Requests is the tessera_admission_requests_total counter vector.
func (m *Metrics) Requests() *prometheus.CounterVec { return m.requests }

func (m *Metrics) count(operation, kind, result string) {
	if m != nil {
		m.requests.WithLabelValues(operation, kind, result).Inc()
	}
}
