package sim

import (
	"fmt"
	"io"

	"github.com/tessera-gpu/tessera/scheduler/sim/trace"
	"github.com/tessera-gpu/tessera/scheduler/sim/traces"
)

// TraceInput is a node list and a pod list.
type TraceInput struct {
	Name  string
	Nodes []trace.NodeSpec
	Pods  []trace.PodSpec
}

// OpenbInput reads a shipped openb pod-list variant and the openb GPU node list.
func OpenbInput(variant string) (TraceInput, error) {
	path, err := traces.OpenbPods(variant)
	if err != nil {
		return TraceInput{}, err
	}
	nodes, err := readShipped(traces.OpenbNodes, trace.ReadNodes)
	if err != nil {
		return TraceInput{}, err
	}
	pods, err := readShipped(path, trace.ReadPods)
	if err != nil {
		return TraceInput{}, err
	}
	return TraceInput{Name: "openb-" + variant, Nodes: nodes, Pods: pods}, nil
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

func tracesList() []string { return traces.OpenbVariants() }
