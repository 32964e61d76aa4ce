package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func autoscaledResult(seed int64, onHours, tsHours, caHours float64) Result {
	on := &Replay{Times: []float64{0, 1}, Nodes: []int{4, 4}, WaitSeconds: []float64{100, 100}, GPUNodeHours: onHours}
	ts := &Replay{Times: []float64{0, 1}, Nodes: []int{4, 2}, WaitSeconds: []float64{100, 110}, GPUNodeHours: tsHours, ScaleDownEvictions: 2}
	ca := &Replay{Times: []float64{0, 1}, Nodes: []int{4, 3}, WaitSeconds: []float64{100, 140}, GPUNodeHours: caHours}
	return Result{Policy: "tessera", Seed: seed, Trace: "diurnal", Replay: ts, Savings: NewSavings(on, ts, ca)}
}

func TestSavingsJSONAndSummary(t *testing.T) {
	rs := []Result{autoscaledResult(42, 100, 60, 80), autoscaledResult(43, 100, 70, 90)}
	var b bytes.Buffer
	if err := WriteJSON(&b, rs, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
		Summary []struct {
			Savings *Savings `json:"savings"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Results[0]
	ca, _ := r["ca_like"].(map[string]any)
	if r["gpu_node_hours"] != 60.0 || r["gpu_node_hours_always_on"] != 100.0 || math.Abs(r["saved_pct"].(float64)-40) > 1e-9 ||
		r["mean_wait_seconds"] != 105.0 || r["mean_wait_seconds_always_on"] != 100.0 || math.Abs(ca["saved_pct"].(float64)-20) > 1e-9 || ca["mean_wait_seconds"] != 120.0 {
		t.Errorf("result figures: %v", r)
	}
	s := doc.Summary[0].Savings
	if s == nil || s.GPUNodeHours != 65 || math.Abs(s.SavedPct-35) > 1e-9 || math.Abs(s.CALike.SavedPct-15) > 1e-9 || s.MeanWaitSeconds != 105 {
		t.Fatalf("summary savings %+v", s)
	}
	if got := s.SavedRatio(); math.Abs(got-35.0/15) > 1e-9 {
		t.Errorf("ratio %g", got)
	}
	if got := s.WaitChangePct(); math.Abs(got-5) > 1e-9 {
		t.Errorf("wait change %g%%, want +5%%", got)
	}
}

func TestSavingsTableAndChart(t *testing.T) {
	rs := []Result{autoscaledResult(42, 100, 60, 80)}
	var table, html bytes.Buffer
	if err := WriteTable(&table, rs, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "autoscaling, against the same jobs") || !strings.Contains(table.String(), "2.00×") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := WriteHTML(&html, "t", rs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GPU nodes paid for over time, tessera", "always on", "tessera autoscaler", "CA-like"} {
		if !strings.Contains(html.String(), want) {
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
