package scheduler

import (
	"fmt"
	"maps"
	"slices"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/bestfit"
	"github.com/tessera-gpu/tessera/scheduler/plugins/binpack"
	"github.com/tessera-gpu/tessera/scheduler/plugins/dotprod"
	"github.com/tessera-gpu/tessera/scheduler/plugins/fgd"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gang"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gpuclustering"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gpufit"
	"github.com/tessera-gpu/tessera/scheduler/plugins/gpupacking"
	"github.com/tessera-gpu/tessera/scheduler/plugins/leastallocated"
	"github.com/tessera-gpu/tessera/scheduler/plugins/minruntime"
	"github.com/tessera-gpu/tessera/scheduler/plugins/nodeorder"
	"github.com/tessera-gpu/tessera/scheduler/plugins/overcommit"
	"github.com/tessera-gpu/tessera/scheduler/plugins/predicates"
	"github.com/tessera-gpu/tessera/scheduler/plugins/priority"
	"github.com/tessera-gpu/tessera/scheduler/plugins/proportion"
	"github.com/tessera-gpu/tessera/scheduler/plugins/random"
	"github.com/tessera-gpu/tessera/scheduler/plugins/tainttoleration"
	"github.com/tessera-gpu/tessera/scheduler/plugins/topology"
	"github.com/tessera-gpu/tessera/scheduler/plugins/volcanoqueue"
)

type factory func(args map[string]string) (framework.Plugin, error)

// noArgs wraps a plugin that takes no arguments.
func noArgs(p func() framework.Plugin) factory {
	return func(args map[string]string) (framework.Plugin, error) {
		if len(args) > 0 {
			return nil, fmt.Errorf("takes no arguments")
		}
		return p(), nil
	}
}

// configurable is a plugin that reads its own arguments.
type configurable interface {
	framework.Plugin
	Configure(args map[string]string) error
}

// withArgs wraps a plugin that reads its own arguments.
func withArgs[P configurable](p func() P) factory {
	return func(args map[string]string) (framework.Plugin, error) {
		c := p()
		if err := c.Configure(args); err != nil {
			return nil, err
		}
		return c, nil
	}
}

var pluginRegistry = map[string]factory{
	predicates.Name:             noArgs(func() framework.Plugin { return predicates.Predicates{} }),
	priority.Name:               noArgs(func() framework.Plugin { return priority.Priority{} }),
	gang.Name:                   noArgs(func() framework.Plugin { return gang.Gang{} }),
	proportion.Name:             noArgs(func() framework.Plugin { return proportion.New() }),
	leastallocated.Name:         noArgs(func() framework.Plugin { return leastallocated.LeastAllocated{} }),
	topology.Name:               noArgs(func() framework.Plugin { return topology.New() }),
	tainttoleration.Name:        noArgs(func() framework.Plugin { return tainttoleration.TaintToleration{} }),
	gpufit.Name:                 withArgs(gpufit.New),
	fgd.Name:                    noArgs(func() framework.Plugin { return fgd.New() }),
	bestfit.Name:                noArgs(func() framework.Plugin { return bestfit.BestFit{} }),
	dotprod.Name:                noArgs(func() framework.Plugin { return dotprod.DotProduct{} }),
	gpupacking.Name:             noArgs(func() framework.Plugin { return gpupacking.GPUPacking{} }),
	gpuclustering.Name:          noArgs(func() framework.Plugin { return gpuclustering.GPUClustering{} }),
	random.Name:                 noArgs(func() framework.Plugin { return random.Random{} }),
	binpack.Name:                withArgs(binpack.New),
	minruntime.Name:             withArgs(minruntime.New),
	overcommit.Name:             withArgs(overcommit.New),
	nodeorder.Name:              withArgs(nodeorder.New),
	volcanoqueue.ProportionName: noArgs(func() framework.Plugin { return volcanoqueue.New(volcanoqueue.Proportion) }),
	volcanoqueue.CapacityName:   noArgs(func() framework.Plugin { return volcanoqueue.New(volcanoqueue.Capacity) }),
}

// pluginSummaries say in one line what each plugin does; each plugin's package doc
// says more.
var pluginSummaries = map[string]string{
	predicates.Name:             "Filters nodes: taints, node selector and affinity, CPU, memory, pods, extended resources, GPU model, free GPUs and GPU share.",
	priority.Name:               "Orders jobs by priority, then age; victims the other way round.",
	gang.Name:                   "All or nothing: a job binds only when minMember of its tasks fit in the same session.",
	proportion.Name:             "Shares the cluster between queues (capability, guarantee, deserved, weight), serves the lowest dominant share first and lets queues under their entitlement reclaim.",
	leastallocated.Name:         "kube-scheduler's LeastAllocated: prefers the node with the most free CPU and memory (spreading).",
	topology.Name:               "Keeps a multi-node gang within the narrowest topology domain (rack, then zone).",
	tainttoleration.Name:        "kube-scheduler's TaintToleration score: untolerated PreferNoSchedule taints, such as the scale-down candidate taint, lower a node's score.",
	gpufit.Name:                 "Tessera's fragmentation-aware GPU placer: FGD's fragmentation gradient plus GPUs stranded by CPU or memory and by model-constrained demand.",
	fgd.Name:                    "Fragmentation Gradient Descent (Weng et al., USENIX ATC '23), as the paper's simulator runs it.",
	bestfit.Name:                "FGD paper baseline: best fit over CPU and GPU.",
	dotprod.Name:                "FGD paper baseline: dot product (Tetris) of free resources and request.",
	gpupacking.Name:             "FGD paper baseline: shared GPUs first, then free GPUs of used nodes, then idle nodes.",
	gpuclustering.Name:          "FGD paper baseline: nodes running tasks of the same GPU request class first.",
	random.Name:                 "Baseline: a uniformly random feasible node and GPU.",
	binpack.Name:                "Volcano's binpack: prefers the node that would be fullest, so idle nodes stay idle.",
	minruntime.Name:             "Protects jobs from eviction until they ran their minRuntime (at most their queue's maxMinRuntime).",
	overcommit.Name:             "Volcano's overcommit: enqueue admits gangs while their minimums fit in a factor times the cluster, less what is in use.",
	nodeorder.Name:              "Volcano's nodeorder, resource scores only: LeastAllocated, MostAllocated and BalancedAllocation.",
	volcanoqueue.ProportionName: "Volcano's proportion plugin: deserved share by weighted water-fill of what queues request, allocation up to it, reclaim between queues.",
	volcanoqueue.CapacityName:   "Volcano's capacity plugin: spec.deserved honoured, borrowing up to the real capability, reclaim back to what a queue deserves.",
}

// PluginArgument is one argument a plugin reads; Default is its value when unset.
type PluginArgument struct {
	Name, Default, Meaning string
}

// pluginArguments are the arguments of the plugins that take any, as their Configure
// reads them; a test keeps each accepted.
var pluginArguments = map[string][]PluginArgument{
	binpack.Name: {
		{"binpack.weight", fmt.Sprint(binpack.New().Weight), "the plugin's weight among scorers, unless the plugin's weight is set"},
		{"binpack.cpu", fmt.Sprint(binpack.New().CPU), "the weight of CPU"},
		{"binpack.memory", fmt.Sprint(binpack.New().Memory), "the weight of memory"},
		{"binpack.resources", string(tesserav1.ResourceGPU), "the extended resources scored besides CPU and memory, separated by commas; empty for none"},
		{"binpack.resources.<name>", "1", "the weight of a resource listed in binpack.resources"},
	},
	gpufit.Name: {
		{"gpufit.bandMilli", fmt.Sprint(gpufit.DefaultBandMilli), "the width of one score band of the fragmentation gradient, in thousandths of a GPU; ties within a band go to the fuller node"},
		{"gpufit.cpuStrandWeight", fmt.Sprint(gpufit.DefaultCPUStrandWeight), "how much GPU share stranded by CPU or memory counts against FGD fragmentation"},
	},
	minruntime.Name: {
		{"minruntime.default", "0s", "the guard of jobs that set no minRuntime, a duration such as 10m"},
	},
	overcommit.Name: {
		{overcommit.FactorArgument, fmt.Sprint(overcommit.DefaultFactor), "how many times the cluster the minimums of admitted gangs may take; at least 1"},
	},
	nodeorder.Name: {
		{"leastrequested.weight", fmt.Sprint(nodeorder.New().LeastRequested), "the weight of LeastAllocated over CPU and memory"},
		{"mostrequested.weight", fmt.Sprint(nodeorder.New().MostRequested), "the weight of MostAllocated over CPU and memory"},
		{"balancedresource.weight", fmt.Sprint(nodeorder.New().BalancedResource), "the weight of BalancedAllocation over CPU, memory and the GPU"},
		{"nodeaffinity.weight", "", "accepted as Volcano reads it; not modelled"},
		{"podaffinity.weight", "", "accepted as Volcano reads it; not modelled"},
		{"tainttoleration.weight", "", "accepted as Volcano reads it; not modelled"},
		{"imagelocality.weight", "", "accepted as Volcano reads it; not modelled"},
		{"podtopologyspread.weight", "", "accepted as Volcano reads it; not modelled"},
	},
}

// PluginNames lists the plugins by name.
func PluginNames() []string { return slices.Sorted(maps.Keys(pluginRegistry)) }

// PluginSummary says in one line what the named plugin does.
func PluginSummary(name string) string { return pluginSummaries[name] }

// PluginArguments lists the named plugin's arguments; none for most plugins.
func PluginArguments(name string) []PluginArgument { return pluginArguments[name] }

// Role is a part a plugin plays in a session: one of the interfaces of package
// framework that the scheduler looks for.
type Role struct {
	Name, Interface string
	is              func(framework.Plugin) bool
}

func role[I framework.Plugin](name, iface string) Role {
	return Role{name, iface, func(p framework.Plugin) bool { _, ok := p.(I); return ok }}
}

// roles are in the order Scheduler.add looks for them.
var roles = []Role{
	role[framework.Filter]("filter", "Filter"),
	role[framework.NodeScorer]("scorer", "NodeScorer"),
	role[framework.GPUPlacer]("GPU placer", "GPUPlacer"),
	role[framework.JobOrder]("job order", "JobOrder"),
	role[framework.VictimOrder]("victim order", "VictimOrder"),
	role[framework.VictimFilter]("victim filter", "VictimFilter"),
	role[framework.Gang]("gang", "Gang"),
	role[framework.QueueOrder]("queue order", "QueueOrder"),
	role[framework.QueueOverused]("queue overused", "QueueOverused"),
	role[framework.EnqueueGate]("enqueue gate", "EnqueueGate"),
	role[framework.QueueAdmission]("queue admission", "QueueAdmission"),
	role[framework.ReclaimPolicy]("reclaim policy", "ReclaimPolicy"),
	role[framework.QueueShares]("queue shares", "QueueShares"),
	role[framework.SnapshotObserver]("snapshot observer", "SnapshotObserver"),
}

// Roles lists the roles a plugin may play.
func Roles() []Role { return slices.Clone(roles) }

// PluginRoles names the roles the named plugin plays, built without arguments.
func PluginRoles(name string) []string {
	f, ok := pluginRegistry[name]
	if !ok {
		return nil
	}
	p, err := f(nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range roles {
		if r.is(p) {
			out = append(out, r.Name)
		}
	}
	return out
}

func newPlugin(po PluginOption) (framework.Plugin, error) {
	return pluginRegistry[po.Name](po.args())
}
