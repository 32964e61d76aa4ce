package framework_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func TestFragmentedMilli(t *testing.T) {
	// Two A100s: GPU 0 has 400 free, GPU 1 is free.
	n := testutil.MakeNode("n").GPUs(2, "A100-80GB").CPU(16000).Obj()
	n.GPUs[0].UsedMilli = 600
	n.Refresh()
	tests := []struct {
		name  string
		shape framework.PodShape
		want  int64
	}{
		{"one GPU: the partial GPU is fragmented", framework.PodShape{GPU: framework.GPURequest{Count: 1}}, 400},
		{"two GPUs: cannot run, all free is fragmented", framework.PodShape{GPU: framework.GPURequest{Count: 2}}, 1400},
		{"share larger than the fragment", framework.PodShape{GPU: framework.GPURequest{Milli: 500}}, 400},
		{"share that fits the fragment", framework.PodShape{GPU: framework.GPURequest{Milli: 300}}, 0},
		{"memory slice of 500 milli", framework.PodShape{GPU: framework.GPURequest{MemoryMiB: 40960}}, 400},
		{"cpu only", framework.PodShape{MilliCPU: 1000}, 1400},
		{"other model", framework.PodShape{GPU: framework.GPURequest{Count: 1, Models: []string{"T4"}}}, 1400},
		{"not enough cpu", framework.PodShape{MilliCPU: 32000, GPU: framework.GPURequest{Milli: 100}}, 1400},
	}
	for _, tc := range tests {
		if got := framework.FragmentedMilli(n, &tc.shape); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	w := framework.Workload{{GPU: framework.GPURequest{Count: 1}, P: 0.5}, {GPU: framework.GPURequest{Count: 2}, P: 0.5}}
	if got := framework.NodeFragmentation(n, w); got != 900 {
		t.Errorf("F_n = %v, want 0.5 x 400 + 0.5 x 1400", got)
	}
}

func TestMilliOn(t *testing.T) {
	a100 := framework.GPU{MemoryMiB: 81920}
	t4 := framework.GPU{MemoryMiB: 15109}
	tests := []struct {
		req  framework.GPURequest
		gpu  framework.GPU
		want int64
	}{
		{framework.GPURequest{Count: 2}, a100, 1000},
		{framework.GPURequest{Milli: 250}, a100, 250},
		{framework.GPURequest{MemoryMiB: 40960}, a100, 500},
		{framework.GPURequest{MemoryMiB: 40961}, a100, 501}, // rounded up: slices never exceed memory
		{framework.GPURequest{MemoryMiB: 15109}, t4, 1000},
		{framework.GPURequest{MemoryMiB: 1}, framework.GPU{}, 1001}, // unknown memory never fits
	}
	for _, tc := range tests {
		if got := tc.req.MilliOn(&tc.gpu); got != tc.want {
			t.Errorf("%+v on %d MiB: %d, want %d", tc.req, tc.gpu.MemoryMiB, got, tc.want)
		}
	}
	if got := (&framework.GPURequest{MemoryMiB: 20480}).NominalMilli(81920); got != 250 {
		t.Errorf("nominal: %d", got)
	}
}

func TestPickWholeGPUs(t *testing.T) {
	tests := []struct {
		name    string
		islands int
		used    []int
		count   int
		want    []int
	}{
		{"one island", 4, []int{0}, 4, []int{4, 5, 6, 7}},
		{"smallest island that holds it", 4, []int{0}, 3, []int{1, 2, 3}},
		{"one NUMA node", 1, []int{0, 1, 2}, 2, []int{4, 5}},
		{"lowest indices otherwise", 4, []int{0, 4}, 4, []int{1, 2, 3, 5}},
		{"too few", 4, []int{0, 1, 2, 3, 4}, 4, nil},
	}
	for _, tc := range tests {
		n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Islands(tc.islands).Obj()
		for _, i := range tc.used {
			n.GPUs[i].UsedMilli = 1
		}
		n.Refresh()
		got := framework.PickWholeGPUs(&framework.GPURequest{Count: tc.count}, n)
		if !slices.Equal(got.Indices(), append([]int{}, tc.want...)) {
			t.Errorf("%s: %v, want %v", tc.name, got.Indices(), tc.want)
		}
	}
}

// A claim's matchAttribute constraint: all GPUs from one value, the smallest group
// that holds them; none when no group does, however many GPUs are free.
func TestPickWholeGPUsMatchingAnAttribute(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Obj()
	match := map[string]string{}
	for i := range n.GPUs {
		n.GPUs[i].Device = fmt.Sprintf("gpu-%d", i)
		if i < 7 { // GPU 7 lacks the attribute
			match[n.GPUs[i].UUID] = []string{"a", "b"}[i/4]
		}
	}
	n.GPUs[0].UsedMilli, n.GPUs[6].UsedMilli = 1, 1 // free: a 1-3, b 4-5
	n.Refresh()
	req := func(count int) *framework.GPURequest {
		return &framework.GPURequest{Count: count, Claim: &framework.ClaimRequest{Allowed: map[string]bool{}, Match: match}}
	}
	for _, tc := range []struct {
		count int
		want  []int
	}{{2, []int{4, 5}}, {3, []int{1, 2, 3}}, {4, nil}} {
		r := req(tc.count)
		for uuid := range match {
			r.Claim.Allowed[uuid] = true
		}
		got := framework.PickWholeGPUs(r, n)
		if !slices.Equal(got.Indices(), tc.want) {
			t.Errorf("%d GPUs: %v, want %v", tc.count, got.Indices(), tc.want)
		}
		if got != 0 && !r.Matches(n, got) {
			t.Errorf("%d GPUs: %v do not match", tc.count, got.Indices())
		}
	}
	if r := req(2); r.Matches(n, framework.GPUSet(0).Add(3).Add(4)) {
		t.Error("GPUs 3 and 4 (a, b) match")
	}
}

// A claim's distinctAttribute constraints: GPUs with different values of each, the
// lowest indices first, within one value of its matchAttribute constraints; none when
// too few values are free.
func TestPickWholeGPUsWithDistinctAttributes(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Obj()
	numa, island, allowed := map[string]string{}, map[string]string{}, map[string]bool{}
	for i := range n.GPUs {
		n.GPUs[i].Device = fmt.Sprintf("gpu-%d", i)
		u := n.GPUs[i].UUID
		numa[u], island[u], allowed[u] = fmt.Sprint(i%2), fmt.Sprint(i/4), true
	}
	n.GPUs[1].UsedMilli = 1 // island 0 keeps one GPU of NUMA 1: 3
	n.Refresh()
	for _, tc := range []struct {
		name  string
		count int
		match map[string]string
		want  []int
	}{
		{"distinct NUMA", 2, nil, []int{0, 3}},
		{"three NUMA values", 3, nil, nil},
		{"distinct NUMA, one island", 2, island, []int{0, 3}},
	} {
		r := &framework.GPURequest{Count: tc.count, Claim: &framework.ClaimRequest{Allowed: allowed, Match: tc.match, Distinct: []map[string]string{numa}}}
		got := framework.PickWholeGPUs(r, n)
		if !slices.Equal(got.Indices(), tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got.Indices(), tc.want)
		}
		if got != 0 && !r.Matches(n, got) {
			t.Errorf("%s: %v do not meet the constraints", tc.name, got.Indices())
		}
	}
	r := &framework.GPURequest{Count: 2, Claim: &framework.ClaimRequest{Allowed: allowed, Distinct: []map[string]string{numa}}}
	if r.Matches(n, framework.GPUSet(0).Add(0).Add(2)) {
		t.Error("GPUs 0 and 2 (both NUMA 0) meet a distinct constraint")
	}
	n.GPUs[3].UsedMilli = 1 // island 0: only NUMA 0 left; island 1: 4-7
	n.Refresh()
	r = &framework.GPURequest{Count: 2, Claim: &framework.ClaimRequest{Allowed: allowed, Match: island, Distinct: []map[string]string{numa}}}
	if got := framework.PickWholeGPUs(r, n); !slices.Equal(got.Indices(), []int{4, 5}) {
		t.Errorf("one island, distinct NUMA, island 0 short: %v, want [4 5]", got.Indices())
	}
}

// A firstAvailable request: its GPUs from the first alternative the node can serve,
// whole or as a share, and from a later one only when the earlier cannot.
func TestPickGPUsFromTheFirstAvailableAlternative(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(4, "A100-80GB").Obj()
	fast, any := map[string]bool{}, map[string]bool{}
	for i := range n.GPUs {
		n.GPUs[i].Device, n.GPUs[i].Shareable = fmt.Sprintf("gpu-%d", i), true
		any[n.GPUs[i].UUID] = true
		if i >= 2 {
			fast[n.GPUs[i].UUID] = true
		}
	}
	n.Refresh()
	r := &framework.GPURequest{Count: 2, Claim: &framework.ClaimRequest{Allowed: any, Alternatives: []map[string]bool{fast, any}}}
	if got := framework.PickGPUs(r, n); !slices.Equal(got.Indices(), []int{2, 3}) {
		t.Errorf("both fast GPUs free: %v, want [2 3]", got.Indices())
	}
	if r.Matches(n, framework.GPUSet(0).Add(0).Add(1)) {
		t.Error("GPUs 0 and 1 match while the first alternative can be served")
	}
	n.GPUs[3].UsedMilli = 1
	n.Refresh()
	if got := framework.PickGPUs(r, n); !slices.Equal(got.Indices(), []int{0, 1}) || !r.Matches(n, got) {
		t.Errorf("one fast GPU free: %v, want [0 1] from the second alternative", got.Indices())
	}
	share := &framework.GPURequest{MemoryMiB: 10240, Claim: &framework.ClaimRequest{Allowed: any, Alternatives: []map[string]bool{fast, any}}}
	if got := framework.PickGPUs(share, n); !slices.Equal(got.Indices(), []int{3}) {
		t.Errorf("a share: %v, want [3], the fast GPU with the least free memory", got.Indices())
	}
}

func TestPlaceAndRemove(t *testing.T) {
	n := testutil.MakeNode("n").GPUs(2, "A100-80GB").Obj()
	a := testutil.MakeJob("a").GPUMemory(40960).Obj().Tasks[0]
	b := testutil.MakeJob("b").GPU(1).Obj().Tasks[0]
	n.Place(a, framework.PickGPUs(&a.GPU, n), 500)
	n.Place(b, framework.PickGPUs(&b.GPU, n), 1000)
	if n.Used.GPU != 1500 || n.FreeWholeGPUs() != 0 || n.MaxFreeMilli() != 500 || a.GPUs == b.GPUs {
		t.Fatalf("after place: used %d, whole %d, max free %d", n.Used.GPU, n.FreeWholeGPUs(), n.MaxFreeMilli())
	}
	v := n.Version
	n.Remove(a)
	if n.Used.GPU != 1000 || n.FreeWholeGPUs() != 1 || a.Node != nil || len(n.Tasks) != 1 || n.Version == v {
		t.Fatalf("after remove: used %d, whole %d, tasks %d", n.Used.GPU, n.FreeWholeGPUs(), len(n.Tasks))
	}
}

func TestFitStatsString(t *testing.T) {
	var s framework.FitStats
	for range 3 {
		s.Add(framework.FitGPUCount)
	}
	s.Add(framework.FitTaint)
	s.Add(framework.FitOK)
	if got, want := s.String(), "1/5 nodes fit: 3 insufficient free whole GPUs, 1 node(s) had untolerated taints"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
