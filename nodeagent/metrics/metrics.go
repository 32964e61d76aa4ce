package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// GPU is one GPU's reading.
type GPU struct {
	Index              int
	UUID               string
	Model              string
	UtilizationPercent int
	MemoryUsedBytes    uint64
	MemoryTotalBytes   uint64
	TemperatureC       int
	Healthy            bool
}

// Slice is one pod's GPU-memory slice and what its processes use.
type Slice struct {
	Namespace, Pod string
	LimitBytes     uint64
	UsedBytes      uint64
}

// Metrics are the agent's collectors.
type Metrics struct {
	node string

	utilization *prometheus.GaugeVec
	memUsed     *prometheus.GaugeVec
	memTotal    *prometheus.GaugeVec
	temperature *prometheus.GaugeVec
	healthy     *prometheus.GaugeVec
	sliceLimit  *prometheus.GaugeVec
	sliceUsed   *prometheus.GaugeVec
	nvmlUp      prometheus.Gauge
	refused     *prometheus.CounterVec
	delivery    prometheus.Gauge
	pressure    *prometheus.CounterVec
}

var gpuLabels = []string{"gpu", "uuid", "model", "node"}

// New creates the collectors for node and registers them with reg.
func New(reg prometheus.Registerer, node string) *Metrics {
	gv := func(name, help string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		node:        node,
		utilization: gv("tessera_gpu_utilization_ratio", "Fraction of the last sample period during which a kernel ran on the GPU (0-1).", gpuLabels),
		memUsed:     gv("tessera_gpu_memory_used_bytes", "GPU memory in use.", gpuLabels),
		memTotal:    gv("tessera_gpu_memory_total_bytes", "GPU memory installed.", gpuLabels),
		temperature: gv("tessera_gpu_temperature_celsius", "GPU core temperature.", gpuLabels),
		healthy:     gv("tessera_gpu_healthy", "1 when the GPU is healthy, 0 after an Xid error, ECC error or when it fell off the bus.", gpuLabels),
		sliceLimit:  gv("tessera_gpu_slice_memory_limit_bytes", "GPU memory slice assigned to a pod.", []string{"namespace", "pod"}),
		sliceUsed:   gv("tessera_gpu_slice_memory_used_bytes", "GPU memory used by the processes of a pod with a slice.", []string{"namespace", "pod"}),
		nvmlUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tessera_node_agent_nvml_up",
			Help: "1 when NVML answers, 0 when it is missing or failing."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tessera_device_plugin_refusals_total",
			Help: "GPU allocations the device plugin refused because of the pod, by reason: NoAssignment, OtherScheduler, NotBoundByScheduler (an assignment the scheduler did not write), InvalidAssignment."},
			[]string{"reason"}),
		delivery: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tessera_node_agent_gpu_delivery_refused",
			Help: "1 while the node agent hands out no GPU because the NVIDIA container toolkit still takes device lists from NVIDIA_VISIBLE_DEVICES of unprivileged containers (or its configuration cannot be read), 0 otherwise."}),
		pressure: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tessera_gpu_pressure_evictions_total",
			Help: "Pods the node agent evicted (Eviction API) because their GPU ran short of memory while they used more than their request, by GPU index and trigger: Threshold (use above the pressure threshold) or Arrival (a newly bound pod's request did not fit)."},
			[]string{"node", "gpu", "trigger"}),
	}
	reg.MustRegister(m.utilization, m.memUsed, m.memTotal, m.temperature, m.healthy, m.sliceLimit, m.sliceUsed, m.nvmlUp, m.refused, m.delivery, m.pressure)
	return m
}

// SetGPUs replaces the per-GPU series with gpus.
func (m *Metrics) SetGPUs(gpus []GPU) {
	for _, v := range []*prometheus.GaugeVec{m.utilization, m.memUsed, m.memTotal, m.temperature, m.healthy} {
		v.Reset()
	}
	for _, g := range gpus {
		l := prometheus.Labels{"gpu": strconv.Itoa(g.Index), "uuid": g.UUID, "model": g.Model, "node": m.node}
		m.healthy.With(l).Set(b2f(g.Healthy))
		if !g.Healthy {
			continue // its readings are stale or absent
		}
		m.utilization.With(l).Set(float64(g.UtilizationPercent) / 100)
		m.memUsed.With(l).Set(float64(g.MemoryUsedBytes))
		m.memTotal.With(l).Set(float64(g.MemoryTotalBytes))
		m.temperature.With(l).Set(float64(g.TemperatureC))
	}
}

// SetSlices replaces the per-pod slice series with slices.
func (m *Metrics) SetSlices(slices []Slice) {
	m.sliceLimit.Reset()
	m.sliceUsed.Reset()
	for _, s := range slices {
		l := prometheus.Labels{"namespace": s.Namespace, "pod": s.Pod}
		m.sliceLimit.With(l).Set(float64(s.LimitBytes))
		m.sliceUsed.With(l).Set(float64(s.UsedBytes))
	}
}

// Refused counts an allocation the device plugin refused, by reason.
func (m *Metrics) Refused(reason string) prometheus.Counter { return m.refused.WithLabelValues(reason) }

// PressureEvicted counts a pressure eviction from GPU index gpu, by trigger.
func (m *Metrics) PressureEvicted(gpu int, trigger string) prometheus.Counter {
	return m.pressure.WithLabelValues(m.node, strconv.Itoa(gpu), trigger)
}

// SetDeliveryRefused records whether the agent refuses to hand out GPUs.
func (m *Metrics) SetDeliveryRefused(refused bool) { m.delivery.Set(b2f(refused)) }

// DeliveryRefusedGauge exposes the series for tests.
func (m *Metrics) DeliveryRefusedGauge() prometheus.Gauge { return m.delivery }

// SetNVMLUp records whether NVML answers.
func (m *Metrics) SetNVMLUp(up bool) { m.nvmlUp.Set(b2f(up)) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// NVMLUpGauge, SliceLimit and SliceUsed expose single series for tests and callers
// that read values back (prometheus/testutil.ToFloat64).
func (m *Metrics) NVMLUpGauge() prometheus.Gauge { return m.nvmlUp }

// SliceLimit returns the slice-limit series of a pod.
func (m *Metrics) SliceLimit(namespace, pod string) prometheus.Gauge {
	return m.sliceLimit.WithLabelValues(namespace, pod)
}

// SliceUsed returns the slice-used series of a pod.
func (m *Metrics) SliceUsed(namespace, pod string) prometheus.Gauge {
	return m.sliceUsed.WithLabelValues(namespace, pod)
}
