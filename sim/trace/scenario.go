package trace

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Scenario is a built-in workload: a cluster, its queues and a job mix with arrival
// times and run times on a virtual clock that starts at 0.
type Scenario struct {
	Name string
	Seed int64
	// Horizon is the length of the arrival window in seconds; jobs arrive in [0, Horizon).
	Horizon int64
	Nodes   []NodeSpec
	Queues  []QueueSpec
	// Jobs are sorted by arrival time, then name.
	Jobs []JobSpec
}

// QueueSpec is a queue of a scenario, its GPU shares in whole GPUs.
type QueueSpec struct {
	Name           string
	Weight         int32
	DeservedGPUs   int64
	CapabilityGPUs int64
	Reclaimable    bool
}

// JobSpec is one job of a scenario: Tasks identical pods, of which MinMember must be
// placed together (a gang when MinMember > 1).
type JobSpec struct {
	Name string
	// Class says what kind of job this is, for reports: "pretrain", "finetune" or "experiment".
	Class     string
	Queue     string
	Priority  int32
	MinMember int
	Tasks     int
	// GPUsPerTask is the number of whole GPUs of each task; 0 for a slice of one GPU.
	GPUsPerTask int
	// GPUMemoryMiB is each task's slice of one GPU's memory when GPUsPerTask == 0.
	GPUMemoryMiB int64
	MilliCPU     int64
	MemoryMiB    int64
	// Arrival is when the job is submitted and Duration how long it runs once all of
	// its tasks are placed, both in seconds.
	Arrival, Duration int64
	// CheckpointEvery is how often the job saves its progress, in seconds; an eviction
	// loses the work since. 0: the job never checkpoints, so an eviction loses all of
	// it, and its users mark its pods not to be evicted (Protected).
	CheckpointEvery int64
}

// Protected reports whether the job's pods carry Cluster Autoscaler's
// safe-to-evict: "false" and Karpenter's do-not-disrupt: "true". The rule, the same for
// every scheduler and autoscaler: a job that never checkpoints is protected, since an
// eviction would throw all of its work away.
func (j JobSpec) Protected() bool { return j.CheckpointEvery == 0 }

// Checkpoint intervals of the built-in scenarios' job classes, in seconds.
const (
	// CheckpointPretrain: pretraining saves its state every hour.
	CheckpointPretrain = 3600
	// CheckpointFinetune: fine-tunes save every 30 minutes.
	CheckpointFinetune = 1800
	// CheckpointBatch: openb's best-effort and burstable pods, batch work, save every 30
	// minutes.
	CheckpointBatch = 1800
)

// CheckpointForQoS is the checkpoint interval of an openb pod by its qos column:
// latency-sensitive pods (LS: notebooks, interactive and serving work) never
// checkpoint and are protected; the others (BE, Burstable, Guaranteed: batch work)
// checkpoint every CheckpointBatch.
func CheckpointForQoS(qos string) int64 {
	if qos == "LS" {
		return 0
	}
	return CheckpointBatch
}

// GPUs is the job's whole-GPU demand (Tasks x GPUsPerTask); 0 for slice jobs.
func (j JobSpec) GPUs() int64 { return int64(j.Tasks) * int64(j.GPUsPerTask) }

var scenarios = map[string]func(seed int64, v Variant) (Scenario, error){
	"operator": operatorScenario,
	"diurnal":  diurnalScenario,
}

// Bounds of a scenario variant.
const (
	// MaxScenarioNodes bounds Variant.Nodes.
	MaxScenarioNodes = 20000
	// MaxScenarioLoad bounds Variant.Load.
	MaxScenarioLoad = 100
	// MaxScenarioHours bounds Variant.Hours (366 days, the replay's arrival window).
	MaxScenarioHours = 366 * 24
	// MaxScenarioJobs bounds the jobs a variant may expect to generate (nodes x load x
	// hours), so that a variant too large is refused before it fills the memory.
	MaxScenarioJobs = 20_000_000
)

// Variant changes a built-in scenario's size: its nodes (the node pool and the queues'
// shares scaled with them, and with them the arrival rates, so that the load on the
// cluster stays the same), its arrival rates and the length of its arrival window. The
// zero value is the scenario itself.
type Variant struct {
	// Nodes is the number of nodes; 0 keeps the scenario's.
	Nodes int
	// Load multiplies the arrival rates (and the backlog waiting at 0); 0 keeps 1.
	Load float64
	// Hours is the length of the arrival window; 0 keeps the scenario's.
	Hours float64
}

// Check reports a variant out of bounds, naming its field.
func (v Variant) Check() error {
	switch {
	case v.Nodes < 0 || v.Nodes > MaxScenarioNodes:
		return fmt.Errorf("nodes %d: must be 1 to %d", v.Nodes, MaxScenarioNodes)
	case !(v.Load >= 0 && v.Load <= MaxScenarioLoad):
		return fmt.Errorf("load %g: must be a multiple of the arrival rate above 0 and at most %d", v.Load, MaxScenarioLoad)
	case !(v.Hours >= 0 && v.Hours <= MaxScenarioHours):
		return fmt.Errorf("hours %g: must be above 0 and at most %d (366 days)", v.Hours, MaxScenarioHours)
	case v.Hours > 0 && math.Round(v.Hours*3600) < 1:
		return fmt.Errorf("hours %g: the arrival window must last at least a second", v.Hours)
	}
	return nil
}

// nodes is the variant's node count, def by default.
func (v Variant) nodes(def int) int { return cmp.Or(v.Nodes, def) }

// load is the variant's rate multiplier, 1 by default.
func (v Variant) load() float64 { return cmp.Or(v.Load, 1) }

// horizon is the variant's arrival window in seconds, def by default.
func (v Variant) horizon(def int64) int64 {
	if v.Hours == 0 {
		return def
	}
	return int64(math.Round(v.Hours * 3600))
}

// name is the scenario's name with what the variant changes from its nodes and
// horizon (seconds), "operator (40 nodes, load 2, 12h)"; the name alone for the
// scenario itself.
func (v Variant) name(base string, nodes int, horizon int64) string {
	var parts []string
	if v.nodes(nodes) != nodes {
		parts = append(parts, fmt.Sprintf("%d nodes", v.Nodes))
	}
	if v.load() != 1 {
		parts = append(parts, fmt.Sprintf("load %g", v.Load))
	}
	if v.horizon(horizon) != horizon {
		parts = append(parts, fmt.Sprintf("%gh", v.Hours))
	}
	if len(parts) == 0 {
		return base
	}
	return base + " (" + strings.Join(parts, ", ") + ")"
}

// checkJobs refuses a variant expected to generate more than MaxScenarioJobs jobs.
func checkJobs(name string, expected float64) error {
	if expected > MaxScenarioJobs {
		return fmt.Errorf("%s: about %.0f jobs expected, more than %d; lower the nodes, the load or the hours (--scenario-nodes, --scenario-load, --scenario-hours)", name, expected, MaxScenarioJobs)
	}
	return nil
}

// ScenarioNames returns the names of the built-in scenarios, sorted.
func ScenarioNames() []string {
	return slices.Sorted(maps.Keys(scenarios))
}

// BuildScenario returns the named built-in scenario generated with the given seed;
// the same name and seed always give the same scenario.
func BuildScenario(name string, seed int64) (Scenario, error) {
	return BuildVariant(name, seed, Variant{})
}

// BuildVariant returns a variant of the named built-in scenario generated with the
// given seed; the zero Variant gives BuildScenario's scenario.
func BuildVariant(name string, seed int64, v Variant) (Scenario, error) {
	gen, ok := scenarios[name]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q; built-in scenarios: %s", name, strings.Join(ScenarioNames(), ", "))
	}
	if err := v.Check(); err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, err)
	}
	return gen(seed, v)
}

// The "operator" scenario. Its queue figures come from an operator's report about a
// cluster where train-prod deserved 15 GPUs (capability 20) and train-dev 5 (capability
// 10): the deserved shares add up to that cluster's 20 GPUs, so every figure is scaled
// by clusterGPUs / operatorReportGPUs (x4 on the 80-GPU cluster: train-prod deserves 60,
// capped at 80; train-dev deserves 20, capped at 40). Unscaled, train-prod's capability
// of 20 GPUs could never admit a 32-GPU pretraining gang. A variant with more or fewer
// nodes scales the shares the same way, and the job mix with the nodes: arrival rates
// and backlogs by nodes / operatorNodes, pretraining gangs one per day per 10 nodes.
const (
	operatorNodes         = 10
	operatorGPUsPerNode   = 8
	operatorModel         = "A100-80GB"
	operatorReportGPUs    = 20
	operatorHorizon       = 24 * 3600
	operatorNodeMilliCPU  = 128000
	operatorNodeMemoryMiB = 1024 * 1024
	// operatorRackNodes is the nodes per rack.
	operatorRackNodes = operatorNodes / 2
)

// operatorJobClass describes one class of the operator scenario's job mix.
type operatorJobClass struct {
	class string
	// ratePerHour is the mean Poisson arrival rate; arrivals follow a daily cycle
	// between (1-swing) and (1+swing) times it, peaking at 12:00.
	ratePerHour float64
	// every, when set instead of ratePerHour, submits one job at a uniformly random
	// time in each consecutive window of that many seconds.
	every int64
	// backlog is how many jobs of the class are already waiting at time 0 (the queue
	// left from the night), so the day does not start on an empty cluster.
	backlog int
	gen     func(r *rand.Rand, j *JobSpec)
}

const diurnalSwing = 0.4

func operatorClasses() []operatorJobClass {
	return []operatorJobClass{{
		// 32-GPU pretraining gangs: 4 pods x 8 GPUs, 2 to 6 hours, train-prod, high
		// priority; one is waiting at 0 and one more is submitted at a random time in
		// the day (they weigh much in the demand, so their count is not left to chance).
		class: "pretrain", every: 24 * 3600, backlog: 1,
		gen: func(r *rand.Rand, j *JobSpec) {
			j.Queue, j.Priority = "train-prod", 1000
			j.Tasks, j.MinMember, j.GPUsPerTask = 4, 4, 8
			j.MilliCPU, j.MemoryMiB = 64000, 512*1024
			j.Duration = uniform(r, 2*3600, 6*3600)
			j.CheckpointEvery = CheckpointPretrain
		},
	}, {
		// 8-GPU fine-tunes: 1 or 2 pods of 8 GPUs, 1 to 3 hours, mostly train-prod.
		class: "finetune", ratePerHour: 0.8, backlog: 2,
		gen: func(r *rand.Rand, j *JobSpec) {
			j.Queue, j.Priority = "train-prod", 500
			if r.Float64() < 0.4 {
				j.Queue = "train-dev"
			}
			j.Tasks = 1 + r.IntN(2)
			j.MinMember, j.GPUsPerTask = j.Tasks, 8
			j.MilliCPU, j.MemoryMiB = 48000, 384*1024
			j.Duration = uniform(r, 1*3600, 3*3600)
			j.CheckpointEvery = CheckpointFinetune
		},
	}, {
		// Single-GPU experiments and notebooks needing 10-40 GiB of an 80 GiB card, 1 to
		// 3 hours, 55% train-dev, low priority, no checkpoints. The split keeps train-dev's demand at the
		// day's peak within its capability (TestOperatorScenarioQueuesFitCapability).
		class: "experiment", ratePerHour: 60, backlog: 60,
		gen: func(r *rand.Rand, j *JobSpec) {
			j.Queue, j.Priority = "train-dev", 100
			if r.Float64() < 0.45 {
				j.Queue = "train-prod"
			}
			j.Tasks, j.MinMember, j.GPUsPerTask = 1, 1, 0
			j.GPUMemoryMiB = int64(10+r.IntN(31)) * 1024
			j.MilliCPU, j.MemoryMiB = 4000, 32*1024
			j.Duration = uniform(r, 3600, 3*3600)
		},
	}}
}

func operatorScenario(seed int64, v Variant) (Scenario, error) {
	nodes := v.nodes(operatorNodes)
	s := Scenario{Name: v.name("operator", operatorNodes, operatorHorizon), Seed: seed, Horizon: v.horizon(operatorHorizon)}
	// scale is the variant's jobs against the scenario's: its nodes and its load.
	scale := float64(nodes) / operatorNodes * v.load()
	expected := 0.0
	for _, c := range operatorClasses() {
		expected += scale * (float64(c.backlog) + c.ratePerHour*float64(s.Horizon)/3600)
		if c.every > 0 {
			expected += scale * float64(s.Horizon) / float64(c.every)
		}
	}
	if err := checkJobs(s.Name, expected); err != nil {
		return s, err
	}
	width := max(2, len(strconv.Itoa(nodes-1)))
	for i := range nodes {
		s.Nodes = append(s.Nodes, NodeSpec{
			Name:         fmt.Sprintf("a100-%0*d", width, i),
			MilliCPU:     operatorNodeMilliCPU,
			MemoryMiB:    operatorNodeMemoryMiB,
			GPUs:         operatorGPUsPerNode,
			Model:        operatorModel,
			GPUMemoryMiB: gpuModelMemoryMiB[operatorModel],
			Labels: map[string]string{
				tesserav1.LabelGPUModel: operatorModel,
				tesserav1.LabelGPUCount: strconv.Itoa(operatorGPUsPerNode),
				tesserav1.LabelRack:     fmt.Sprintf("r%d", i/operatorRackNodes),
				tesserav1.LabelZone:     "z0",
			},
		})
	}
	gpus := int64(nodes * operatorGPUsPerNode)
	share := func(reportGPUs int64) int64 { return max(1, reportGPUs*gpus/operatorReportGPUs) }
	s.Queues = []QueueSpec{
		{Name: "train-prod", Weight: 2, DeservedGPUs: share(15), CapabilityGPUs: share(20), Reclaimable: true},
		{Name: "train-dev", Weight: 1, DeservedGPUs: share(5), CapabilityGPUs: share(10), Reclaimable: true},
	}
	r := NewRand(seed)
	for _, c := range operatorClasses() {
		arrivals := make([]int64, int(math.Round(float64(c.backlog)*scale)))
		if c.every > 0 {
			every := max(1, int64(math.Round(float64(c.every)/scale)))
			for start := int64(0); start+every <= s.Horizon; start += every {
				arrivals = append(arrivals, start+r.Int64N(every))
			}
		} else {
			arrivals = append(arrivals, poissonArrivals(r, c.ratePerHour*scale/3600, diurnalSwing, s.Horizon)...)
		}
		for k, t := range arrivals {
			j := JobSpec{Name: fmt.Sprintf("%s-%03d", c.class, k), Class: c.class, Arrival: t}
			c.gen(r, &j)
			s.Jobs = append(s.Jobs, j)
		}
	}
	slices.SortStableFunc(s.Jobs, func(a, b JobSpec) int {
		if a.Arrival != b.Arrival {
			return int(a.Arrival - b.Arrival)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return s, nil
}

// poissonArrivals draws the arrival times (whole seconds, ascending) of a Poisson
// process over [0, horizon) whose rate (per second) follows a daily cycle
// rate x (1 - swing x cos(2 pi t / 1 day)), lowest at midnight and highest at noon,
// by thinning a process of the peak rate.
func poissonArrivals(r *rand.Rand, rate, swing float64, horizon int64) []int64 {
	peak := rate * (1 + swing)
	var out []int64
	t := 0.0
	for {
		t += r.ExpFloat64() / peak
		if t >= float64(horizon) {
			return out
		}
		if r.Float64()*peak <= rate*(1-swing*math.Cos(2*math.Pi*t/86400)) {
			out = append(out, int64(t))
		}
	}
}

// uniform draws a whole number of seconds uniformly from [lo, hi].
func uniform(r *rand.Rand, lo, hi int64) int64 { return lo + r.Int64N(hi-lo+1) }
