package trace

import (
	"math"
	"reflect"
	"testing"
)

// Demand peaks near 90% of the GPUs around noon and falls near 30% around midnight,
// on every seed tried: the rates come from the pool, not from one seed.
func TestDiurnalDemandPeaksByDayAndFallsAtNight(t *testing.T) {
	for _, seed := range []int64{42, 43, 44} {
		s, err := BuildScenario("diurnal", seed)
		if err != nil {
			t.Fatal(err)
		}
		d := HourlyDemand(s)
		noon := (d[11] + d[12] + d[13]) / 3
		midnight := (d[23] + d[0] + d[1]) / 3
		t.Logf("seed %d: %d jobs, demand %.2f around noon, %.2f around midnight", seed, len(s.Jobs), noon, midnight)
		if math.Abs(noon-DiurnalPeak) > 0.1 || math.Abs(midnight-DiurnalTrough) > 0.1 {
			t.Errorf("seed %d: demand %.2f around noon, %.2f around midnight; want %.2f and %.2f within 0.1", seed, noon, midnight, DiurnalPeak, DiurnalTrough)
		}
	}
}

func TestDiurnalScenarioIsSeededAndFits(t *testing.T) {
	a, err := BuildScenario("diurnal", 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := BuildScenario("diurnal", 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two scenarios")
	}
	if c, _ := BuildScenario("diurnal", 8); reflect.DeepEqual(a.Jobs, c.Jobs) {
		t.Fatal("two seeds gave the same jobs")
	}
	n := a.Nodes[0]
	for i, j := range a.Jobs {
		if j.GPUsPerTask > n.GPUs || j.MilliCPU > n.MilliCPU || j.MemoryMiB > n.MemoryMiB || j.GPUMemoryMiB > n.GPUMemoryMiB ||
			j.GPUsPerTask == 0 && j.GPUMemoryMiB <= 0 || j.Duration <= 0 || j.Duration > diurnalMaxLifetime || j.Arrival < 0 || j.Arrival >= a.Horizon {
			t.Fatalf("job %+v does not fit a node or the week", j)
		}
		if i > 0 && j.Arrival < a.Jobs[i-1].Arrival {
			t.Fatalf("jobs not in arrival order at %s", j.Name)
		}
	}
}

// The derived process: the mean rate gives the mean demand, and the pool's smoothing
// never asks a swing above 1.
func TestDiurnalCycleFromPool(t *testing.T) {
	pool := []diurnalPod{{gpus: 1, lifetime: 3600}, {gpus: 0.5, lifetime: 1800}}
	c, err := newDiurnalCycle(pool, 100, 0.9, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	m := (3600 + 0.5*1800) / 2.0
	if math.Abs(c.mean*m-60) > 1e-9 || c.swing <= 0.5 || c.swing > 0.52 || c.lag <= 0 {
		t.Errorf("cycle %+v: want a mean demand of 60 GPUs, a swing just above 0.5 and a positive lag", c)
	}
	if _, err := newDiurnalCycle([]diurnalPod{{gpus: 1, lifetime: 86400}}, 100, 0.9, 0.3); err == nil {
		t.Error("day-long pods flatten the cycle, yet a swing was derived")
	}
}

// Twice the nodes: twice the arrival rate, the same demand as a share of the GPUs.
func TestDiurnalVariant(t *testing.T) {
	base, _ := BuildScenario("diurnal", 42)
	s, err := BuildVariant("diurnal", 42, Variant{Nodes: 16, Hours: 72})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "diurnal (16 nodes, 72h)" || len(s.Nodes) != 16 || s.Horizon != 72*3600 || s.Nodes[15].Labels["tessera.dev/rack"] != "r3" {
		t.Fatalf("%s: %d nodes, horizon %d", s.Name, len(s.Nodes), s.Horizon)
	}
	// Arrivals after 0 over 3 days against 7, at twice the rate.
	arrived := func(s Scenario) int {
		n := 0
		for _, j := range s.Jobs {
			if j.Arrival >= s.Horizon {
				t.Fatalf("%s: job %s arrives at %d, after the window", s.Name, j.Name, j.Arrival)
			}
			if j.Arrival > 0 {
				n++
			}
		}
		return n
	}
	if got, was := arrived(s), arrived(base); math.Abs(float64(got)/float64(was)-2*3.0/7) > 0.05 {
		t.Errorf("%d jobs arrived against %d: %.2f times, want about %.2f", got, was, float64(got)/float64(was), 2*3.0/7)
	}
}
