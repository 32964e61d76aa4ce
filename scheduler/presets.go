package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// presets are the profiles: named scheduler configurations, Tessera's own and the
// baselines the simulator compares against.
var presets = map[string]Config{
	"tessera": {
		Actions: DefaultActions,
		Tiers: []Tier{
			{Plugins: []PluginOption{{Name: "priority"}, {Name: "gang"}, {Name: "minruntime"}}},
			{Plugins: []PluginOption{
				{Name: "proportion"}, {Name: "predicates"},
				{Name: "gpufit", Weight: 10},
				{Name: "topology", Weight: 2},
				// Outweighs gpufit and topology together: a node the autoscaler is
				// removing (its PreferNoSchedule candidate taint) gets new work only
				// when no other node fits.
				{Name: "tainttoleration", Weight: 20},
			}},
		},
		// A job waits 10 minutes for room before its queue reclaims what other queues
		// borrow: on the operator scenario reclaim at once evicted about 320 jobs a day,
		// most of them experiments minutes old that lost all their work and waited
		// again, for jobs that work ending nearby would have made room for.
		ReclaimAfter: Duration{10 * time.Minute},
		// Reservation is the backstop against starvation, not a routine. A gang that has
		// waited 9 of the 12 hours the simulator counts as starved gets nodes held for
		// it. Work runs on them when its runtime estimate (declared, or learnt from its
		// class's finished runs) has it end before the gang's expected start: when the
		// work there is expected to end, or the deadline, whichever comes first (EASY
		// backfill). Work without an estimate that yields to the gang (lower priority,
		// or its priority submitted after it) goes on using them until the 90-minute
		// drain before the deadline; what is left of it at the deadline, half an hour
		// before the horizon, is preempted, work that ran past its estimate first.
		// Holding the nodes idle from 6 h raised the mean wait by half, and reserving
		// after 30 minutes tripled it; from 6 h with EASY backfill the mean wait was
		// about a tenth above the same without reservation, from 9 h a few percent.
		ReservationAfter:    Duration{9 * time.Hour},
		ReservationDeadline: Duration{11*time.Hour + 30*time.Minute},
		ReservationDrain:    Duration{90 * time.Minute},
		TieBreak:            TieBreakFirst,
	},
	// volcano is Volcano's default scheduler configuration as GPU clusters run it:
	// its actions and plugins, binpack placement, GPU-memory slices (the HAMi-style
	// gpu-memory resource) and no reservation for waiting gangs.
	"volcano": {
		Actions: DefaultActions,
		Tiers: []Tier{
			{Plugins: []PluginOption{{Name: "priority"}, {Name: "gang"}}},
			{Plugins: []PluginOption{{Name: "proportion"}, {Name: "predicates"}, {Name: "binpack"}}},
		},
	},
	"kube-default": {
		Actions:   "allocate",
		Tiers:     []Tier{{Plugins: []PluginOption{{Name: "priority"}, {Name: "predicates"}, {Name: "leastallocated"}}}},
		WholeGPUs: true,
	},
}

// baselines are FGD-paper placers run one pod at a time, every node scored.
var baselines = []string{"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd"}

func init() {
	for _, b := range baselines {
		tie := TieBreakFirst // in the fill-up's node order, as the FGD paper's simulator evaluated them
		if b == "random" {
			tie = TieBreakRandom
		}
		presets[b] = Config{
			Actions:                  "allocate",
			TieBreak:                 tie,
			Tiers:                    []Tier{{Plugins: []PluginOption{{Name: "priority"}, {Name: "predicates"}, {Name: b}}}},
			PercentageOfNodesToScore: 100,
		}
	}
}

// Profile returns the named profile's configuration.
func Profile(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown profile %q; known: %s", name, strings.Join(ProfileNames(), ", "))
	}
	return c, nil
}

// ProfileNames lists the profiles, Tessera's first.
func ProfileNames() []string {
	names := []string{"tessera", "volcano", "kube-default"}
	rest := append([]string(nil), baselines...)
	sort.Strings(rest)
	return append(names, rest...)
}
