package trace

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestFillUpOpenb(t *testing.T) {
	pods, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	const cluster = 6212 * 1000
	a := FillUp(pods, cluster, 1.3, 42)
	var total, maxReq int64
	names := map[string]bool{}
	originals := 0
	for _, p := range a {
		total += p.GPURequestMilli()
		maxReq = max(maxReq, p.GPURequestMilli())
		if names[p.Name] {
			t.Fatalf("duplicate name %s", p.Name)
		}
		names[p.Name] = true
		src := pods[p.Line-2]
		if p.Name == src.Name {
			originals++
		} else if !strings.HasPrefix(p.Name, src.Name+"-t") || src.GPURequestMilli() != p.GPURequestMilli() {
			t.Fatalf("pod %s does not match its source line %d (%s)", p.Name, p.Line, src.Name)
		}
	}
	if originals != len(pods) {
		t.Errorf("%d of the %d trace pods kept; the list asks for less than 1.3 x the cluster, so all must be", originals, len(pods))
	}
	for i, p := range a[:len(pods)] {
		if strings.Contains(p.Name, "-t") {
			t.Fatalf("arrival %d is the draw %s; the list's own pods arrive first", i, p.Name)
		}
	}
	// Drawing stops at the first draw whose per-GPU share would pass the target, so the
	// total is less than one GPU short of it, and past it by less than the largest pod.
	target := 1.3 * cluster
	if float64(total+1000) <= target || float64(total) >= target+float64(maxReq) {
		t.Fatalf("total request %d, largest pod %d, target %.0f", total, maxReq, target)
	}
	// Deterministic per seed, different across seeds, shuffled.
	if b := FillUp(pods, cluster, 1.3, 42); !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different workloads")
	}
	if c := FillUp(pods, cluster, 1.3, 43); reflect.DeepEqual(a[:100], c[:100]) {
		t.Fatal("seeds 42 and 43 gave the same workload")
	}
	if a[0].Name == pods[0].Name && a[1].Name == pods[1].Name && a[2].Name == pods[2].Name {
		t.Fatal("workload is not shuffled")
	}
	// Below the trace's own request (0.98 x the cluster), pods are removed.
	half := FillUp(pods, cluster, 0.5, 42)
	var halfTotal int64
	for _, p := range half {
		halfTotal += p.GPURequestMilli()
		if p.Name != pods[p.Line-2].Name {
			t.Fatalf("tuning down drew pod %s", p.Name)
		}
	}
	if len(half) >= len(pods) || halfTotal > cluster/2 || halfTotal+8000 <= cluster/2 {
		t.Fatalf("0.5 x cluster: %d pods asking %d", len(half), halfTotal)
	}
}

func TestFillUpDegenerate(t *testing.T) {
	cpuOnly := []PodSpec{{Name: "c", MilliCPU: 1000}}
	if got := FillUp(cpuOnly, 8000, 1.3, 1); got != nil {
		t.Fatalf("CPU-only workload: %d pods", len(got))
	}
	if got := FillUp(nil, 8000, 1.3, 1); got != nil {
		t.Fatal("empty workload")
	}
	if got := FillUp([]PodSpec{{Name: "g", NumGPU: 1, GPUMilli: 1000}}, 0, 1.3, 1); got != nil {
		t.Fatal("empty cluster")
	}
	// Whole GPUs only: floor(1.3 x 10) = 13 pods of one GPU, the original and 12 draws.
	got := FillUp([]PodSpec{{Name: "g", NumGPU: 1, GPUMilli: 1000}}, 10000, 1.3, 1)
	if len(got) != 13 {
		t.Fatalf("%d pods, want 13", len(got))
	}
	if !slices.ContainsFunc(got, func(p PodSpec) bool { return p.Name == "g" }) || !slices.ContainsFunc(got, func(p PodSpec) bool { return p.Name == "g-t11" }) {
		t.Errorf("names %v", got)
	}
	// A draw is kept while its per-GPU share fits under the target, as the reference
	// simulator tunes a workload: 8 GPUs, then 8 more (8000 + 1000 <= 13000).
	if got := FillUp([]PodSpec{{Name: "m", NumGPU: 8, GPUMilli: 1000}}, 10000, 1.3, 1); len(got) != 2 {
		t.Fatalf("%d pods of 8 GPUs, want 2", len(got))
	}
}

// TestFillUpNodes: ties go to a seeded random order of the nodes, drawn after the
// workload, as the reference simulator's node names make it; not to the list's order.
func TestFillUpNodes(t *testing.T) {
	pods := []PodSpec{{Name: "g", NumGPU: 1, GPUMilli: 1000}}
	nodes := make([]NodeSpec, 50)
	for i := range nodes {
		nodes[i] = NodeSpec{Name: fmt.Sprintf("n%02d", i), GPUs: 1}
	}
	const arrive = 1.3
	arrivals, order := FillUpNodes(pods, nodes, 50*1000, arrive, 42)
	if !reflect.DeepEqual(arrivals, FillUp(pods, 50*1000, arrive, 42)) {
		t.Fatal("FillUpNodes and FillUp built different workloads")
	}
	names := func(ns []NodeSpec) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.Name
		}
		return out
	}
	got := names(order)
	if slices.Equal(got, names(nodes)) {
		t.Fatal("ties go to the list's order")
	}
	if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, names(nodes)) {
		t.Fatalf("order %v is not a permutation of the nodes", got)
	}
	// The order depends on the seed, not on the order the list gives the nodes in.
	reversed := slices.Clone(nodes)
	slices.Reverse(reversed)
	if _, o := FillUpNodes(pods, reversed, 50*1000, arrive, 42); !slices.Equal(names(o), got) {
		t.Error("the list's order changed the tie order")
	}
	if _, o := FillUpNodes(pods, nodes, 50*1000, arrive, 43); slices.Equal(names(o), got) {
		t.Error("seeds 42 and 43 gave the same tie order")
	}
}

// Arrive factors that are not finite numbers in (0, 10], or that need more than
// MaxFillUpPods pods, are rejected by CheckFillUp, and FillUp itself stays bounded.
func TestFillUpBounds(t *testing.T) {
	pods := []PodSpec{{Name: "g", NumGPU: 1, GPUMilli: 1000}}
	for _, arrive := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, 10.5, 1e9} {
		err := CheckFillUp(pods, 8000, arrive)
		if err == nil || !strings.HasPrefix(err.Error(), "--arrive: must be a finite number between 0 and 10, got ") {
			t.Errorf("arrive %g: %v", arrive, err)
		}
		testutil.Within(t, hangBound, func() {
			if got := FillUp(pods, 8000, arrive, 1); len(got) > MaxFillUpPods {
				t.Errorf("arrive %g: %d pods", arrive, len(got))
			}
		})
	}
	if err := CheckFillUp(pods, 8000, 10); err != nil {
		t.Errorf("arrive 10: %v", err)
	}
	tiny := []PodSpec{{Name: "s", NumGPU: 1, GPUMilli: 1}}
	if err := CheckFillUp(tiny, 1_000_000*1000, 1.3); err == nil || !strings.Contains(err.Error(), "more than the limit 1000000") {
		t.Errorf("a million GPUs of 1-milli pods: %v", err)
	}
	testutil.Within(t, hangBound, func() {
		if got := FillUp(tiny, 1_000_000*1000, 1.3, 1); len(got) != MaxFillUpPods {
			t.Errorf("FillUp past the limit: %d pods", len(got))
		}
	})
}

func TestTypicalShapes(t *testing.T) {
	mk := func(n int, cpu int64, gpus int, milli int64, models ...string) []PodSpec {
		p := PodSpec{MilliCPU: cpu, NumGPU: gpus, GPUMilli: milli}
		if models != nil {
			p.GPUModels = models
		}
		return slices.Repeat([]PodSpec{p}, n)
	}
	var pods []PodSpec
	pods = append(pods, mk(50, 4000, 1, 1000)...)
	pods = append(pods, mk(20, 8000, 1, 500)...)
	pods = append(pods, mk(10, 8000, 1, 500, "V100M32", "V100M16")...)
	pods = append(pods, mk(10, 8000, 1, 500, "V100M16", "V100M32")...) // same constraint, other order
	pods = append(pods, mk(8, 1000, 0, 0)...)
	pods = append(pods, mk(2, 96000, 8, 1000)...)

	got := TypicalShapes(pods, 0.95)
	want := []Shape{
		{MilliCPU: 4000, NumGPU: 1, GPUMilli: 1000, Count: 50},
		{MilliCPU: 8000, NumGPU: 1, GPUMilli: 500, Count: 20},
		{MilliCPU: 8000, NumGPU: 1, GPUMilli: 500, GPUModels: "V100M16|V100M32", Count: 20},
		{MilliCPU: 1000, NumGPU: 0, GPUMilli: 0, Count: 8},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d shapes %+v, want 4 (98 of 100 pods)", len(got), got)
	}
	for i := range want {
		want[i].P = float64(want[i].Count) / 98
		if got[i] != want[i] {
			t.Errorf("shape %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if m := got[2].Models(); !reflect.DeepEqual(m, []string{"V100M16", "V100M32"}) || got[0].Models() != nil {
		t.Errorf("models %v %v", m, got[0].Models())
	}
	if all := TypicalShapes(pods, 1); len(all) != 5 {
		t.Errorf("coverage 1: %d shapes, want 5", len(all))
	}
	if one := TypicalShapes(pods, 0.3); len(one) != 1 || one[0].P != 1 {
		t.Errorf("coverage 0.3: %+v", one)
	}

	openb, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	shapes := TypicalShapes(openb, 0.95)
	sum, covered := 0.0, 0
	for i, s := range shapes {
		sum += s.P
		covered += s.Count
		if i > 0 && s.Count > shapes[i-1].Count {
			t.Fatal("shapes not sorted by frequency")
		}
	}
	if math.Abs(sum-1) > 1e-9 || float64(covered) < 0.95*float64(len(openb)) ||
		float64(covered-shapes[len(shapes)-1].Count) >= 0.95*float64(len(openb)) {
		t.Fatalf("%d shapes cover %d of %d pods, P sums to %v", len(shapes), covered, len(openb), sum)
	}
}

// hangBound tells a bounded run from a hang: these inputs once ran without end; a
// bounded run takes a few seconds, many more on a loaded shared machine.
const hangBound = 90 * time.Second
