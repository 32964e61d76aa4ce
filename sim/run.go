package sim

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/rightsize"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/sim/report"
	"github.com/tessera-gpu/tessera/sim/trace"
)

// Modes.
const (
	ModeFillUp = "fillup"
	ModeReplay = "replay"
)

// FirstSeed is the seed of the first run; run i uses FirstSeed+i, as the FGD paper.
const FirstSeed = 42

// MaxSeeds bounds the runs per profile.
const MaxSeeds = 1000

// Options selects the input, the mode and the runs of a simulation.
type Options struct {
	// Trace is a shipped openb pod-list variant ("default"), or several separated by
	// commas, run one after the other; or set NodesFile and PodsFile; or Scenario.
	Trace               string
	NodesFile, PodsFile string
	Scenario            string
	Mode                string
	Arrive              float64
	Profiles            []string
	Seeds               int
	// FirstSeed is the seed of the first run, FirstSeed+i of run i; 0 means the
	// package's FirstSeed.
	FirstSeed int64
	// Custom configurations run besides the named profiles, under their map keys.
	Custom map[string]scheduler.Config
	// Progress receives a progress bar; nil for none.
	Progress io.Writer
	// Warn receives warnings about the input ("warning: ..." lines); nil for none.
	Warn io.Writer
	// Autoscale runs each replay always on and under each autoscaler paired with its
	// profile, and reports the savings (RunAutoscaled); replay mode only.
	Autoscale bool
	// ProtectedShare, when set, replaces the input's rule for which jobs never
	// checkpoint and are protected from eviction with a random share of the jobs
	// (ReplayInput.WithProtectedShare), a variant for held-out measurements.
	ProtectedShare *float64
	// BootDelay is how long a node added back takes before pods can use it (the
	// command's default is DefaultBootDelay).
	BootDelay time.Duration
	// ScaleDownPolicy is the policy Tessera's autoscaler plans with (its settings apply
	// to every node of the replay, its nodeSelector to none); nil: the defaults.
	ScaleDownPolicy *tesserav1.ScaleDownPolicy
	// UnderusedShare, when set, replaces the ScaleDownPolicy default share of Tessera's
	// Underused method (0: empty nodes only).
	UnderusedShare *float64
	// Variant changes the scenario's nodes, load or arrival window; the zero value
	// keeps the scenario as it is.
	Variant trace.Variant
	// RightSizing runs each replay as every right-sizing arm (RightSizingArms),
	// autoscaled, and reports them (replay mode only; implies Autoscale).
	RightSizing bool
	// IdleReclaim is the reclaim arms' rule (a Queue's spec.idleReclaim); the zero
	// value is DefaultIdleRule.
	IdleReclaim IdleRule
	// Arms are the right-sizing arms to run (nil: RightSizingArms); profiles that
	// cannot share GPUs run only those of WholeGPUArms.
	Arms []string
	// EveryAutoscaler runs each autoscaled replay under every autoscaler, not only
	// those paired with its profile: the same placements under each.
	EveryAutoscaler bool
}

// replay runs one replay, autoscaled when the options say so.
func (o Options) replay(rp Replay) (report.Result, error) {
	if o.ProtectedShare != nil {
		rp.Input = rp.Input.WithProtectedShare(*o.ProtectedShare, rp.Seed)
	}
	rp.EveryAutoscaler = o.EveryAutoscaler
	a := Autoscaling{BootDelay: o.BootDelay, UnderusedShare: o.UnderusedShare, Policy: o.ScaleDownPolicy}
	switch {
	case rp.RightSizing != nil:
		return runRightSizing(rp, a)
	case !o.Autoscale:
		return RunReplay(rp)
	}
	return RunAutoscaled(rp, a)
}

// replayUnits is the progress units of a profile's replay of jobs: one per job and run.
func (o Options) replayUnits(profile string, jobs int) int {
	if o.Autoscale {
		return (1 + len(Replay{Profile: profile, EveryAutoscaler: o.EveryAutoscaler}.autoscalers())) * jobs
	}
	return jobs
}

// configFor is cfg when set, else the named profile's configuration, with the run's seed.
func configFor(profile string, cfg *scheduler.Config, seed int64) (scheduler.Config, error) {
	c := scheduler.Config{}
	if cfg != nil {
		c = *cfg
	} else {
		var err error
		if c, err = scheduler.Profile(profile); err != nil {
			return c, err
		}
	}
	c.Seed = seed
	return c, nil
}

// run is one (profile or configuration, seed) pair.
type run struct {
	profile string
	cfg     *scheduler.Config
	seed    int64
	// arm is the right-sizing arm; "" for none.
	arm string
}

// rightSizing is the run's right-sizing arm; nil for none.
func (r run) rightSizing(idle IdleRule) *RightSizing {
	if r.arm == "" {
		return nil
	}
	return &RightSizing{Arm: r.arm, Config: rightsize.DefaultConfig(), Idle: idle}
}

// Run performs every (profile, seed) run of the options, two at a time per core, and
// returns the results in profile order, then seed order.
func Run(o Options) ([]report.Result, error) {
	first := o.FirstSeed
	if first == 0 {
		first = FirstSeed
	}
	if err := CheckSeeds(first, o.Seeds); err != nil {
		return nil, err
	}
	if lists := strings.Split(o.Trace, ","); len(lists) > 1 {
		return runLists(o, lists)
	}
	var runs []run
	named := map[string]bool{}
	for _, p := range o.Profiles {
		if _, err := scheduler.Profile(p); err != nil {
			return nil, err
		}
		if named[p] {
			return nil, fmt.Errorf("profile %s is named twice; each profile runs once per seed", p)
		}
		named[p] = true
		for i := 0; i < o.Seeds; i++ {
			runs = append(runs, run{profile: p, seed: first + int64(i)})
		}
	}
	for name, cfg := range o.Custom {
		if named[name] {
			return nil, fmt.Errorf("configuration %s has the name of a profile that also runs; rename it", name)
		}
		for i := 0; i < o.Seeds; i++ {
			runs = append(runs, run{profile: name, cfg: &cfg, seed: first + int64(i)})
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no profile to run; name one with --profile (%s)", strings.Join(scheduler.ProfileNames(), ", "))
	}
	if o.RightSizing {
		if o.Mode == ModeFillUp {
			return nil, fmt.Errorf("--rightsizing runs in --mode replay; fill-up pods never end, so no run is ever measured")
		}
		o.Autoscale = true
		var err error
		if runs, err = withArms(runs, o.Arms); err != nil {
			return nil, err
		}
	} else if o.Arms != nil {
		return nil, fmt.Errorf("right-sizing arms (%s) apply with right-sizing only", strings.Join(o.Arms, ", "))
	}
	one, units, label, err := o.runner()
	if err != nil {
		return nil, err
	}
	var progress *report.Progress
	if o.Progress != nil {
		total := 0
		for _, r := range runs {
			total += units(r)
		}
		progress = report.NewProgress(o.Progress, total, label)
		defer progress.Done()
	}
	results := make([]report.Result, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = one(r, func() { progress.Add(1) })
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	addPublished(o, results)
	return results, nil
}

// runner reads the input once and returns the function that performs one run, the
// number of progress units of a run with a given seed, and the progress label.
func (o Options) runner() (func(run, func()) (report.Result, error), func(run) int, string, error) {
	switch {
	case o.Scenario != "":
		if o.Mode == ModeFillUp {
			return nil, nil, "", fmt.Errorf("--scenario runs in --mode replay; fill-up needs a pod list (--trace or --pods)")
		}
		if _, err := trace.BuildVariant(o.Scenario, FirstSeed, o.Variant); err != nil {
			return nil, nil, "", err
		}
		one := func(r run, tick func()) (report.Result, error) {
			s, err := trace.BuildVariant(o.Scenario, r.seed, o.Variant)
			if err != nil {
				return report.Result{}, err
			}
			return o.replay(Replay{Input: ScenarioInput(s), Profile: r.profile, Config: r.cfg, Seed: r.seed, OnJob: tick, RightSizing: r.rightSizing(o.IdleReclaim)})
		}
		units := func(r run) int {
			s, _ := trace.BuildVariant(o.Scenario, r.seed, o.Variant)
			return o.replayUnits(r.profile, len(s.Jobs))
		}
		return one, units, "jobs", nil
	case o.Trace != "" || o.PodsFile != "":
		var in TraceInput
		var err error
		if o.Trace != "" {
			in, err = OpenbInput(o.Trace)
		} else {
			in, err = FileInput(o.NodesFile, o.PodsFile)
		}
		if err != nil {
			return nil, nil, "", err
		}
		if w := in.Unplaceable(); w != "" && o.Warn != nil {
			fmt.Fprintf(o.Warn, "warning: %s\n", w)
		}
		if o.Mode == ModeReplay {
			rin, err := PodTraceInput(in.Name, in.Nodes, in.Pods)
			if err != nil {
				return nil, nil, "", err
			}
			return func(r run, tick func()) (report.Result, error) {
				return o.replay(Replay{Input: rin, Profile: r.profile, Config: r.cfg, Seed: r.seed, OnJob: tick, RightSizing: r.rightSizing(o.IdleReclaim)})
			}, func(r run) int { return o.replayUnits(r.profile, len(rin.Jobs)) }, "pods", nil
		}
		if o.Autoscale {
			return nil, nil, "", fmt.Errorf("--autoscale runs in --mode replay; fill-up pods never leave, so no node ever empties")
		}
		arrive := o.Arrive
		var capacity int64
		for _, n := range in.Nodes {
			capacity += n.GPUMilli()
		}
		if err := trace.CheckFillUp(in.Pods, capacity, arrive); err != nil {
			return nil, nil, "", err
		}
		units := func(r run) int { return len(trace.FillUp(in.Pods, capacity, arrive, r.seed)) }
		return func(r run, tick func()) (report.Result, error) {
			return RunFillUp(FillUp{Trace: in.Name, Nodes: in.Nodes, Pods: in.Pods, Profile: r.profile, Config: r.cfg, Seed: r.seed, Arrive: arrive, OnPod: tick})
		}, units, "pods", nil
	}
	return nil, nil, "", fmt.Errorf("no input: give --trace (%s), --nodes and --pods, or --scenario (%s)",
		strings.Join(OpenbVariants(), ", "), strings.Join(trace.ScenarioNames(), ", "))
}
