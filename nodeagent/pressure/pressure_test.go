package pressure

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, request, limit, used int64) Pod {
	return Pod{UID: types.UID("uid-" + name), Namespace: "ml", Name: name, RequestMiB: request, LimitMiB: limit, UsedMiB: used}
}

// gpu80 is an 80 GiB GPU (81920 MiB; the default threshold is 77824 MiB) holding pods,
// with NVML's use their sum.
func gpu80(pods ...Pod) GPU {
	g := GPU{UUID: "GPU-a", Index: 3, MemoryMiB: 81920, Pods: pods}
	for _, p := range pods {
		g.UsedMiB += p.UsedMiB
	}
	return g
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gpu     GPU
		policy  Policy
		victim  string // "" for none
		trigger string
	}{
		{name: "below the threshold, bursting", gpu: gpu80(pod("a", 20000, 60000, 50000), pod("b", 20000, 20000, 20000))},
		{name: "above: the furthest above its request, relatively", trigger: TriggerThreshold, victim: "small",
			// big is 30000 MiB above a 40000 request (0.75); small 12000 above 8000 (1.5).
			gpu: gpu80(pod("big", 40000, 80000, 70000), pod("small", 8000, 30000, 20000))},
		{name: "above, everyone within request: none", gpu: gpu80(pod("a", 40000, 40000, 40000), pod("b", 40960, 40960, 40000))},
		{name: "host processes count", trigger: TriggerThreshold, victim: "a",
			gpu: func() GPU {
				g := gpu80(pod("a", 20000, 60000, 30000), pod("b", 40000, 40000, 30000))
				g.UsedMiB = 79000
				return g
			}()},
		{name: "at its request is never the victim", trigger: TriggerThreshold, victim: "b",
			gpu: gpu80(pod("a", 70000, 70000, 70000), pod("b", 4000, 12000, 8500))},
		{name: "tie: the most MiB above", trigger: TriggerThreshold, victim: "y",
			gpu: gpu80(pod("x", 10000, 40000, 20000), pod("y", 30000, 80000, 60000))},
		{name: "above its request without a limit: not a candidate", trigger: TriggerThreshold, victim: "limited",
			gpu: gpu80(pod("nolimit", 10000, 10000, 40000), pod("limited", 20000, 40000, 39000))},
		{name: "none with a limit", gpu: gpu80(pod("nolimit", 10000, 10000, 40000), pod("b", 40000, 40000, 39000))},
		{name: "threshold of the policy", policy: Policy{ThresholdPercent: 50}, trigger: TriggerThreshold, victim: "a",
			gpu: gpu80(pod("a", 20000, 60000, 45000))},
		{name: "an arrival that does not fit", trigger: TriggerArrival, victim: "burst",
			gpu: gpu80(pod("burst", 20000, 60000, 50000), pod("steady", 20000, 20000, 20000), Pod{UID: "new", Name: "new", RequestMiB: 20000, LimitMiB: 20000, Arriving: true})},
		{name: "an arrival that fits", gpu: gpu80(pod("burst", 20000, 60000, 30000), Pod{UID: "new", Name: "new", RequestMiB: 20000, LimitMiB: 20000, Arriving: true})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := tc.policy.Decide(tc.gpu)
			switch {
			case tc.victim == "" && ok:
				t.Fatalf("evicts %s (%s), want none", e.Victim, e.Trigger)
			case tc.victim != "" && (!ok || e.Victim.Name != tc.victim || e.Trigger != tc.trigger):
				t.Fatalf("evicts %v %q (%v), want %s for %s", ok, e.Victim.Name, e.Trigger, tc.victim, tc.trigger)
			}
		})
	}
}

func TestEvictionMessage(t *testing.T) {
	e, ok := Policy{}.Decide(gpu80(pod("big", 40000, 80000, 70000), pod("small", 8000, 30000, 20000)))
	if !ok {
		t.Fatal("no eviction")
	}
	for _, want := range []string{"GPU 3 (GPU-a, 81920 MiB) uses 90000 MiB, above the pressure threshold of 77824 MiB",
		"uses 20000 MiB, request 8000 MiB, limit 30000 MiB", "limit equal to the request"} {
		if !strings.Contains(e.Message(), want) {
			t.Errorf("message %q lacks %q", e.Message(), want)
		}
	}
}

// The tracker evicts one pod per GPU, waits for it to go, never evicts it twice, and
// reserves a newly bound pod's request only until it reaches it or the window passes.
func TestTracker(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := &Tracker{Policy: Policy{ArrivalWindow: time.Minute}}
	burst, steady := pod("burst", 20000, 60000, 50000), pod("steady", 20000, 20000, 20000)
	if got := tr.Decide([]GPU{gpu80(burst, steady)}, now); len(got) != 0 {
		t.Fatalf("evicts %v below the threshold", got)
	}
	// A third pod arrives: its request does not fit beside the others' use.
	newcomer := pod("new", 20000, 20000, 0)
	got := tr.Decide([]GPU{gpu80(burst, steady, newcomer)}, now.Add(time.Second))
	if len(got) != 1 || got[0].Victim.Name != "burst" || got[0].Trigger != TriggerArrival {
		t.Fatalf("evictions %+v, want burst for the arrival", got)
	}
	tr.Evicted(got[0])
	// While burst terminates (still on the GPU, and everyone above the threshold), no
	// further eviction on that GPU.
	other := pod("other", 10000, 30000, 25000)
	if got := tr.Decide([]GPU{gpu80(burst, steady, newcomer, other)}, now.Add(2*time.Second)); len(got) != 0 {
		t.Fatalf("evicts %v while the last victim is still there", got)
	}
	// burst is gone; the newcomer never reached its request and its window passed: only
	// the use counts, below the threshold.
	if got := tr.Decide([]GPU{gpu80(steady, newcomer, other)}, now.Add(2*time.Minute)); len(got) != 0 {
		t.Fatalf("evicts %v after the window", got)
	}
	// A terminating pod holds its GPU's decisions too.
	leaving := pod("leaving", 10000, 10000, 10000)
	leaving.Terminating = true
	if got := tr.Decide([]GPU{gpu80(pod("hog", 10000, 80000, 75000), leaving)}, now.Add(3*time.Minute)); len(got) != 0 {
		t.Fatalf("evicts %v while a pod terminates", got)
	}
	// A pod that reached its request is no longer arriving even within the window.
	tr2 := &Tracker{}
	reached := pod("reached", 20000, 20000, 20000)
	tr2.Decide([]GPU{gpu80(reached)}, now)
	reached.UsedMiB = 0
	if got := tr2.Decide([]GPU{gpu80(pod("burst", 20000, 60000, 70000), reached)}, now.Add(time.Second)); len(got) != 0 {
		t.Fatalf("evicts %v for a pod that already reached its request", got)
	}
}
