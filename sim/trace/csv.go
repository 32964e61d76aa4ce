package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// NodeSpec is one node of a trace's node list.
type NodeSpec struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	// GPUs is the number of GPUs on the node; 0 for a CPU-only node.
	GPUs int
	// Model is the GPU model (a key of the GPU model table); empty when GPUs is 0.
	Model string
	// GPUMemoryMiB is the memory of each of the node's GPUs, from the GPU model table.
	GPUMemoryMiB int64
	// Labels are the node's labels; nodes read from CSV carry tessera.dev/gpu-model.
	Labels map[string]string
}

// GPUMilli is the node's GPU capacity in thousandths of a GPU.
func (n NodeSpec) GPUMilli() int64 { return int64(n.GPUs) * 1000 }

// PodSpec is one pod of a trace's pod list.
type PodSpec struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	// NumGPU is the number of GPUs the pod needs (0 for a CPU-only pod).
	NumGPU int
	// GPUMilli is the share of each GPU in thousandths: 1000 is a whole GPU; below 1000
	// (only with NumGPU == 1) the pod shares one GPU with others.
	GPUMilli int64
	// GPUModels lists the GPU models the pod may run on (the trace's gpu_spec); nil means any.
	GPUModels []string
	// QoS and Phase are the trace's qos and pod_phase columns, as written (may be empty).
	QoS, Phase string
	// Creation, Deletion and Scheduled are the trace's times in seconds, -1 when absent.
	Creation, Deletion, Scheduled int64
	// Line is the pod's line in its file (1 is the header), for messages.
	Line int
}

// GPURequestMilli is the pod's total GPU request in thousandths of a GPU (NumGPU x GPUMilli).
func (p PodSpec) GPURequestMilli() int64 { return int64(p.NumGPU) * p.GPUMilli }

// IsShare reports whether the pod asks for part of one GPU.
func (p PodSpec) IsShare() bool { return p.NumGPU == 1 && p.GPUMilli < 1000 }

// AllowsModel reports whether the pod may run on a GPU of the given model.
func (p PodSpec) AllowsModel(model string) bool {
	return p.GPUModels == nil || slices.Contains(p.GPUModels, model)
}

// GPUMemoryMiBOn is the GPU memory in MiB the pod needs on each of its GPUs when it
// runs on GPUs of the given model: the whole GPU for GPUMilli 1000, else its share
// of the model's memory, rounded up. It returns false for an unknown model.
func (p PodSpec) GPUMemoryMiBOn(model string) (int64, bool) { return MilliToMiB(p.GPUMilli, model) }

// Column names of the openb CSV files.
const (
	colNodeName  = "sn"
	colCPU       = "cpu_milli"
	colMemory    = "memory_mib"
	colGPU       = "gpu"
	colModel     = "model"
	colPodName   = "name"
	colNumGPU    = "num_gpu"
	colGPUMilli  = "gpu_milli"
	colGPUSpec   = "gpu_spec"
	colQoS       = "qos"
	colPhase     = "pod_phase"
	colCreation  = "creation_time"
	colDeletion  = "deletion_time"
	colScheduled = "scheduled_time"
)

var (
	nodeColumns = columnSet{required: []string{colNodeName, colCPU, colMemory, colGPU, colModel}}
	podColumns  = columnSet{
		required: []string{colPodName, colCPU, colMemory, colNumGPU, colGPUMilli},
		optional: []string{colGPUSpec, colQoS, colPhase, colCreation, colDeletion, colScheduled},
	}
)

// ReadNodesCSV reads an openb node list (columns sn, cpu_milli, memory_mib, gpu, model).
func ReadNodesCSV(path string) ([]NodeSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadNodes(f, path)
}

// ReadNodes reads an openb node list from r; name is used in messages (file:line: ...).
// Every malformed row is an error: a missing or unparsable number, a negative value,
// an unknown GPU model, a duplicate node name.
func ReadNodes(r io.Reader, name string) ([]NodeSpec, error) {
	t, err := newTable(r, name, nodeColumns)
	if err != nil {
		return nil, err
	}
	var nodes []NodeSpec
	seen := map[string]int{}
	for {
		row, err := t.next()
		if err == io.EOF {
			return nodes, nil
		}
		if err != nil {
			return nil, err
		}
		n := NodeSpec{Name: row.str(colNodeName)}
		if n.Name == "" {
			return nil, row.errf(colNodeName, "empty node name")
		}
		if first, dup := seen[n.Name]; dup {
			return nil, row.errf(colNodeName, "duplicate node %q (first on line %d)", n.Name, first)
		}
		seen[n.Name] = row.line
		if n.MilliCPU, err = row.quantity(colCPU); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = row.quantity(colMemory); err != nil {
			return nil, err
		}
		gpus, err := row.quantity(colGPU)
		if err != nil {
			return nil, err
		}
		if err := framework.CheckGPUCount(gpus); err != nil {
			return nil, row.errf(colGPU, "%v", err)
		}
		n.GPUs = int(gpus)
		n.Model = row.str(colModel)
		if n.Model == "nan" {
			n.Model = ""
		}
		switch {
		case n.Model == "" && n.GPUs > 0:
			return nil, row.errf(colModel, "empty GPU model on a node with %d GPUs; name one of: %s", n.GPUs, knownModelsList())
		case n.Model != "":
			mem, ok := GPUModelMemoryMiB(n.Model)
			if !ok {
				return nil, row.errf(colModel, "unknown GPU model %q; known models: %s", n.Model, knownModelsList())
			}
			if n.GPUs > 0 {
				n.GPUMemoryMiB = mem
				n.Labels = map[string]string{tesserav1.LabelGPUModel: n.Model}
			}
		}
		nodes = append(nodes, n)
	}
}

// ReadPodsCSV reads an openb pod list. The columns name, cpu_milli, memory_mib,
// num_gpu and gpu_milli are required; gpu_spec, qos, pod_phase, creation_time,
// deletion_time and scheduled_time are optional (openb_pod_list_multigpu20.csv has
// only the first five).
func ReadPodsCSV(path string) ([]PodSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPods(f, path)
}

// ReadPods reads an openb pod list from r; name is used in messages (file:line: ...).
// Every malformed row is an error: a missing or unparsable number, a negative
// request, gpu_milli outside 0..1000, num_gpu > 1 with gpu_milli != 1000, a GPU
// pod with gpu_milli 0, a CPU-only pod with gpu_milli, an unknown model in
// gpu_spec, times out of order, a duplicate pod name.
func ReadPods(r io.Reader, name string) ([]PodSpec, error) {
	t, err := newTable(r, name, podColumns)
	if err != nil {
		return nil, err
	}
	var pods []PodSpec
	seen := map[string]int{}
	for {
		row, err := t.next()
		if err == io.EOF {
			return pods, nil
		}
		if err != nil {
			return nil, err
		}
		p, err := parsePod(row)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[p.Name]; dup {
			return nil, row.errf(colPodName, "duplicate pod %q (first on line %d)", p.Name, first)
		}
		seen[p.Name] = row.line
		pods = append(pods, p)
	}
}

func parsePod(row row) (PodSpec, error) {
	p := PodSpec{Name: row.str(colPodName), Line: row.line, QoS: row.str(colQoS), Phase: row.str(colPhase)}
	if p.Name == "" {
		return p, row.errf(colPodName, "empty pod name")
	}
	var err error
	if p.MilliCPU, err = row.quantity(colCPU); err != nil {
		return p, err
	}
	if p.MemoryMiB, err = row.quantity(colMemory); err != nil {
		return p, err
	}
	numGPU, err := row.quantity(colNumGPU)
	if err != nil {
		return p, err
	}
	if numGPU > framework.MaxGPUsPerNode {
		return p, row.errf(colNumGPU, "%d GPUs; a pod runs on one node, and a node has at most %d", numGPU, framework.MaxGPUsPerNode)
	}
	p.NumGPU = int(numGPU)
	if p.GPUMilli, err = row.quantity(colGPUMilli); err != nil {
		return p, err
	}
	switch {
	case p.GPUMilli > 1000:
		return p, row.errf(colGPUMilli, "%d out of range 0..1000 (thousandths of one GPU)", p.GPUMilli)
	case p.NumGPU == 0 && p.GPUMilli != 0:
		return p, row.errf(colGPUMilli, "%d on a CPU-only pod (num_gpu 0); set gpu_milli to 0 or num_gpu to 1", p.GPUMilli)
	case p.NumGPU > 0 && p.GPUMilli == 0:
		return p, row.errf(colGPUMilli, "0 on a pod with num_gpu %d; use 1..1000", p.NumGPU)
	case p.NumGPU > 1 && p.GPUMilli != 1000:
		return p, row.errf(colGPUMilli, "%d with num_gpu %d; a GPU share (gpu_milli < 1000) needs num_gpu 1, whole GPUs need gpu_milli 1000", p.GPUMilli, p.NumGPU)
	}
	if spec := row.str(colGPUSpec); spec != "" && spec != "nan" {
		for m := range strings.SplitSeq(spec, "|") {
			m = strings.TrimSpace(m)
			if _, ok := GPUModelMemoryMiB(m); !ok {
				return p, row.errf(colGPUSpec, "unknown GPU model %q in %q; known models: %s", m, spec, knownModelsList())
			}
			if !slices.Contains(p.GPUModels, m) {
				p.GPUModels = append(p.GPUModels, m)
			}
		}
	}
	if p.Creation, err = row.time(colCreation); err != nil {
		return p, err
	}
	if p.Deletion, err = row.time(colDeletion); err != nil {
		return p, err
	}
	if p.Scheduled, err = row.time(colScheduled); err != nil {
		return p, err
	}
	if p.Creation >= 0 && p.Deletion >= 0 && p.Deletion < p.Creation {
		return p, row.errf(colDeletion, "%d is before creation_time %d", p.Deletion, p.Creation)
	}
	if p.Creation >= 0 && p.Scheduled >= 0 && p.Scheduled < p.Creation {
		return p, row.errf(colScheduled, "%d is before creation_time %d", p.Scheduled, p.Creation)
	}
	return p, nil
}

// columnSet names the columns a file must have and those it may have.
type columnSet struct{ required, optional []string }

// table reads a header-driven CSV file row by row.
type table struct {
	name string
	r    *csv.Reader
	cols map[string]int
}

func newTable(r io.Reader, name string, set columnSet) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1: empty file; expected a header with columns %s", name, strings.Join(set.required, ","))
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	t := &table{name: name, r: cr, cols: map[string]int{}}
	for i, c := range header {
		c = strings.TrimSpace(c)
		if i == 0 {
			c = strings.TrimPrefix(c, "\ufeff")
		}
		if _, dup := t.cols[c]; dup {
			return nil, fmt.Errorf("%s:1: column %s: appears twice in the header", name, c)
		}
		if !slices.Contains(set.required, c) && !slices.Contains(set.optional, c) {
			return nil, fmt.Errorf("%s:1: column %s: unknown; known columns are %s", name, c,
				strings.Join(append(slices.Clone(set.required), set.optional...), ", "))
		}
		t.cols[c] = i
	}
	for _, c := range set.required {
		if _, ok := t.cols[c]; !ok {
			return nil, fmt.Errorf("%s:1: column %s: missing from the header (required: %s)", name, c, strings.Join(set.required, ", "))
		}
	}
	return t, nil
}

func (t *table) next() (row, error) {
	rec, err := t.r.Read()
	if err != nil {
		if err == io.EOF {
			return row{}, err
		}
		return row{}, csvError(t.name, err)
	}
	line, _ := t.r.FieldPos(0)
	return row{t: t, rec: rec, line: line}, nil
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// row is one record of a table.
type row struct {
	t    *table
	rec  []string
	line int
}

// str returns the trimmed value of a column, "" when the file lacks the column.
func (r row) str(col string) string {
	i, ok := r.t.cols[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

func (r row) errf(col, format string, args ...any) error {
	return fmt.Errorf("%s:%d: column %s: %s", r.t.name, r.line, col, fmt.Sprintf(format, args...))
}

// maxQuantity bounds every request and capacity (4 million cores in cpu_milli,
// 4 PiB in memory_mib), so that sums over a cluster cannot overflow.
const maxQuantity = 1 << 32

// maxTime bounds the times: 100 years in seconds.
const maxTime = 100 * 366 * 24 * 3600

// quantity parses a required integer column in 0..maxQuantity.
func (r row) quantity(col string) (int64, error) {
	s := r.str(col)
	if s == "" {
		return 0, r.errf(col, "empty; expected a non-negative integer")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, r.errf(col, "bad number %q; expected a non-negative integer", s)
	}
	if v < 0 {
		return 0, r.errf(col, "negative value %d; requests and capacities must be >= 0", v)
	}
	if v > maxQuantity {
		return 0, r.errf(col, "%d is above the limit %d", v, int64(maxQuantity))
	}
	return v, nil
}

// time parses an optional non-negative time in seconds; absent or empty is -1.
func (r row) time(col string) (int64, error) {
	s := r.str(col)
	if s == "" || s == "nan" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, r.errf(col, "bad time %q; expected whole seconds", s)
	}
	if v < 0 {
		return 0, r.errf(col, "negative time %d", v)
	}
	if v > maxTime {
		return 0, r.errf(col, "%d is above the limit %d (100 years in seconds)", v, int64(maxTime))
	}
	return v, nil
}
