package curves

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Step is the length of one value of a curve, in seconds.
const Step = 600

// MinSteps is the shortest pod series kept (4 hours): shorter ones (pods that started
// or ended near the edges of the window) would repeat too often in a run of hours.
const MinSteps = 24

// memoryUnitMiB is the unit of the table's memory values (0.1 GiB).
const memoryUnitMiB = 102.4

// Curve is one pod's series, one value per Step from its first sample to its last;
// a step without a sample repeats the one before.
type Curve struct {
	// Pod is the first 8 hex digits of the pod's container_ip hash.
	Pod string
	// MemoryMiB is the most GPU memory the pod used in each step.
	MemoryMiB []int64
	// Utilization is the highest GPU utilisation (percent, rounded up) in each step:
	// a step counts as idle at a threshold only when every sample in it was.
	Utilization []int
}

// Len is the curve's length in seconds.
func (c *Curve) Len() int64 { return int64(len(c.MemoryMiB)) * Step }

// Peak is the most GPU memory of the whole curve.
func (c *Curve) Peak() int64 { return slices.Max(c.MemoryMiB) }

//go:generate go run ./gen -memory ../../test/chart/testdata/genai2026/pod_gpu_memory_used_bytes_anon.tar.gz -duty ../../autoscale/testdata/pod_gpu_duty_cycle_anon.tar.gz -o genai2026.txt

//go:embed genai2026.txt
var table string

// GenAI returns the shipped curves, in the table's order (by pod).
var GenAI = sync.OnceValue(func() []Curve {
	c, err := Parse(strings.NewReader(table))
	if err != nil {
		panic(fmt.Sprintf("curves: the embedded table: %v", err))
	}
	return c
})

// Derive turns the rows of the two archives (each with its header: the memory file's
// timestamp_anon, value (bytes), container_ip; the duty-cycle file's value (percent),
// timestamp_anon, container_ip) into curves: steps counted from the earliest sample
// of either file, pods present in both files and covering at least MinSteps, sorted by
// pod.
func Derive(memory, duty [][]string) ([]Curve, error) {
	mem, err := series(memory, "timestamp_anon", "value")
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	util, err := series(duty, "timestamp_anon", "value")
	if err != nil {
		return nil, fmt.Errorf("duty cycle: %w", err)
	}
	t0 := math.Inf(1)
	for _, s := range []map[string][]sample{mem, util} {
		for _, v := range s {
			for _, x := range v {
				t0 = min(t0, x.t)
			}
		}
	}
	var out []Curve
	for pod, ms := range mem {
		us := util[pod]
		if len(us) == 0 {
			continue
		}
		first, last := span(ms, t0)
		if last-first+1 < MinSteps {
			continue
		}
		c := Curve{Pod: pod[:min(8, len(pod))]}
		mmax := stepMax(ms, t0, first, last)
		umax := stepMax(us, t0, first, last)
		for i := range mmax {
			c.MemoryMiB = append(c.MemoryMiB, fromUnits(toUnits(mmax[i]/(1<<20))))
			c.Utilization = append(c.Utilization, int(math.Ceil(umax[i])))
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Curve) int { return strings.Compare(a.Pod, b.Pod) })
	return out, nil
}

type sample struct{ t, v float64 }

// series reads rows by pod.
func series(rows [][]string, timeCol, valueCol string) (map[string][]sample, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("no header")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{timeCol, valueCol, "container_ip"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("no column %s in header %v", h, rows[0])
		}
	}
	out := map[string][]sample{}
	for i, r := range rows[1:] {
		t, err1 := strconv.ParseFloat(r[col[timeCol]], 64)
		v, err2 := strconv.ParseFloat(r[col[valueCol]], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("row %d: %v", i+2, r)
		}
		pod := r[col["container_ip"]]
		out[pod] = append(out[pod], sample{t, v})
	}
	return out, nil
}

// span is the first and last step of the samples.
func span(s []sample, t0 float64) (first, last int) {
	first, last = math.MaxInt, -1
	for _, x := range s {
		i := int((x.t - t0) / Step)
		first, last = min(first, i), max(last, i)
	}
	return first, last
}

// stepMax is the largest value in each step from first to last; a step without a
// sample takes the one before (the first step without one takes the next sample's).
func stepMax(s []sample, t0 float64, first, last int) []float64 {
	out := make([]float64, last-first+1)
	seen := make([]bool, len(out))
	for _, x := range s {
		i := int((x.t-t0)/Step) - first
		if i < 0 || i >= len(out) {
			continue
		}
		if !seen[i] || x.v > out[i] {
			out[i], seen[i] = x.v, true
		}
	}
	next := -1.0
	for i := len(out) - 1; i >= 0; i-- {
		if seen[i] {
			next = out[i]
		} else if next >= 0 {
			out[i] = next
		}
	}
	for i := 1; i < len(out); i++ {
		if !seen[i] && seen[i-1] {
			out[i], seen[i] = out[i-1], true
		}
	}
	return out
}

// Write writes the curves in the table's format: a comment header, then one line per
// pod: its name, "m" and its memory in 0.1 GiB, "u" and its utilisation in percent.
func Write(w io.Writer, cs []Curve) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# genai2026 per-pod GPU curves (Alibaba clusterdata cluster-trace-v2026-GenAI), one value per %d s.\n", Step)
	fmt.Fprintf(b, "# Derived by sim/curves/gen; do not edit. pod m <GPU memory, most in the step, 0.1 GiB>... u <GPU utilisation, highest in the step, percent rounded up>...\n")
	for _, c := range cs {
		b.WriteString(c.Pod)
		b.WriteString(" m")
		for _, v := range c.MemoryMiB {
			fmt.Fprintf(b, " %d", toUnits(float64(v)))
		}
		b.WriteString(" u")
		for _, v := range c.Utilization {
			fmt.Fprintf(b, " %d", v)
		}
		b.WriteString("\n")
	}
	return b.Flush()
}

// Parse reads a table written by Write.
func Parse(r io.Reader) ([]Curve, error) {
	var out []Curve
	s := bufio.NewScanner(r)
	s.Buffer(nil, 1<<20)
	for line := 1; s.Scan(); line++ {
		text := s.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		mi, ui := slices.Index(f, "m"), slices.Index(f, "u")
		if mi != 1 || ui < 2 || len(f)-ui-1 != ui-mi-1 || ui-mi-1 == 0 {
			return nil, fmt.Errorf("line %d: want: pod m <values> u <as many values>", line)
		}
		c := Curve{Pod: f[0]}
		for i, v := range f[mi+1 : ui] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: memory value %d: %w", line, i+1, err)
			}
			c.MemoryMiB = append(c.MemoryMiB, fromUnits(n))
		}
		for i, v := range f[ui+1:] {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: utilisation value %d: %w", line, i+1, err)
			}
			c.Utilization = append(c.Utilization, n)
		}
		out = append(out, c)
	}
	return out, s.Err()
}

// toUnits is mib in the table's unit; fromUnits back in MiB.
func toUnits(mib float64) int64 { return int64(math.Round(mib / memoryUnitMiB)) }
func fromUnits(n int64) int64   { return int64(math.Round(float64(n) * memoryUnitMiB)) }
