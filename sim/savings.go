package sim

import (
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/sim/report"
)

// DefaultBootDelay is how long a GPU node added back takes before pods can use it.
const DefaultBootDelay = 5 * time.Minute

// AutoscalersOf is, per scheduler profile, the autoscalers its users run it with and
// that an autoscaled replay pairs it with, besides always on: the default scheduler
// with Cluster Autoscaler, each Volcano configuration with Cluster Autoscaler or
// Karpenter, Tessera with its own. A profile not listed is paired with Tessera's autoscaler and Cluster
// Autoscaler.
var AutoscalersOf = map[string][]string{
	"kube-default":     {RuleCA},
	"volcano":          {RuleCA, RuleKarpenter},
	"volcano-seed":     {RuleCA, RuleKarpenter},
	"volcano-capacity": {RuleCA, RuleKarpenter},
	"tessera":          {RuleTessera},
}

func autoscalersOf(profile string) []string {
	if rules, ok := AutoscalersOf[profile]; ok {
		return rules
	}
	return []string{RuleTessera, RuleCA}
}

// Autoscalers are every autoscaler a replay can run under.
var Autoscalers = []string{RuleTessera, RuleCA, RuleKarpenter}

// withEveryAutoscaler is the profile's own autoscalers, then the others of
// Autoscalers: the same scheduler's placements under every autoscaler, to tell the
// autoscaler's part from the scheduler's.
func withEveryAutoscaler(profile string) []string {
	own := autoscalersOf(profile)
	out := slices.Clone(own)
	for _, rule := range Autoscalers {
		if !slices.Contains(own, rule) {
			out = append(out, rule)
		}
	}
	return out
}

// autoscalers are the autoscalers the replay runs under besides always on.
func (rp Replay) autoscalers() []string {
	if rp.EveryAutoscaler {
		return withEveryAutoscaler(rp.Profile)
	}
	return autoscalersOf(rp.Profile)
}

// RunAutoscaled replays the same jobs with the same profile and seed on the always-on
// cluster and under each autoscaler paired with the profile (AutoscalersOf), every
// one adding removed nodes back after a.BootDelay through the same scale-up. The
// result's Replay is the always-on run; Autoscaled holds every run by autoscaler, and
// Autoscale compares them.
func RunAutoscaled(rp Replay, a Autoscaling) (report.Result, error) {
	wall := time.Now()
	runs := map[string]*report.Replay{}
	for _, rule := range append([]string{report.AlwaysOn}, rp.autoscalers()...) {
		one := rp
		one.Bounds = true
		if rule != report.AlwaysOn {
			a.Rule = rule
			one.Autoscale = &a
		}
		res, err := RunReplay(one)
		if err != nil {
			return report.Result{}, err
		}
		runs[rule] = res.Replay
	}
	res := report.Result{Policy: rp.Profile, Seed: rp.Seed, Trace: rp.Input.Name, WallSeconds: time.Since(wall).Seconds(),
		Replay: runs[report.AlwaysOn], Autoscaled: runs}
	res.Autoscale = report.Summarize([]report.Result{res})[0].Autoscale
	return res, nil
}
