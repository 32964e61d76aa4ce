package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tessera-gpu/tessera/sim/trace"
	"github.com/tessera-gpu/tessera/sim/traces"
)

// TraceInput is a node list and a pod list.
type TraceInput struct {
	Name  string
	Nodes []trace.NodeSpec
	Pods  []trace.PodSpec
}

// constrainedVariants are openb pod lists built from the default list: the share of its
// GPU pods given a GPU model constraint the way gpuspec20 gives them
// (trace.WithGPUSpec, seed 1), for shares the trace does not ship.
var constrainedVariants = map[string]float64{"gpuspec05": 0.05, "gpuspec33": 0.33, "gpuspec50": 0.5}

// OpenbInput reads an openb pod-list variant, shipped or built (constrainedVariants),
// and the openb GPU node list.
func OpenbInput(variant string) (TraceInput, error) {
	share, built := constrainedVariants[variant]
	pods, err := openbPods(variant)
	if built {
		var like []trace.PodSpec
		if like, err = openbPods("gpuspec20"); err == nil {
			pods, err = openbPods("default")
			pods = trace.WithGPUSpec(pods, like, share, 1)
		}
	}
	if err != nil {
		return TraceInput{}, err
	}
	nodes, err := readShipped(traces.OpenbNodes, trace.ReadNodes)
	if err != nil {
		return TraceInput{}, err
	}
	return TraceInput{Name: "openb-" + variant, Nodes: nodes, Pods: pods}, nil
}

func openbPods(variant string) ([]trace.PodSpec, error) {
	path, err := traces.OpenbPods(variant)
	if err != nil {
		return nil, fmt.Errorf("%w; built: %s", err, strings.Join(slices.Sorted(maps.Keys(constrainedVariants)), ", "))
	}
	return readShipped(path, trace.ReadPods)
}

func readShipped[T any](path string, read func(io.Reader, string) ([]T, error)) ([]T, error) {
	f, err := traces.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path)
}

// FileInput reads a node list and a pod list from files.
func FileInput(nodesPath, podsPath string) (TraceInput, error) {
	nodes, err := trace.ReadNodesCSV(nodesPath)
	if err != nil {
		return TraceInput{}, err
	}
	pods, err := trace.ReadPodsCSV(podsPath)
	if err != nil {
		return TraceInput{}, err
	}
	if len(nodes) == 0 || len(pods) == 0 {
		return TraceInput{}, fmt.Errorf("%s, %s: need at least one node and one pod", nodesPath, podsPath)
	}
	return TraceInput{Name: podsPath, Nodes: nodes, Pods: pods}, nil
}

// OpenbVariants lists the openb pod lists, shipped and built.
func OpenbVariants() []string {
	return slices.Sorted(slices.Values(append(traces.OpenbVariants(), slices.Collect(maps.Keys(constrainedVariants))...)))
}

// Unplaceable describes the pods that ask more GPUs than the largest node has, which
// can never run; "" when there are none.
func (in TraceInput) Unplaceable() string {
	largest := 0
	for _, n := range in.Nodes {
		largest = max(largest, n.GPUs)
	}
	var count int
	var first *trace.PodSpec
	for i := range in.Pods {
		if p := &in.Pods[i]; p.NumGPU > largest {
			if count++; first == nil {
				first = p
			}
		}
	}
	if count == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d pods ask more GPUs than the largest node has (%d), such as %s on line %d asking %d; they can never run",
		in.Name, count, largest, first.Name, first.Line, first.NumGPU)
}
