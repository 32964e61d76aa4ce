package report

import (
	"bytes"
	"encoding/json"
	stdhtml "html"
	"math"
	"strings"
	"testing"
)

// autoscaledResult is a run always on (onHours, 2 GPU-hours lost to preemption), under
// Tessera's autoscaler (tsHours) and under ca (caHours, 16 GPU-hours lost to 3
// scale-down evictions), on nodes of 8 GPUs with 100 GPU-hours of work.
func autoscaledResult(seed int64, onHours, tsHours, caHours float64) Result {
	on := &Replay{Times: []float64{0, 1}, Nodes: []int{4, 4}, WaitSeconds: []float64{100, 100}, JCTSeconds: []float64{1000, 1000},
		GPUNodeHours: onHours, GPUsPerNode: 8, LostGPUHours: 2, WorkGPUHours: 100, Evictions: map[string]int{"preemption": 1},
		CeilingNodes: []int{2, 2}, CeilingNodeHours: onHours / 2, NoMigrationNodeHours: onHours * 0.8}
	ts := &Replay{Times: []float64{0, 1}, Nodes: []int{4, 2}, WaitSeconds: []float64{100, 110}, JCTSeconds: []float64{1000, 1100},
		GPUNodeHours: tsHours, GPUsPerNode: 8, LostGPUHours: 2, WorkGPUHours: 100, Evictions: map[string]int{"preemption": 1}}
	ca := &Replay{Times: []float64{0, 1}, Nodes: []int{4, 3}, WaitSeconds: []float64{100, 140}, JCTSeconds: []float64{1000, 1400},
		GPUNodeHours: caHours, GPUsPerNode: 8, LostGPUHours: 16, WorkGPUHours: 100, Evictions: map[string]int{"scale-down": 3}}
	return Result{Policy: "tessera", Seed: seed, Trace: "diurnal", Replay: on, Autoscaled: map[string]*Replay{AlwaysOn: on, "tessera": ts, "ca": ca}}
}

func TestAutoscaleJSONAndSummary(t *testing.T) {
	rs := []Result{autoscaledResult(42, 100, 60, 80), autoscaledResult(43, 100, 70, 90)}
	var b bytes.Buffer
	if err := WriteJSON(&b, rs, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary []struct {
			Autoscale *Autoscale `json:"autoscale"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	a := doc.Summary[0].Autoscale
	if a == nil || len(a.Arms) != 3 || a.Arms[0].Autoscaler != AlwaysOn || a.Arms[1].Autoscaler != "ca" || a.Arms[2].Autoscaler != "tessera" {
		t.Fatalf("autoscale %+v; want always-on, ca, tessera", a)
	}
	if a.CeilingSavedPct != 50 || math.Abs(a.NoMigrationSavedPct-20) > 1e-9 {
		t.Errorf("ceiling %g%%, no migration %g%%; want 50 and 20", a.CeilingSavedPct, a.NoMigrationSavedPct)
	}
	ts, ca := a.Arms[2], a.Arms[1]
	// Tessera: 65 node-h of 100 saved 35%; it lost as much work as always on (0.25 node-h).
	tsNet := 100 * (1 - 65.25/100.25)
	if ts.GPUNodeHours != 65 || math.Abs(ts.SavedPct-35) > 1e-9 || math.Abs(ts.NetSavedPct-tsNet) > 1e-9 || ts.MeanWaitSeconds != 105 || ts.MeanJCTSeconds != 1050 {
		t.Errorf("tessera arm %+v", ts)
	}
	// ca: 85 node-h saved 15%; 16 GPU-hours lost are 2 node-hours, against always on's 0.25.
	if want := 100 * (1 - (85+2)/(100+0.25)); math.Abs(ca.SavedPct-15) > 1e-9 || math.Abs(ca.NetSavedPct-want) > 1e-9 ||
		ca.LostGPUHoursPct != 16 || ca.Evictions != 3 || ca.EvictionsByCause["scale-down"] != 3 || ca.P95WaitSeconds < 138 {
		t.Errorf("ca arm %+v; want net saved %g%%", ca, want)
	}
	if math.Abs(ts.SavedOfCeilingPct-2*tsNet) > 1e-9 {
		t.Errorf("tessera of ceiling %g%%, want %g%%", ts.SavedOfCeilingPct, 2*tsNet)
	}
}

func TestAutoscaleTableAndChart(t *testing.T) {
	rs := []Result{autoscaledResult(42, 100, 60, 80)}
	var table, html bytes.Buffer
	if err := WriteTable(&table, rs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"autoscaling, against the same jobs", "ceiling: 50.0% saved", "always-on     1       100.0", "ca     1        80.0     20.0"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := WriteHTML(&html, "t", rs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GPU nodes paid for over time", "always-on", "tessera+tessera", "tessera+ca", "ceiling (re-packed)"} {
		if !strings.Contains(stdhtml.UnescapeString(html.String()), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Without autoscaling, neither appears.
	plain := []Result{{Policy: "tessera", Trace: "x", Replay: &Replay{Times: []float64{0}, Nodes: []int{1}, WaitSeconds: []float64{1}}}}
	table.Reset()
	WriteTable(&table, plain, nil)
	if strings.Contains(table.String(), "autoscaling") {
		t.Error("autoscaling table without autoscaling")
	}
}
