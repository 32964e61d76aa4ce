package trace

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strconv"
	"sync"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/sim/traces"
)

// The "diurnal" scenario: a week of openb pods arriving on a day/night cycle, so that
// GPU demand peaks near 90% of the cluster's GPUs at noon and falls near 30% at
// midnight, the load an autoscaler can save on.
//
// The cluster is diurnalNodes nodes of the openb trace's most common GPU node (96
// CPUs, 384 GiB, 8 GPUs of model G2). Each job is one pod whose shape (CPU, memory,
// whole GPUs or a GPU share, as a memory slice of a G2) and lifetime (deletion minus
// creation time) are drawn together, uniformly, from the GPU pods of the openb default
// pod list that have both times, live at most a day and fit the node (diurnalPool);
// longer-lived pods are services that no daily cycle moves.
//
// Arrivals are a Poisson process whose rate follows the day, thinned from its peak:
// rate(t) = mean x (1 - swing x cos(2 pi t / day + lag)). The rates are derived from
// the pool, not tuned: with pods of mean GPU-seconds m, demand averages mean x m, so
// mean = (peak + trough) / 2 x GPUs / m; the pool's lifetimes smooth the cycle by a
// factor |H| and delay it by the angle lag (H is the Fourier transform at one cycle
// per day of the GPU-weighted share of pods still running s seconds after arrival),
// so swing = (peak - trough) / (peak + trough) / |H| and the lag is advanced. Jobs
// arrive from one day before the week starts (longer than any lifetime), and those
// still running at 0 start there with what is left of their run: the week starts in
// the cycle's steady state, near the trough.
const (
	diurnalDays        = 7
	diurnalNodes       = 8
	diurnalGPUsPerNode = 8
	diurnalModel       = "G2"
	diurnalNodeCPU     = 96000
	diurnalNodeMemory  = 384 * 1024
	// diurnalRackNodes is the nodes per rack.
	diurnalRackNodes = diurnalNodes / 2
	// DiurnalPeak and DiurnalTrough are the targets of GPU demand, as shares of the
	// cluster's GPUs, at noon and at midnight.
	DiurnalPeak   = 0.9
	DiurnalTrough = 0.3
	// diurnalMaxLifetime bounds the lifetime of the pods drawn, and the warm-up.
	diurnalMaxLifetime = 24 * 3600
)

// diurnalPod is one pod of the pool: its shape and lifetime.
type diurnalPod struct {
	spec     PodSpec
	lifetime int64
	gpus     float64 // NumGPU x GPUMilli / 1000
}

var diurnalPool = sync.OnceValues(func() ([]diurnalPod, error) {
	path, err := traces.OpenbPods("default")
	if err != nil {
		return nil, err
	}
	f, err := traces.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pods, err := ReadPods(f, path)
	if err != nil {
		return nil, err
	}
	var pool []diurnalPod
	for _, p := range pods {
		life := p.Deletion - p.Creation
		fits := p.NumGPU <= diurnalGPUsPerNode && p.MilliCPU <= diurnalNodeCPU && p.MemoryMiB <= diurnalNodeMemory
		if p.NumGPU == 0 || !fits || p.Creation < 0 || p.Deletion < 0 || life > diurnalMaxLifetime {
			continue
		}
		pool = append(pool, diurnalPod{spec: p, lifetime: max(life, 1), gpus: float64(p.GPURequestMilli()) / 1000})
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("%s: no GPU pod with a lifetime of at most a day", path)
	}
	return pool, nil
})

// diurnalCycle is the arrival process derived from a pool: the mean rate per second,
// the swing and the lag (radians) of rate(t) = mean x (1 - swing x cos(wt + lag)).
type diurnalCycle struct {
	mean, swing, lag float64
}

// newDiurnalCycle derives the arrival process that gives a demand between trough and
// peak (shares of gpus) from the pool's shapes and lifetimes.
func newDiurnalCycle(pool []diurnalPod, gpus, peak, trough float64) (diurnalCycle, error) {
	w := 2 * math.Pi / 86400
	var gpuSeconds float64
	var h complex128
	for _, p := range pool {
		d := float64(p.lifetime)
		gpuSeconds += p.gpus * d
		// The integral of exp(-iws) over the pod's lifetime [0, d].
		h += complex(p.gpus, 0) * (1 - cmplx.Exp(complex(0, -w*d))) / complex(0, w)
	}
	h /= complex(gpuSeconds, 0)
	m := gpuSeconds / float64(len(pool))
	c := diurnalCycle{mean: (peak + trough) / 2 * gpus / m, swing: (peak - trough) / (peak + trough) / cmplx.Abs(h), lag: -cmplx.Phase(h)}
	if c.swing > 1 {
		return c, fmt.Errorf("diurnal: the pods' lifetimes smooth the daily cycle too much (|H| = %.2f) for demand between %.0f%% and %.0f%%", cmplx.Abs(h), 100*trough, 100*peak)
	}
	return c, nil
}

// rate is the arrival rate at t seconds.
func (c diurnalCycle) rate(t float64) float64 {
	return c.mean * (1 - c.swing*math.Cos(2*math.Pi*t/86400+c.lag))
}

// arrivals draws the arrival times in [from, to) by thinning a process of the peak rate.
func (c diurnalCycle) arrivals(r *rand.Rand, from, to float64) []float64 {
	peak := c.mean * (1 + c.swing)
	var out []float64
	for t := from; ; {
		t += r.ExpFloat64() / peak
		if t >= to {
			return out
		}
		if r.Float64()*peak <= c.rate(t) {
			out = append(out, t)
		}
	}
}

// diurnalScenario builds the scenario, or a variant: more or fewer nodes raise or lower
// the arrival rate with the cluster's GPUs, so demand keeps its shares of them.
func diurnalScenario(seed int64, v Variant) (Scenario, error) {
	pool, err := diurnalPool()
	if err != nil {
		return Scenario{}, err
	}
	nodes := v.nodes(diurnalNodes)
	s := Scenario{Name: v.name("diurnal", diurnalNodes, diurnalDays*86400), Seed: seed, Horizon: v.horizon(diurnalDays * 86400)}
	cycle, err := newDiurnalCycle(pool, float64(nodes*diurnalGPUsPerNode), DiurnalPeak, DiurnalTrough)
	if err != nil {
		return Scenario{}, err
	}
	if load := v.load(); load != 1 {
		cycle.mean *= load
	}
	if err := checkJobs(s.Name, cycle.mean*float64(s.Horizon+diurnalMaxLifetime)); err != nil {
		return s, err
	}
	gpuMemory := gpuModelMemoryMiB[diurnalModel]
	width := max(2, len(strconv.Itoa(nodes-1)))
	for i := range nodes {
		s.Nodes = append(s.Nodes, NodeSpec{
			Name: fmt.Sprintf("g2-%0*d", width, i), MilliCPU: diurnalNodeCPU, MemoryMiB: diurnalNodeMemory,
			GPUs: diurnalGPUsPerNode, Model: diurnalModel, GPUMemoryMiB: gpuMemory,
			Labels: map[string]string{
				tesserav1.LabelGPUModel: diurnalModel,
				tesserav1.LabelGPUCount: strconv.Itoa(diurnalGPUsPerNode),
				tesserav1.LabelRack:     fmt.Sprintf("r%d", i/diurnalRackNodes),
				tesserav1.LabelZone:     "z0",
			},
		})
	}
	r := NewRand(seed)
	for k, at := range cycle.arrivals(r, -diurnalMaxLifetime, float64(s.Horizon)) {
		p := pool[r.IntN(len(pool))]
		arrival, run := int64(math.Floor(at)), p.lifetime
		if arrival < 0 {
			// Arrived during the warm-up: starts at 0 with the rest of its run, if any.
			if run += arrival; run <= 0 {
				continue
			}
			arrival = 0
		}
		j := JobSpec{Name: fmt.Sprintf("pod-%05d", k), Class: "pod", MinMember: 1, Tasks: 1,
			MilliCPU: p.spec.MilliCPU, MemoryMiB: p.spec.MemoryMiB, Arrival: arrival, Duration: run, CheckpointEvery: CheckpointForQoS(p.spec.QoS)}
		if p.spec.IsShare() {
			j.GPUMemoryMiB, _ = MilliToMiB(p.spec.GPUMilli, diurnalModel)
		} else {
			j.GPUsPerTask = p.spec.NumGPU
		}
		s.Jobs = append(s.Jobs, j)
	}
	return s, nil
}

// HourlyDemand is the GPU demand of a scenario's jobs, as a share of its GPUs, per
// hour of the day averaged over its days: the GPUs that jobs arrived and not yet done
// would hold if each ran at once (GPU slices counted as their share of the memory of
// the first node's GPUs).
func HourlyDemand(s Scenario) [24]float64 {
	var gpus float64
	for _, n := range s.Nodes {
		gpus += float64(n.GPUs)
	}
	days := float64(s.Horizon) / 86400
	memory := s.Nodes[0].GPUMemoryMiB
	var byHour [24]float64
	for _, j := range s.Jobs {
		g := float64(j.GPUs())
		if j.GPUsPerTask == 0 {
			g = float64(j.Tasks) * float64(j.GPUMemoryMiB) / float64(memory)
		}
		// Spread the job's GPU-seconds over the hours it covers within the horizon.
		for t := j.Arrival; t < min(j.Arrival+j.Duration, s.Horizon); {
			next := min((t/3600+1)*3600, j.Arrival+j.Duration, s.Horizon)
			byHour[t/3600%24] += g * float64(next-t)
			t = next
		}
	}
	for h := range byHour {
		byHour[h] /= 3600 * days * gpus
	}
	return byHour
}
