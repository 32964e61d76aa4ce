package scheduler

import (
	"fmt"

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

func newPlugin(po PluginOption) (framework.Plugin, error) {
	return pluginRegistry[po.Name](po.args())
}
