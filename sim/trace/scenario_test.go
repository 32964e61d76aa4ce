package trace

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestOperatorScenario(t *testing.T) {
	s, err := BuildScenario("operator", 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != 10 {
		t.Fatalf("%d nodes", len(s.Nodes))
	}
	racks := map[string]int{}
	gpus := 0
	for _, n := range s.Nodes {
		gpus += n.GPUs
		racks[n.Labels["tessera.dev/rack"]]++
		if n.Model != "A100-80GB" || n.GPUMemoryMiB != 81920 || n.Labels["topology.kubernetes.io/zone"] != "z0" ||
			n.Labels["tessera.dev/gpu-model"] != "A100-80GB" {
			t.Errorf("node %+v", n)
		}
	}
	if gpus != 80 || racks["r0"] != 5 || racks["r1"] != 5 {
		t.Errorf("%d GPUs, racks %v", gpus, racks)
	}
	wantQueues := []QueueSpec{
		{Name: "train-prod", Weight: 2, DeservedGPUs: 60, CapabilityGPUs: 80, Reclaimable: true},
		{Name: "train-dev", Weight: 1, DeservedGPUs: 20, CapabilityGPUs: 40, Reclaimable: true},
	}
	if !reflect.DeepEqual(s.Queues, wantQueues) {
		t.Errorf("queues %+v", s.Queues)
	}

	classes := map[string]int{}
	names := map[string]bool{}
	for i, j := range s.Jobs {
		classes[j.Class]++
		if names[j.Name] {
			t.Fatalf("duplicate job %s", j.Name)
		}
		names[j.Name] = true
		if i > 0 && j.Arrival < s.Jobs[i-1].Arrival {
			t.Fatal("jobs not sorted by arrival")
		}
		if j.Arrival < 0 || j.Arrival >= s.Horizon || j.Duration <= 0 || j.Tasks < 1 || j.MinMember != j.Tasks {
			t.Fatalf("job %+v", j)
		}
		switch j.Class {
		case "pretrain":
			if j.Queue != "train-prod" || j.GPUs() != 32 || j.Tasks != 4 || j.Priority != 1000 || j.Duration < 2*3600 || j.Duration > 6*3600 {
				t.Errorf("pretrain %+v", j)
			}
		case "finetune":
			if j.GPUsPerTask != 8 || (j.Tasks != 1 && j.Tasks != 2) || j.Duration < 3600 || j.Duration > 3*3600 || j.Priority != 500 {
				t.Errorf("finetune %+v", j)
			}
		case "experiment":
			if j.GPUsPerTask != 0 || j.Tasks != 1 || j.GPUMemoryMiB < 10*1024 || j.GPUMemoryMiB > 40*1024 || j.Duration < 3600 || j.Duration > 3*3600 || j.Priority != 100 {
				t.Errorf("experiment %+v", j)
			}
		default:
			t.Errorf("job class %q", j.Class)
		}
		if j.Queue != "train-prod" && j.Queue != "train-dev" {
			t.Errorf("job %s in queue %q", j.Name, j.Queue)
		}
	}
	if classes["pretrain"] != 2 || classes["finetune"] < 10 || classes["experiment"] < 1000 {
		t.Errorf("job mix %v", classes)
	}

	again, _ := BuildScenario("operator", 42)
	if !reflect.DeepEqual(s, again) {
		t.Error("same seed, different scenario")
	}
	other, _ := BuildScenario("operator", 43)
	if reflect.DeepEqual(s.Jobs, other.Jobs) {
		t.Error("seeds 42 and 43 gave the same jobs")
	}
}

// Demand (GPUs that jobs would hold if each started on arrival; slices count as their
// share of a card) must exceed the 80-GPU cluster at some hour on every seed, and stay
// under it at others.
func TestOperatorScenarioDemandPeaks(t *testing.T) {
	for seed := int64(42); seed < 52; seed++ {
		s, _ := BuildScenario("operator", seed)
		maxD, minD := 0.0, 1e9
		for t0 := int64(0); t0 < s.Horizon; t0 += 600 {
			d := 0.0
			for _, j := range s.Jobs {
				if j.Arrival <= t0 && t0 < j.Arrival+j.Duration {
					if j.GPUsPerTask > 0 {
						d += float64(j.GPUs())
					} else {
						d += float64(j.GPUMemoryMiB) / 81920
					}
				}
			}
			maxD, minD = max(maxD, d), min(minD, d)
		}
		if maxD <= 80 || minD >= 80 {
			t.Errorf("seed %d: demand between %.0f and %.0f GPUs; want peaks above 80 and troughs below", seed, minD, maxD)
		}
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := BuildScenario("nope", 1)
	if err == nil || !strings.Contains(err.Error(), `unknown scenario "nope"; built-in scenarios: diurnal, operator`) {
		t.Fatalf("error %v", err)
	}
	if got := ScenarioNames(); !reflect.DeepEqual(got, []string{"diurnal", "operator"}) {
		t.Errorf("names %v", got)
	}
}

// Each queue's demand at the day's peak (jobs as if started on arrival, mean over seeds
// 42-51 of the 11:00-13:00 average) must fit its capability: a queue capped below its
// team's steady demand starves jobs under any scheduler that enforces quotas.
func TestOperatorScenarioQueuesFitCapability(t *testing.T) {
	peak := map[string]float64{}
	const seeds = 10
	for seed := int64(42); seed < 42+seeds; seed++ {
		s, _ := BuildScenario("operator", seed)
		for t0 := int64(11 * 3600); t0 < 13*3600; t0 += 600 {
			for _, j := range s.Jobs {
				if j.Arrival <= t0 && t0 < j.Arrival+j.Duration {
					d := float64(j.GPUMemoryMiB) / 81920
					if j.GPUsPerTask > 0 {
						d = float64(j.GPUs())
					}
					peak[j.Queue] += d / 12 / seeds
				}
			}
		}
	}
	s, _ := BuildScenario("operator", 42)
	for _, q := range s.Queues {
		t.Logf("%s: %.1f GPUs at the peak, capability %d", q.Name, peak[q.Name], q.CapabilityGPUs)
		if peak[q.Name] > float64(q.CapabilityGPUs) {
			t.Errorf("%s: %.1f GPUs of demand at the peak exceed its capability of %d", q.Name, peak[q.Name], q.CapabilityGPUs)
		}
	}
}

// The zero variant, and the scenario's own figures given explicitly, are the scenario.
func TestVariantDefaultsAreTheScenario(t *testing.T) {
	for name, v := range map[string]Variant{
		"operator": {Nodes: operatorNodes, Load: 1, Hours: 24},
		"diurnal":  {Nodes: diurnalNodes, Load: 1, Hours: 7 * 24},
	} {
		s, err := BuildScenario(name, 42)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []Variant{{}, v} {
			if got, err := BuildVariant(name, 42, v); err != nil || !reflect.DeepEqual(got, s) {
				t.Errorf("%s %+v: not the scenario (%v)", name, v, err)
			}
		}
	}
}

// More nodes scale the node pool, the queues' shares and the jobs with them; the load
// multiplies the jobs; the hours bound the arrivals.
func TestOperatorVariant(t *testing.T) {
	base, _ := BuildScenario("operator", 42)
	s, err := BuildVariant("operator", 42, Variant{Nodes: 40, Load: 1.5, Hours: 12})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "operator (40 nodes, load 1.5, 12h)" || s.Horizon != 12*3600 || len(s.Nodes) != 40 {
		t.Fatalf("%s: horizon %d, %d nodes", s.Name, s.Horizon, len(s.Nodes))
	}
	if n := s.Nodes[39]; n.Name != "a100-39" || n.Labels["tessera.dev/rack"] != "r7" {
		t.Errorf("last node %s in rack %s; want a100-39 in r7 (5 nodes a rack)", n.Name, n.Labels["tessera.dev/rack"])
	}
	want := []QueueSpec{
		{Name: "train-prod", Weight: 2, DeservedGPUs: 240, CapabilityGPUs: 320, Reclaimable: true},
		{Name: "train-dev", Weight: 1, DeservedGPUs: 80, CapabilityGPUs: 160, Reclaimable: true},
	}
	if !reflect.DeepEqual(s.Queues, want) {
		t.Errorf("queues %+v, want %+v", s.Queues, want)
	}
	count := func(s Scenario) map[string]int {
		c := map[string]int{}
		for _, j := range s.Jobs {
			c[j.Class]++
			if j.Arrival < 0 || j.Arrival >= s.Horizon {
				t.Errorf("%s: job %s arrives at %d, outside [0, %d)", s.Name, j.Name, j.Arrival, s.Horizon)
			}
		}
		return c
	}
	// 40 nodes at load 1.5: 6 times the rates and the backlog; over half the day, 3
	// times the arrivals. Pretraining: 6 waiting, one in each 4-hour window.
	got, was := count(s), count(base)
	if got["pretrain"] != 6+3 || got["finetune"] < 12+30 || got["finetune"] > 12+90 {
		t.Errorf("jobs %v against %v", got, was)
	}
	if r := float64(got["experiment"]-360) / float64(was["experiment"]-60); r < 2.5 || r > 3.5 {
		t.Errorf("experiments %d against %d: %.2f times the arrivals, want about 3", got["experiment"], was["experiment"], r)
	}
}

func TestVariantBounds(t *testing.T) {
	for v, want := range map[Variant]string{
		{Nodes: -1}:                   "scenario operator: nodes -1: must be 1 to 20000",
		{Nodes: MaxScenarioNodes + 1}: "nodes 20001: must be 1 to 20000",
		{Load: -1}:                    "load -1: must be a multiple of the arrival rate above 0",
		{Load: math.NaN()}:            "load NaN",
		{Hours: MaxScenarioHours + 1}: "hours 8785: must be above 0 and at most 8784",
		{Hours: 1e-6}:                 "the arrival window must last at least a second",
		{Nodes: MaxScenarioNodes, Load: MaxScenarioLoad}: "operator (20000 nodes, load 100): about",
	} {
		if _, err := BuildVariant("operator", 42, v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: got %v, want %q", v, err, want)
		}
	}
}
