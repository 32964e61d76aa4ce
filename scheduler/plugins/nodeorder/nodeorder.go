package nodeorder

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "nodeorder"

// NodeOrder is the scoring plugin.
type NodeOrder struct {
	LeastRequested, MostRequested, BalancedResource float64
}

var _ framework.NodeScorer = (*NodeOrder)(nil)

// unmodelled are the weights Volcano's nodeorder reads whose scores are not modelled.
var unmodelled = []string{"nodeaffinity.weight", "podaffinity.weight", "tainttoleration.weight", "imagelocality.weight", "podtopologyspread.weight"}

// New returns the plugin with Volcano's default weights.
func New() *NodeOrder { return &NodeOrder{LeastRequested: 1, BalancedResource: 1} }

// Name implements framework.Plugin.
func (*NodeOrder) Name() string { return Name }

// Configure reads Volcano's weight arguments.
func (o *NodeOrder) Configure(args map[string]string) error {
	for k, v := range args {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("%s: %q is not a weight of 0 or more", k, v)
		}
		switch k {
		case "leastrequested.weight":
			o.LeastRequested = f
		case "mostrequested.weight":
			o.MostRequested = f
		case "balancedresource.weight":
			o.BalancedResource = f
		default:
			if !slices.Contains(unmodelled, k) {
				return fmt.Errorf("unknown argument %q; known: leastrequested.weight, mostrequested.weight, balancedresource.weight", k)
			}
		}
	}
	return nil
}

// ScoreNode implements framework.NodeScorer: the weighted sum of the three scores,
// each from 0 to 100, as the nodeorder plugin sums kube-scheduler's.
func (o *NodeOrder) ScoreNode(t *framework.Task, n *framework.Node) float64 {
	cpu := fraction(t.Request.MilliCPU, n.Used.MilliCPU, n.Allocatable.MilliCPU)
	mem := fraction(t.Request.Memory, n.Used.Memory, n.Allocatable.Memory)
	score := 0.0
	if o.LeastRequested > 0 {
		score += o.LeastRequested * 100 * (2 - cpu - mem) / 2
	}
	if o.MostRequested > 0 {
		score += o.MostRequested * 100 * (cpu + mem) / 2
	}
	if o.BalancedResource > 0 {
		fractions := []float64{min(cpu, 1), min(mem, 1)}
		// An extended resource counts only for pods that ask for it.
		ref := int64(0)
		if len(n.GPUs) > 0 {
			ref = n.GPUs[0].MemoryMiB
		}
		if gpu := t.GPU.NominalMilli(ref); gpu > 0 && n.Allocatable.GPU > 0 {
			fractions = append(fractions, min(fraction(gpu, n.Used.GPU, n.Allocatable.GPU), 1))
		}
		score += o.BalancedResource * 100 * (1 - stddev(fractions))
	}
	return score
}

// fraction is (used + req) / allocatable, 1 for a node without the resource.
func fraction(req, used, allocatable int64) float64 {
	if allocatable <= 0 {
		return 1
	}
	return float64(used+req) / float64(allocatable)
}

// stddev is the population standard deviation, as BalancedAllocation computes it.
func stddev(xs []float64) float64 {
	if len(xs) == 2 {
		return math.Abs(xs[0]-xs[1]) / 2
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v / float64(len(xs)))
}
