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
	// The Volcano anchors follow volcano-sh/volcano v1.16.0-alpha.1 (commit ed72c7c):
	// the scheduler's default configuration (pkg/scheduler/util.go) and the Helm chart's
	// (installer/helm/chart/volcano/config/volcano-scheduler.conf) are the same. Of its
	// plugins, conformance (never evict kube-system's critical pods) changes nothing
	// here, and drf orders jobs by their dominant share, which is 0 for every pending
	// job, so creation time decides after priority, as the priority plugin orders them.
	//
	// volcano is Volcano as it ships: enqueue (overcommit 1.2 and proportion's queue
	// gate), allocate (every job of every queue tried, a queue allocating only up to
	// what proportion says it deserves) and backfill (of pods without requests, which
	// GPU work never is); no preemption. Whole GPUs through the device plugin's
	// nvidia.com/gpu; nodeorder and binpack with their default weights.
	"volcano": {
		Actions:     "enqueue, allocate, backfill",
		TryEveryJob: true,
		WholeGPUs:   true,
		Tiers: []Tier{
			{Plugins: []PluginOption{{Name: "priority"}, {Name: "gang"}}},
			{Plugins: []PluginOption{{Name: "overcommit"}, {Name: "predicates"}, {Name: "volcano-proportion"}, {Name: "nodeorder"},
				{Name: "binpack", Arguments: map[string]any{"binpack.resources": ""}}}},
		},
	},
	// volcano-seed is what GPU clusters that adopted Volcano for sharing run (the
	// configuration the operator scenario's migration starts from): the stock
	// configuration with binpack weighing GPUs (binpack.weight 1, binpack.cpu and
	// binpack.memory 10, the GPU 1), GPU-memory requests (HAMi's vGPU memory
	// resource, placed as slices), and preemption on: the preempt action within a
	// queue, and the reclaim action between queues as Volcano's proportion allows it
	// (victims only from queues above what they deserve, the reclaimer staying within
	// what it deserves).
	"volcano-seed": {
		Actions:     "enqueue, allocate, preempt, reclaim, backfill",
		TryEveryJob: true,
		Tiers: []Tier{
			{Plugins: []PluginOption{{Name: "priority"}, {Name: "gang"}}},
			{Plugins: []PluginOption{{Name: "overcommit"}, {Name: "predicates"}, {Name: "volcano-proportion"}, {Name: "nodeorder"},
				{Name: "binpack", Arguments: map[string]any{"binpack.weight": 1, "binpack.cpu": 10, "binpack.memory": 10,
					"binpack.resources": "tessera.dev/gpu", "binpack.resources.tessera.dev/gpu": 1}}}},
		},
	},
	// volcano-capacity is the capacity plugin in place of proportion, with the reclaim
	// action its guide adds (docs/user-guide/how_to_use_capacity_plugin.md: actions
	// "enqueue, allocate, backfill, reclaim"): spec.deserved honoured, borrowing up to
	// the real capability, reclaim back to what a queue deserves. No overcommit plugin
	// (the guide's configuration has none); whole GPUs, default nodeorder and binpack.
	"volcano-capacity": {
		Actions:     "enqueue, allocate, backfill, reclaim",
		TryEveryJob: true,
		WholeGPUs:   true,
		Tiers: []Tier{
			{Plugins: []PluginOption{{Name: "priority"}, {Name: "gang"}}},
			{Plugins: []PluginOption{{Name: "predicates"}, {Name: "volcano-capacity"}, {Name: "nodeorder"},
				{Name: "binpack", Arguments: map[string]any{"binpack.resources": ""}}}},
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

// descriptions say in one line what each profile is.
var descriptions = map[string]string{
	"tessera":          "Tessera: gangs, GPU slices, fragmentation-aware placement, reclaim after 10m, reservations",
	"volcano":          "Volcano as it ships (v1.16 Helm chart): overcommit, proportion, whole GPUs, no preemption",
	"volcano-seed":     "Volcano with binpack on GPUs, GPU-memory slices (HAMi), preempt and reclaim on",
	"volcano-capacity": "Volcano's capacity plugin: spec.deserved, borrowing up to capability, reclaim, whole GPUs",
	"kube-default":     "kube-scheduler: one pod at a time, least allocated, whole GPUs",
	"random":           "FGD paper baseline: a random feasible node",
	"dotprod":          "FGD paper baseline: dot product of demand and free resources",
	"gpuclustering":    "FGD paper baseline: GPU clustering",
	"gpupacking":       "FGD paper baseline: GPU packing",
	"bestfit":          "FGD paper baseline: best fit",
	"fgd":              "FGD paper: fragmentation gradient descent",
}

// ProfileDescription says in one line what the named profile is.
func ProfileDescription(name string) string { return descriptions[name] }

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
	names := []string{"tessera", "volcano", "volcano-seed", "volcano-capacity", "kube-default"}
	rest := append([]string(nil), baselines...)
	sort.Strings(rest)
	return append(names, rest...)
}
