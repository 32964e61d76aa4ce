package webhooks

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Results counted by tessera_admission_requests_total.
const (
	ResultAllowed = "allowed"
	ResultPatched = "patched"
	ResultWarned  = "warned"
	ResultDenied  = "denied"
	ResultError   = "error"
)

// Metrics are the admission handlers' and the AdmissionPolicy controller's Prometheus
// metrics.
type Metrics struct {
	requests       *prometheus.CounterVec
	policyCompiled *prometheus.GaugeVec

	mu       sync.Mutex
	policies map[string]bool // AdmissionPolicies with a tessera_admission_policy_compiled series
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_admission_requests_total",
			Help: "Admission requests by operation, kind and result (allowed, patched, warned, denied, error).",
		}, []string{"operation", "kind", "result"}),
		policyCompiled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tessera_admission_policy_compiled",
			Help: "1 when the AdmissionPolicy compiles and its tests pass, 0 when it does not (its last good version, if any, keeps serving); as its status.compiled.",
		}, []string{"policy"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.policyCompiled)
	}
	return m
}

// Requests is the tessera_admission_requests_total counter vector.
func (m *Metrics) Requests() *prometheus.CounterVec { return m.requests }

// PolicyCompiled is the tessera_admission_policy_compiled gauge vector.
func (m *Metrics) PolicyCompiled() *prometheus.GaugeVec { return m.policyCompiled }

func (m *Metrics) count(operation, kind, result string) {
	if m != nil {
		m.requests.WithLabelValues(operation, kind, result).Inc()
	}
}

// setPolicies reports every AdmissionPolicy (name -> compiles) and drops the series of
// policies that are gone.
func (m *Metrics) setPolicies(compiled map[string]bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.policies {
		if _, ok := compiled[name]; !ok {
			m.policyCompiled.DeleteLabelValues(name)
		}
	}
	m.policies = make(map[string]bool, len(compiled))
	for name, ok := range compiled {
		v := 0.0
		if ok {
			v = 1
		}
		m.policyCompiled.WithLabelValues(name).Set(v)
		m.policies[name] = true
	}
}
