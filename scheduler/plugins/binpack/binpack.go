package binpack

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "binpack"

// Binpack is the scoring plugin. Weights of 0 leave a resource out.
type Binpack struct {
	// Weight is binpack.weight, the plugin's weight among scorers.
	Weight    float64
	CPU       float64
	Memory    float64
	Resources map[corev1.ResourceName]float64

	// weights is Resources as a slice, built on first use (maps are slow to range over).
	weights []resourceWeight
}

type resourceWeight struct {
	name corev1.ResourceName
	gpu  bool
	w    float64
}

var _ framework.NodeScorer = (*Binpack)(nil)

// New returns the plugin with Volcano's defaults plus GPUs at weight 1.
func New() *Binpack {
	return &Binpack{Weight: 1, CPU: 1, Memory: 1, Resources: map[corev1.ResourceName]float64{tesserav1.ResourceGPU: 1}}
}

// Name implements framework.Plugin.
func (*Binpack) Name() string { return Name }

// PluginWeight is binpack.weight: the plugin's weight among scorers unless the plugin
// option sets one.
func (b *Binpack) PluginWeight() float64 { return b.Weight }

// Configure reads Volcano-style arguments.
func (b *Binpack) Configure(args map[string]string) error {
	b.weights = nil
	for k, v := range args {
		if k == "binpack.resources" {
			b.Resources = map[corev1.ResourceName]float64{}
			for _, r := range strings.Split(v, ",") {
				if r = strings.TrimSpace(r); r != "" {
					b.Resources[corev1.ResourceName(r)] = 1
				}
			}
		}
	}
	for k, v := range args {
		if k == "binpack.resources" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("binpack argument %s: %q is not a non-negative number", k, v)
		}
		switch {
		case k == "binpack.weight":
			b.Weight = f
		case k == "binpack.cpu":
			b.CPU = f
		case k == "binpack.memory":
			b.Memory = f
		case strings.HasPrefix(k, "binpack.resources."):
			name := corev1.ResourceName(strings.TrimPrefix(k, "binpack.resources."))
			if _, listed := b.Resources[name]; !listed {
				return fmt.Errorf("binpack argument %s: %s is not listed in binpack.resources", k, name)
			}
			b.Resources[name] = f
		default:
			return fmt.Errorf("unknown binpack argument %s; known: binpack.weight, binpack.cpu, binpack.memory, binpack.resources, binpack.resources.<name>", k)
		}
	}
	return nil
}

// ScoreNode implements framework.NodeScorer: sum over requested resources of
// weight x (used + request) / allocatable, divided by the weights' sum, times 100.
func (b *Binpack) ScoreNode(t *framework.Task, n *framework.Node) float64 {
	score, weights := 0.0, 0.0
	add := func(req, used, alloc int64, w float64) {
		if req == 0 || w == 0 {
			return
		}
		weights += w
		if alloc == 0 || used+req > alloc {
			return
		}
		score += w * float64(used+req) / float64(alloc)
	}
	add(t.Request.MilliCPU, n.Used.MilliCPU, n.Allocatable.MilliCPU, b.CPU)
	add(t.Request.Memory, n.Used.Memory, n.Allocatable.Memory, b.Memory)
	if b.weights == nil {
		b.weights = make([]resourceWeight, 0, len(b.Resources))
		for name, w := range b.Resources {
			b.weights = append(b.weights, resourceWeight{name, name == tesserav1.ResourceGPU || name == tesserav1.ResourceNvidiaGPU, w})
		}
	}
	for _, rw := range b.weights {
		switch {
		case rw.gpu:
			if t.GPU.Any() && len(n.GPUs) > 0 {
				add(int64(t.GPU.GPUs())*t.GPU.MilliOn(&n.GPUs[0]), n.Used.GPU, n.Allocatable.GPU, rw.w)
			}
		case t.Request.Scalar != nil:
			add(t.Request.Scalar[rw.name], n.Used.Scalar[rw.name], n.Allocatable.Scalar[rw.name], rw.w)
		}
	}
	if weights == 0 {
		return 0
	}
	return 100 * score / weights
}
