package recommender

import "github.com/prometheus/client_golang/prometheus"

// Results of a recorded run.
const (
	ResultOK           = "ok"
	ResultOOM          = "oom"
	ResultPreallocated = "preallocated"
)

// Metrics are the recommender's Prometheus metrics.
type Metrics struct {
	Runs *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tessera_gpu_profile_runs_total",
			Help: "Finished pods recorded into GPUProfiles, by result: ok, oom (ran out of GPU memory), preallocated (took the whole GPU from its start)."},
			[]string{"result"}),
	}
	for _, r := range []string{ResultOK, ResultOOM, ResultPreallocated} {
		m.Runs.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.Runs)
	}
	return m
}
