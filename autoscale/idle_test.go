package autoscale_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/internal/tracearchive"
)

type sample struct {
	pod  string
	at   time.Time
	util float64
}

// genai reads the per-pod GPU utilization series of the production serving trace.
func genai(t *testing.T) []sample {
	t.Helper()
	rows, err := tracearchive.ReadCSV("testdata/pod_gpu_duty_cycle_anon.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, r := range rows[1:] {
		v, err1 := strconv.ParseFloat(r[0], 64)
		ts, err2 := strconv.ParseFloat(r[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %v: %v %v", r, err1, err2)
		}
		out = append(out, sample{pod: r[2], at: time.Unix(int64(ts), 0), util: v})
	}
	slices.SortStableFunc(out, func(a, b sample) int { return a.at.Compare(b.at) })
	return out
}

// TestIdleGPUsOnProductionSeries replays the 143 production pods' utilization: pods
// that stay near 0% are reported once idle past After, a pod is never reported while it
// was busy within After, and every pod that never rose above the threshold for longer
// than After is reported.
func TestIdleGPUsOnProductionSeries(t *testing.T) {
	samples := genai(t)
	d := &autoscale.IdleGPUs{Threshold: 1, After: time.Hour}
	lastBusy, first, last := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	sum, count := map[string]float64{}, map[string]int{}
	ever := map[string]bool{}
	for i, s := range samples {
		d.Observe(s.pod, 1, s.util, s.at)
		if _, ok := first[s.pod]; !ok {
			first[s.pod] = s.at
		}
		last[s.pod] = s.at
		sum[s.pod] += s.util
		count[s.pod]++
		if s.util > d.Threshold {
			lastBusy[s.pod] = s.at
		}
		if i+1 < len(samples) && samples[i+1].at.Equal(s.at) {
			continue
		}
		for _, p := range d.Idle(s.at) {
			if b, ok := lastBusy[p.Pod]; ok && s.at.Sub(b) <= d.After {
				t.Fatalf("%s reported idle at %s, busy at %s", p.Pod, s.at, b)
			}
			ever[p.Pod] = true
		}
	}
	nearZero, nearZeroReported := 0, 0
	for pod := range first {
		if _, busy := lastBusy[pod]; !busy && last[pod].Sub(first[pod]) > d.After && !ever[pod] {
			t.Errorf("%s never above %v%% for %s, not reported", pod, d.Threshold, last[pod].Sub(first[pod]))
		}
		if sum[pod]/float64(count[pod]) < 1 && last[pod].Sub(first[pod]) > d.After {
			nearZero++
			if ever[pod] {
				nearZeroReported++
			}
		}
	}
	if len(first) != 143 || nearZero == 0 || nearZeroReported != nearZero {
		t.Fatalf("%d pods, %d with mean utilization below 1%% over more than %s, %d of them reported", len(first), nearZero, d.After, nearZeroReported)
	}
	t.Logf("%d pods; reported at some time: %d; mean below 1%% over more than %s: %d, all reported", len(first), len(ever), d.After, nearZero)
}
