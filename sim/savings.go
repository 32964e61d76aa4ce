package sim

import (
	"time"

	"github.com/tessera-gpu/tessera/sim/report"
)

// DefaultBootDelay is how long a GPU node added back takes before pods can use it.
const DefaultBootDelay = 5 * time.Minute

// RunAutoscaled replays the same jobs with the same profile and seed three times: on
// the always-on cluster, under Tessera's autoscaler (RuleTessera) and under the
// Cluster-Autoscaler-like rule (RuleCALike), both adding removed nodes back after
// a.BootDelay through the same scale-up. The result is the run under Tessera's
// autoscaler with the savings of both rules against always on.
func RunAutoscaled(rp Replay, a Autoscaling) (report.Result, error) {
	wall := time.Now()
	runs := map[string]*report.Replay{}
	for _, rule := range []string{"", RuleTessera, RuleCALike} {
		one := rp
		if rule != "" {
			a.Rule = rule
			one.Autoscale = &a
		}
		res, err := RunReplay(one)
		if err != nil {
			return report.Result{}, err
		}
		runs[rule] = res.Replay
	}
	ts := runs[RuleTessera]
	s := report.NewSavings(runs[""], ts, runs[RuleCALike])
	ts.GPUNodeHoursSaved = s.GPUNodeHoursAlwaysOn - s.GPUNodeHours
	return report.Result{Policy: rp.Profile, Seed: rp.Seed, Trace: rp.Input.Name, WallSeconds: time.Since(wall).Seconds(), Replay: ts, Savings: s}, nil
}
