package trace

import (
	"cmp"
	"fmt"
	"math"
	randv1 "math/rand"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// pcgStream is the second word of the PCG state; the first is the seed.
const pcgStream = 0x7e55e4a

// NewRand returns the package's deterministic random source for a seed: a PCG
// generator from math/rand/v2 seeded with (seed, a fixed stream constant).
func NewRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), pcgStream)) }

// Bounds of a fill-up workload.
const (
	// MaxArrive is the largest arrive factor: 10 x the cluster's GPUs.
	MaxArrive = 10
	// MaxFillUpPods bounds the pods of a fill-up workload.
	MaxFillUpPods = 1_000_000
)

// CheckFillUp reports why FillUp cannot build a workload within its bounds: arrive
// must be a finite number in (0, MaxArrive], and reaching it must take at most
// MaxFillUpPods pods (estimated from the list's mean request per pod).
func CheckFillUp(pods []PodSpec, clusterGPUMilli int64, arrive float64) error {
	if math.IsNaN(arrive) || math.IsInf(arrive, 0) || arrive <= 0 || arrive > MaxArrive {
		return fmt.Errorf("--arrive: must be a finite number between 0 and %d, got %g", MaxArrive, arrive)
	}
	var total int64
	for _, p := range pods {
		total += p.GPURequestMilli()
	}
	if total == 0 {
		return nil
	}
	if need := arrive * float64(clusterGPUMilli) / (float64(total) / float64(len(pods))); need > MaxFillUpPods {
		return fmt.Errorf("--arrive %g: reaching %g x the cluster's %d GPUs takes about %.0f pods of this list, more than the limit %d; lower --arrive or use fewer nodes",
			arrive, arrive, clusterGPUMilli/1000, need, MaxFillUpPods)
	}
	return nil
}

// FillUp builds the FGD paper's fill-up workload the way its simulator does
// (github.com/hkust-adsl/kubernetes-scheduler-simulator, Simulator.SortClusterPods and
// TunePodsByNodeTotalResource), to a target of arrive x clusterGPUMilli GPU milli
// (request = NumGPU x GPUMilli):
//
//   - the list, ordered by name, is shuffled;
//   - when it asks for less than the target, pods drawn uniformly with replacement from
//     the list as given are appended, unshuffled, until a draw whose per-GPU share
//     would take the total past the target (that draw is discarded; so a multi-GPU draw
//     may end a little past it; CPU-only draws add nothing and are kept);
//   - when it asks for more, uniformly chosen pods are removed until it no longer does.
//
// So the list's own pods arrive first, each once, in random order, and the draws after.
// Randomness is math/rand's source seeded with seed, drawn in the reference simulator's
// order (one value is discarded first, as its seeding does), so a seed gives the same
// arrivals as there. Drawn copies are renamed "<name>-t<k>" (k counts the draws) so
// names stay unique; Line still points at the source row; GPUModels is shared with the
// source pod and must not be modified. FillUp returns nil when no pod asks for a GPU
// or the target is not a positive finite number, and stops at MaxFillUpPods pods
// (CheckFillUp tells beforehand).
func FillUp(pods []PodSpec, clusterGPUMilli int64, arrive float64, seed int64) []PodSpec {
	return fillUp(pods, clusterGPUMilli, arrive, fillUpRand(seed))
}

// FillUpNodes is FillUp that also returns the nodes in the order in which the reference
// simulator breaks ties between equally scored nodes in that run. It sorts the nodes by
// name, prefixes each name with its place in a random permutation drawn next from the
// same source ("%04d-", Simulator.syncClusterResourceList), and its scheduler picks the
// lexicographically smallest name among the best-scored nodes: so among equals the node
// that drew the lowest place wins, a seeded random order rather than the list's. The
// nodes come back in that order; with a first-in-order tie break, a scheduler then
// chooses as the reference does.
func FillUpNodes(pods []PodSpec, nodes []NodeSpec, clusterGPUMilli int64, arrive float64, seed int64) ([]PodSpec, []NodeSpec) {
	rng := fillUpRand(seed)
	arrivals := fillUp(pods, clusterGPUMilli, arrive, rng)
	byName := slices.Clone(nodes)
	slices.SortStableFunc(byName, func(a, b NodeSpec) int { return strings.Compare(a.Name, b.Name) })
	order := make([]NodeSpec, len(byName))
	for i, place := range rng.Perm(len(byName)) {
		order[place] = byName[i]
	}
	return arrivals, order
}

// fillUpRand is the reference simulator's random source for a seed: math/rand seeded
// with it, one value discarded.
func fillUpRand(seed int64) *randv1.Rand {
	rng := randv1.New(randv1.NewSource(seed))
	rng.Int()
	return rng
}

func fillUp(pods []PodSpec, clusterGPUMilli int64, arrive float64, rng *randv1.Rand) []PodSpec {
	target := arrive * float64(clusterGPUMilli)
	var total int64
	for _, p := range pods {
		total += p.GPURequestMilli()
	}
	if !(target > 0) || math.IsInf(target, 0) || total == 0 {
		return nil
	}
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b PodSpec) int { return strings.Compare(a.Name, b.Name) })
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for float64(total) > target {
		i := rng.Intn(len(out))
		total -= out[i].GPURequestMilli()
		out = slices.Delete(out, i, i+1)
	}
	if float64(total) == target {
		return out
	}
	for k := 0; len(out) < MaxFillUpPods; k++ {
		p := pods[rng.Intn(len(pods))]
		if float64(total+p.GPUMilli) > target { // the per-GPU share, as the reference compares
			break
		}
		p.Name += "-t" + strconv.Itoa(k)
		total += p.GPURequestMilli()
		out = append(out, p)
	}
	return out
}

// Shape is one distinct pod shape of a workload, as the FGD paper groups pods to
// measure fragmentation.
type Shape struct {
	MilliCPU int64
	NumGPU   int
	// GPUMilli is the share of each GPU in thousandths (see PodSpec.GPUMilli).
	GPUMilli int64
	// GPUModels is the pod's GPU model constraint, models sorted and joined with "|";
	// empty means any model.
	GPUModels string
	// Count is how many pods of the workload have this shape.
	Count int
	// P is the shape's probability among the kept shapes; they sum to 1.
	P float64
}

// Models returns the shape's allowed GPU models, nil for any.
func (s Shape) Models() []string {
	if s.GPUModels == "" {
		return nil
	}
	return strings.Split(s.GPUModels, "|")
}

// TypicalShapes returns the workload's typical pod shapes: the histogram of distinct
// (CPU milli, GPU count, GPU milli, GPU model constraint) shapes, most frequent first
// (ties in ascending order of CPU, GPU count, GPU milli, models), keeping shapes until
// they cover coverage (the paper uses 0.95) of the pods, with their frequencies
// renormalised to probabilities that sum to 1. A coverage of 1 or more keeps every
// shape.
func TypicalShapes(pods []PodSpec, coverage float64) []Shape {
	type key struct {
		cpu    int64
		gpus   int
		milli  int64
		models string
	}
	counts := map[key]int{}
	for _, p := range pods {
		models := ""
		if p.GPUModels != nil {
			ms := slices.Clone(p.GPUModels)
			slices.Sort(ms)
			models = strings.Join(ms, "|")
		}
		counts[key{p.MilliCPU, p.NumGPU, p.GPUMilli, models}]++
	}
	shapes := make([]Shape, 0, len(counts))
	for k, c := range counts {
		shapes = append(shapes, Shape{MilliCPU: k.cpu, NumGPU: k.gpus, GPUMilli: k.milli, GPUModels: k.models, Count: c})
	}
	slices.SortFunc(shapes, func(a, b Shape) int {
		return cmp.Or(
			cmp.Compare(b.Count, a.Count),
			cmp.Compare(a.MilliCPU, b.MilliCPU),
			cmp.Compare(a.NumGPU, b.NumGPU),
			cmp.Compare(a.GPUMilli, b.GPUMilli),
			cmp.Compare(a.GPUModels, b.GPUModels),
		)
	})
	need := coverage * float64(len(pods))
	kept := 0
	for i, s := range shapes {
		kept += s.Count
		if float64(kept) >= need {
			shapes = shapes[:i+1]
			break
		}
	}
	for i := range shapes {
		shapes[i].P = float64(shapes[i].Count) / float64(kept)
	}
	return shapes
}
