package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// TypicalCoverage is the share of pods the typical shapes cover, as in the FGD paper.
const TypicalCoverage = 0.95

// FillUp describes one fill-up run.
type FillUp struct {
	Trace   string // name for reports
	Nodes   []trace.NodeSpec
	Pods    []trace.PodSpec
	Profile string
	// Config, when set, replaces the named profile's configuration (Profile still names
	// the run in reports).
	Config *scheduler.Config
	Seed   int64
	// Arrive is the GPU request to arrive, as a multiple of cluster GPU capacity (1.3).
	Arrive float64
	// OnPod is called after each arrived pod (progress bars); may be nil.
	OnPod func()
}

// RunFillUp runs the FGD paper's fill-up protocol with the named profile: pods arrive one
// by one in a seeded resample of the pod list and never leave; a pod that does not fit
// fails and is not retried. Every node is scored for every pod; the nodes are in the
// run's seeded order (trace.FillUpNodes), which a first-in-order tie break follows as
// the reference simulator breaks ties.
func RunFillUp(f FillUp) (report.Result, error) {
	start := time.Now()
	cfg, err := configFor(f.Profile, f.Config, f.Seed)
	if err != nil {
		return report.Result{}, err
	}
	cfg.PercentageOfNodesToScore = 100
	s, err := scheduler.New(cfg)
	if err != nil {
		return report.Result{}, err
	}
	var capacity int64
	for _, n := range f.Nodes {
		capacity += n.GPUMilli()
	}
	if capacity == 0 {
		return report.Result{}, fmt.Errorf("%s: the node list has no GPUs", f.Trace)
	}
	if err := trace.CheckFillUp(f.Pods, capacity, f.Arrive); err != nil {
		return report.Result{}, fmt.Errorf("%s: %w", f.Trace, err)
	}
	arrivals, order := trace.FillUpNodes(f.Pods, f.Nodes, capacity, f.Arrive, f.Seed)
	if len(arrivals) == 0 {
		return report.Result{}, fmt.Errorf("%s: no pod asks for a GPU", f.Trace)
	}
	nodes := buildNodes(order)
	snap := &framework.Snapshot{Nodes: nodes, Workload: workload(trace.TypicalShapes(f.Pods, TypicalCoverage), f.Pods)}
	frag := make([]float64, len(nodes))
	var fragTotal float64
	for i, n := range nodes {
		frag[i] = framework.NodeFragmentation(n, snap.Workload)
		fragTotal += frag[i]
	}
	var arrived, allocated int64
	curve := make([]report.Point, 0, len(arrivals))
	jobs := make([]*framework.Job, 1)
	pct := func(milli float64) float64 { return 100 * milli / float64(capacity) }
	for i := range arrivals {
		p := &arrivals[i]
		arrived += p.GPURequestMilli()
		jobs[0] = podJob(p, cfg.WholeGPUs)
		snap.Jobs = jobs
		r := s.RunSession(snap)
		for _, b := range r.Bindings {
			b.Task.Status = framework.TaskRunning
			allocated += int64(b.GPUs.Len()) * b.GPUMilli
			n := b.Node
			fragTotal -= frag[n.Index]
			frag[n.Index] = framework.NodeFragmentation(n, snap.Workload)
			fragTotal += frag[n.Index]
		}
		curve = append(curve, report.Point{ArrivedPct: pct(float64(arrived)), AllocPct: pct(float64(allocated)), FragPct: pct(fragTotal)})
		if f.OnPod != nil {
			f.OnPod()
		}
	}
	res := report.NewFillUpResult(f.Profile, f.Trace, f.Seed, curve, time.Since(start))
	res.OfflineUnallocatedPctAt100 = offlineUnallocatedPct(arrivals, gpusByModel(f.Nodes))
	return res, nil
}

// offlineUnallocatedPct is the unallocated % of cluster GPUs at 100% arrived that an
// offline packer would leave, gpus being the cluster's GPU milli per model, with every
// arrival known in advance: the larger of two losses. Shares: the GPU shares that
// arrived by then, packed first-fit decreasing onto whole GPUs, whole-GPU pods on the
// other GPUs; shares are what an online policy cannot pack perfectly (an 810-milli share
// leaves 190 that few pods fit). Models: the GPU request that no assignment to the
// models the pods accept can place (by Hall's condition, the most by which the pods
// that accept only a set of models ask for more than it has). It ignores CPU, memory
// and node boundaries, and models when the cluster has more than maxReferenceModels.
func offlineUnallocatedPct(arrivals []trace.PodSpec, gpus map[string]int64) float64 {
	models := slices.Sorted(maps.Keys(gpus))
	n := len(models)
	if n > maxReferenceModels {
		n = 0 // too many to tell apart: every pod accepts every model
	}
	var capacity, arrived int64
	for _, g := range gpus {
		capacity += g
	}
	var shares []int64
	asked := map[uint32]int64{} // GPU request by the set of models it accepts
	for i := 0; i < len(arrivals) && arrived < capacity; i++ {
		p := &arrivals[i]
		arrived += p.GPURequestMilli()
		if p.IsShare() {
			shares = append(shares, p.GPUMilli)
		}
		set := uint32(1)<<n - 1
		if p.GPUModels != nil {
			set = 0
			for k, m := range models[:n] {
				if p.AllowsModel(m) {
					set |= 1 << k
				}
			}
		}
		asked[set] += p.GPURequestMilli()
	}
	slices.Sort(shares)
	slices.Reverse(shares)
	var used []int64 // per GPU opened for shares
	var waste int64
	for _, m := range shares {
		i := slices.IndexFunc(used, func(u int64) bool { return u+m <= framework.MilliPerGPU })
		if i < 0 {
			used = append(used, m)
			waste += framework.MilliPerGPU - m
			continue
		}
		used[i] += m
		waste -= m
	}
	var short int64
	for y := range uint32(1) << n {
		var want, has int64
		for set, m := range asked {
			if set&^y == 0 {
				want += m
			}
		}
		for k, m := range models {
			if k >= n || y&(1<<k) != 0 {
				has += gpus[m]
			}
		}
		short = max(short, want-has)
	}
	return 100 * float64(min(max(waste, capacity-arrived+short), capacity)) / float64(capacity)
}

// maxReferenceModels bounds the GPU models the offline reference tells apart (it looks
// at every set of them).
const maxReferenceModels = 16

// gpusByModel is the GPU milli of the nodes per GPU model.
func gpusByModel(nodes []trace.NodeSpec) map[string]int64 {
	gpus := map[string]int64{}
	for _, n := range nodes {
		if n.GPUs > 0 {
			gpus[n.Model] += n.GPUMilli()
		}
	}
	return gpus
}
