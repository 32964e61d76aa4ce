package report

// Savings compares a replay under Tessera's autoscaler with the same jobs on the
// always-on cluster and under a Cluster-Autoscaler-like rule: GPU-node-hours paid for
// and the mean queue wait (censored waits included).
type Savings struct {
	GPUNodeHours            float64 `json:"gpu_node_hours"`
	GPUNodeHoursAlwaysOn    float64 `json:"gpu_node_hours_always_on"`
	SavedPct                float64 `json:"saved_pct"`
	MeanWaitSeconds         float64 `json:"mean_wait_seconds"`
	MeanWaitSecondsAlwaysOn float64 `json:"mean_wait_seconds_always_on"`
	// ScaleDownEvictions is the pods evicted from removed nodes, per run.
	ScaleDownEvictions float64 `json:"scale_down_evictions"`
	// CALike is the Cluster-Autoscaler-like rule's figures.
	CALike RuleSavings `json:"ca_like"`
	// AlwaysOn and CALikeReplay are the other two replays, for the charts.
	AlwaysOn     *Replay `json:"-"`
	CALikeReplay *Replay `json:"-"`
}

// RuleSavings is what one autoscaling rule paid and how long jobs waited under it.
type RuleSavings struct {
	GPUNodeHours    float64 `json:"gpu_node_hours"`
	SavedPct        float64 `json:"saved_pct"`
	MeanWaitSeconds float64 `json:"mean_wait_seconds"`
	// ScaleDownEvictions is the pods evicted from removed nodes, per run.
	ScaleDownEvictions float64 `json:"scale_down_evictions"`
}

// NewSavings compares the replays of the same jobs always on, under Tessera's
// autoscaler and under the CA-like rule.
func NewSavings(alwaysOn, tessera, caLike *Replay) *Savings {
	return savingsOf([]*Replay{alwaysOn}, []*Replay{tessera}, []*Replay{caLike})
}

// savingsOf pools runs: node-hours are summed, waits pooled over every job.
func savingsOf(alwaysOn, tessera, caLike []*Replay) *Savings {
	on := nodeHours(alwaysOn)
	s := &Savings{GPUNodeHours: nodeHours(tessera), GPUNodeHoursAlwaysOn: on,
		MeanWaitSeconds: pooledMeanWait(tessera), MeanWaitSecondsAlwaysOn: pooledMeanWait(alwaysOn), ScaleDownEvictions: evictions(tessera),
		CALike: RuleSavings{GPUNodeHours: nodeHours(caLike), MeanWaitSeconds: pooledMeanWait(caLike), ScaleDownEvictions: evictions(caLike)}}
	s.SavedPct, s.CALike.SavedPct = savedPct(s.GPUNodeHours, on), savedPct(s.CALike.GPUNodeHours, on)
	if len(alwaysOn) == 1 {
		s.AlwaysOn, s.CALikeReplay = alwaysOn[0], caLike[0]
	}
	return s
}

// SavedRatio is how many times the GPU-node-hours the CA-like rule saves Tessera's
// autoscaler saves; 0 when the CA-like rule saves nothing.
func (s *Savings) SavedRatio() float64 {
	if s.CALike.SavedPct <= 0 {
		return 0
	}
	return s.SavedPct / s.CALike.SavedPct
}

// WaitChangePct is the change of the mean wait under Tessera's autoscaler against
// always on, in percent; 0 when both are 0.
func (s *Savings) WaitChangePct() float64 {
	return changePct(s.MeanWaitSeconds, s.MeanWaitSecondsAlwaysOn)
}

func changePct(v, base float64) float64 {
	if base == 0 {
		if v == 0 {
			return 0
		}
		return 100
	}
	return 100 * (v - base) / base
}

func savedPct(hours, alwaysOn float64) float64 {
	if alwaysOn <= 0 {
		return 0
	}
	return 100 * (1 - hours/alwaysOn)
}

func nodeHours(rs []*Replay) float64 {
	var h float64
	for _, r := range rs {
		h += r.GPUNodeHours
	}
	return h / float64(max(len(rs), 1))
}

func evictions(rs []*Replay) float64 {
	var n int
	for _, r := range rs {
		n += r.ScaleDownEvictions
	}
	return float64(n) / float64(max(len(rs), 1))
}

func pooledMeanWait(rs []*Replay) float64 {
	var sum float64
	var n int
	for _, r := range rs {
		for _, w := range r.WaitSeconds {
			sum += w
		}
		n += len(r.WaitSeconds)
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// summarizeSavings pools the savings of runs that all have them; nil otherwise.
func summarizeSavings(rs []Result) *Savings {
	var on, ts, ca []*Replay
	for _, r := range rs {
		if r.Savings == nil || r.Savings.AlwaysOn == nil || r.Replay == nil {
			return nil
		}
		on, ts, ca = append(on, r.Savings.AlwaysOn), append(ts, r.Replay), append(ca, r.Savings.CALikeReplay)
	}
	if len(rs) == 0 {
		return nil
	}
	return savingsOf(on, ts, ca)
}
