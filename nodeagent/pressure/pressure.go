package pressure

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Defaults of Policy.
const (
	// DefaultThresholdPercent leaves 5% of a GPU free (tesserav1.GPUMemoryPressurePercent).
	DefaultThresholdPercent = tesserav1.GPUMemoryPressurePercent
	// DefaultArrivalWindow is how long a newly bound pod's request stays reserved while
	// it has not reached it: long enough for an image pull and a framework's start.
	DefaultArrivalWindow = 5 * time.Minute
)

// Triggers: why a GPU is short.
const (
	// TriggerThreshold: the GPU's memory in use is above the threshold.
	TriggerThreshold = "Threshold"
	// TriggerArrival: a newly arrived pod's request, with what the others use, does not
	// fit below the threshold.
	TriggerArrival = "Arrival"
)

// Pod is a pod holding a slice of the GPU.
type Pod struct {
	UID             types.UID
	Namespace, Name string
	// RequestMiB is its slice of the GPU, LimitMiB its limit (at least the request).
	RequestMiB, LimitMiB int64
	// UsedMiB is what its processes hold on the GPU.
	UsedMiB int64
	// Arriving: bound recently and not yet at its request; the rest of its request is
	// reserved for it (Tracker sets it).
	Arriving bool
	// Terminating: the pod is being deleted; its GPU waits for it to go before the next
	// decision, as for an eviction in flight.
	Terminating bool
}

// String names the pod.
func (p Pod) String() string { return p.Namespace + "/" + p.Name }

// bursting: the pod uses more than its request, as its limit allows. A pod without a
// limit above its request (limit = request) is never a candidate, even where nothing
// holds it to its request (no MPS): it did not ask to burst.
func (p Pod) bursting() bool { return p.overMiB() > 0 && p.LimitMiB > p.RequestMiB }

// overMiB is how far the pod is above its request.
func (p Pod) overMiB() int64 { return p.UsedMiB - p.RequestMiB }

// GPU is one GPU's reading.
type GPU struct {
	UUID  string
	Index int
	// MemoryMiB is its memory; UsedMiB what NVML reports in use (every process's,
	// inside pods or not).
	MemoryMiB, UsedMiB int64
	// Pods are the pods holding a slice of it.
	Pods []Pod
}

// Policy says when a GPU is short.
type Policy struct {
	// ThresholdPercent of a GPU's memory in use makes it short (DefaultThresholdPercent
	// when 0).
	ThresholdPercent int
	// ArrivalWindow is how long a newly bound pod's request is reserved while it has not
	// reached it (DefaultArrivalWindow when 0).
	ArrivalWindow time.Duration
}

func (p Policy) thresholdPercent() int64 {
	if p.ThresholdPercent <= 0 {
		return DefaultThresholdPercent
	}
	return int64(p.ThresholdPercent)
}

func (p Policy) arrivalWindow() time.Duration {
	if p.ArrivalWindow <= 0 {
		return DefaultArrivalWindow
	}
	return p.ArrivalWindow
}

// Eviction is one decision: evict Victim from GPU.
type Eviction struct {
	GPU     GPU
	Victim  Pod
	Trigger string
	// UsedMiB is the GPU's memory in use; ReservedMiB what arriving pods still miss of
	// their requests; ThresholdMiB the use above which it is short.
	UsedMiB, ReservedMiB, ThresholdMiB int64
}

// Message says why, for the event on the victim.
func (e Eviction) Message() string {
	why := fmt.Sprintf("uses %d MiB, above the pressure threshold of %d MiB", e.UsedMiB, e.ThresholdMiB)
	if e.Trigger == TriggerArrival {
		why = fmt.Sprintf("uses %d MiB and newly bound pods still need %d MiB of their requests, above the pressure threshold of %d MiB",
			e.UsedMiB, e.ReservedMiB, e.ThresholdMiB)
	}
	v := e.Victim
	return fmt.Sprintf("GPU %d (%s, %d MiB) %s: evicting this pod, the furthest above its request: it uses %d MiB, request %d MiB, limit %d MiB "+
		"(set the limit equal to the request to never be evicted for GPU memory pressure)",
		e.GPU.Index, e.GPU.UUID, e.GPU.MemoryMiB, why, v.UsedMiB, v.RequestMiB, v.LimitMiB)
}

// Decide returns the eviction g needs, if any: when g is short, the pod furthest above
// its request relative to its request (ties: the most MiB above, then the name), among
// the pods whose limit lets them burst. None when g is not short or no such pod is above
// its request.
func (p Policy) Decide(g GPU) (Eviction, bool) {
	var podsUsed, reserved int64
	for _, pod := range g.Pods {
		podsUsed += pod.UsedMiB
		if pod.Arriving {
			reserved += max(0, pod.RequestMiB-pod.UsedMiB)
		}
	}
	e := Eviction{GPU: g, UsedMiB: max(g.UsedMiB, podsUsed), ReservedMiB: reserved, ThresholdMiB: g.MemoryMiB * p.thresholdPercent() / 100}
	switch {
	case e.UsedMiB > e.ThresholdMiB:
		e.Trigger = TriggerThreshold
	case e.UsedMiB+e.ReservedMiB > e.ThresholdMiB:
		e.Trigger = TriggerArrival
	default:
		return e, false
	}
	found := false
	for _, pod := range g.Pods {
		if pod.bursting() && (!found || furtherAbove(pod, e.Victim)) {
			e.Victim, found = pod, true
		}
	}
	return e, found
}

// furtherAbove orders candidates: the larger (used-request)/request first, then the
// more MiB above, then by name.
func furtherAbove(a, b Pod) bool {
	ra, rb := a.overMiB()*max(b.RequestMiB, 1), b.overMiB()*max(a.RequestMiB, 1)
	switch {
	case ra != rb:
		return ra > rb
	case a.overMiB() != b.overMiB():
		return a.overMiB() > b.overMiB()
	}
	return a.String() < b.String()
}

// Tracker keeps what outlives one reading: when each pod was first seen and whether it
// reached its request (arrival), and the evictions in flight.
type Tracker struct {
	Policy Policy
	seen   map[types.UID]arrival
	// evicting holds the victims until they are gone from the readings.
	evicting map[types.UID]bool
}

type arrival struct {
	first   time.Time
	reached bool
}

// Decide takes the readings of a node's GPUs at now and returns the evictions to ask
// for: at most one per GPU, none on a GPU whose last victim is still there, never a pod
// already evicted. It marks arriving pods (Pod.Arriving) itself. Evicted must be called
// for each eviction the API accepted.
func (t *Tracker) Decide(gpus []GPU, now time.Time) []Eviction {
	if t.seen == nil {
		t.seen, t.evicting = map[types.UID]arrival{}, map[types.UID]bool{}
	}
	present := map[types.UID]bool{}
	busy := map[string]bool{}
	for _, g := range gpus {
		for i := range g.Pods {
			pod := &g.Pods[i]
			if _, ok := t.evicting[pod.UID]; ok || pod.Terminating {
				busy[g.UUID] = true
			}
			a, ok := t.seen[pod.UID]
			if !ok {
				a.first = now
			}
			a.reached = a.reached || pod.UsedMiB >= pod.RequestMiB
			if !present[pod.UID] {
				t.seen[pod.UID] = a
			}
			present[pod.UID] = true
			pod.Arriving = !a.reached && now.Sub(a.first) < t.Policy.arrivalWindow()
		}
	}
	for uid := range t.seen {
		if !present[uid] {
			delete(t.seen, uid)
			delete(t.evicting, uid)
		}
	}
	var out []Eviction
	for _, g := range gpus {
		if busy[g.UUID] {
			continue // wait for the last victim to go before deciding again
		}
		candidates := g
		candidates.Pods = nil
		for _, pod := range g.Pods {
			if _, evicted := t.evicting[pod.UID]; !evicted {
				candidates.Pods = append(candidates.Pods, pod)
			}
		}
		if e, ok := t.Policy.Decide(candidates); ok {
			e.GPU = g
			out = append(out, e)
		}
	}
	return out
}

// Evicted records that the API accepted e's eviction: its GPU waits for the victim to
// go, and the victim is never chosen again.
func (t *Tracker) Evicted(e Eviction) {
	if t.evicting == nil {
		t.seen, t.evicting = map[types.UID]arrival{}, map[types.UID]bool{}
	}
	t.evicting[e.Victim.UID] = true
}
