package scheduler

import (
	"fmt"
	"time"

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
	"github.com/tessera-gpu/tessera/scheduler/plugins/predicates"
	"github.com/tessera-gpu/tessera/scheduler/plugins/priority"
	"github.com/tessera-gpu/tessera/scheduler/plugins/proportion"
	"github.com/tessera-gpu/tessera/scheduler/plugins/random"
	"github.com/tessera-gpu/tessera/scheduler/plugins/topology"
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

var pluginRegistry = map[string]factory{
	predicates.Name:     noArgs(func() framework.Plugin { return predicates.Predicates{} }),
	priority.Name:       noArgs(func() framework.Plugin { return priority.Priority{} }),
	gang.Name:           noArgs(func() framework.Plugin { return gang.Gang{} }),
	proportion.Name:     noArgs(func() framework.Plugin { return proportion.New() }),
	leastallocated.Name: noArgs(func() framework.Plugin { return leastallocated.LeastAllocated{} }),
	topology.Name:       noArgs(func() framework.Plugin { return topology.New() }),
	gpufit.Name: func(args map[string]string) (framework.Plugin, error) {
		g := gpufit.New()
		return g, g.Configure(args)
	},
	fgd.Name:           noArgs(func() framework.Plugin { return fgd.New() }),
	bestfit.Name:       noArgs(func() framework.Plugin { return bestfit.BestFit{} }),
	dotprod.Name:       noArgs(func() framework.Plugin { return dotprod.DotProduct{} }),
	gpupacking.Name:    noArgs(func() framework.Plugin { return gpupacking.GPUPacking{} }),
	gpuclustering.Name: noArgs(func() framework.Plugin { return gpuclustering.GPUClustering{} }),
	random.Name:        noArgs(func() framework.Plugin { return random.Random{} }),
	binpack.Name: func(args map[string]string) (framework.Plugin, error) {
		b := binpack.New()
		return b, b.Configure(args)
	},
	minruntime.Name: func(args map[string]string) (framework.Plugin, error) {
		m := minruntime.MinRuntime{}
		for k, v := range args {
			if k != "minruntime.default" {
				return nil, fmt.Errorf("unknown argument %s; known: minruntime.default", k)
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("minruntime.default: %q is not a duration such as 10m", v)
			}
			m.Default = d
		}
		return m, nil
	},
}

func newPlugin(po PluginOption) (framework.Plugin, error) {
	return pluginRegistry[po.Name](po.args())
}
