package trace

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFillUpOpenb(t *testing.T) {
	pods, err := ReadPodsCSV(filepath.Join(openbDir, "openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	const cluster = 6212 * 1000
	a := FillUp(pods, cluster, 1.3, 42)
	var total int64
	names := map[string]bool{}
	for _, p := range a {
		total += p.GPURequestMilli()
		if names[p.Name] {
			t.Fatalf("duplicate name %s", p.Name)
		}
		names[p.Name] = true
		if src := pods[p.Line-2]; !strings.HasPrefix(p.Name, src.Name+"-") || src.GPURequestMilli() != p.GPURequestMilli() {
			t.Fatalf("pod %s does not match its source line %d (%s)", p.Name, p.Line, src.Name)
		}
	}
	target := int64(math.Ceil(1.3 * cluster))
	if total < target {
		t.Fatalf("total request %d below target %d", total, target)
	}
	// The draw stops at the pod that crosses the target: drop the largest request and
	// the rest must be below it (true for whichever pod was drawn last).
	var maxReq int64
	for _, p := range a {
		maxReq = max(maxReq, p.GPURequestMilli())
	}
	if total-maxReq >= target {
		t.Fatalf("kept drawing after the target: total %d, largest pod %d, target %d", total, maxReq, target)
	}
	// Deterministic per seed, different across seeds, shuffled (the draw index
	// suffixes are not in order).
	if b := FillUp(pods, cluster, 1.3, 42); !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different workloads")
	}
	if c := FillUp(pods, cluster, 1.3, 43); reflect.DeepEqual(a[:100], c[:100]) {
		t.Fatal("seeds 42 and 43 gave the same workload")
	}
	if strings.HasSuffix(a[0].Name, "-0") && strings.HasSuffix(a[1].Name, "-1") && strings.HasSuffix(a[2].Name, "-2") {
		t.Fatal("workload is not shuffled")
	}
	// A lower arrive multiple gives fewer pods.
	if half := FillUp(pods, cluster, 0.5, 42); len(half) >= len(a) || len(half) == 0 {
		t.Fatalf("0.5 x cluster: %d pods, 1.3 x: %d", len(half), len(a))
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
	// Whole GPUs only: exactly ceil(1.3 x 10) = 13 pods of one GPU.
	if got := FillUp([]PodSpec{{Name: "g", NumGPU: 1, GPUMilli: 1000}}, 10000, 1.3, 1); len(got) != 13 {
		t.Fatalf("%d pods, want 13", len(got))
	}
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
