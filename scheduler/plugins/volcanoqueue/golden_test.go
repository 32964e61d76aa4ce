package volcanoqueue

// Golden cases ported from volcano-sh/volcano (commit ed72c7c): the inputs and expected
// outcomes of its tests, restated as this package's deserved shares, admissions,
// enqueue decisions, reclaim decisions and queue order. Where a Volcano test asserts
// binds or evictions, the plugin-level answers that produce them are checked; the
// deserved shares of proportion are worked out from its water-fill by hand.
//
// Not ported:
//   - proportion_test.go TestProportion: asserts Prometheus metrics over repeated
//     sessions, with weight-0 queues (the queue webhook defaults them to 1) and
//     rdma/hca and pods resources.
//   - proportion_test.go TestEnqueueAndAllocable/case4 and capacity_test.go
//     TestEnqueueAndAllocatable/case4: closed queue state is not a plugin input here.
//   - capacity_test.go Test_capacityPlugin_OnSessionOpenWithHierarchy,
//     Test_capacityPlugin_AncestorReclaimScenarios, Test_buildHierarchicalQueueAttrs_nilSafety:
//     hierarchical queues.
//   - capacity_test.go TestCapacityPluginDRA, TestParseDRAResourceListCombinesCountAndCapacity,
//     TestSharedResourceClaimIsChargedOnce, TestJobEnqueueableChecksDRAWithoutMinResources,
//     TestJobEnqueueableAccountsDRAInqueue, TestDRAAllocatableIgnoresInqueue,
//     TestJobEnqueuedUpdatesDRAInqueueForDRAOnlyJob, TestCheckDRAAllocatable_overflowRejected: DRA.
//   - enqueue_test.go cases other than the MinResources one: they exercise the action
//     (phases, missing queues), not the queue plugin's numbers.
//   - reclaim_test.go: action-level victim selection across preemptable flags,
//     priorities and node fit.

import (
	"math"
	"reflect"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

const (
	gi = int64(1) << 30
	gb = int64(1e9)
)

var unlimited = framework.Unlimited.MilliCPU

// res is cpu in millicores, memory in bytes and GPUs in thousandths.
func res(milliCPU, memory, gpu int64) framework.Resources {
	return framework.Resources{MilliCPU: milliCPU, Memory: memory, GPU: gpu}
}

// capOf is a capability naming cpu and memory (and the GPU when gpu >= 0).
func capOf(milliCPU, memory, gpu int64) framework.Resources {
	c := framework.Unlimited.Clone()
	c.MilliCPU, c.Memory = milliCPU, memory
	if gpu >= 0 {
		c.GPU = gpu
	}
	return c
}

// q is one queue of a case; every queue has a job unless noJobs.
type q struct {
	name                            string
	weight, priority                int32
	deserved, capability, guarantee framework.Resources
	allocated, request              framework.Resources
	noJobs                          bool
}

type admitCheck struct {
	queue string
	req   framework.Resources
	want  bool
}

// enqueueStep asks Enqueueable for a job of queue with min; when it is admitted and
// commit is set, Enqueued follows, as the enqueue action does.
type enqueueStep struct {
	queue  string
	min    framework.Resources
	want   bool
	commit bool
}

type reclaimCheck struct {
	reclaimer   string
	req         framework.Resources
	victim      string
	freed       framework.Resources
	want        bool
	description string
}

type goldenCase struct {
	name   string
	mode   Mode
	total  framework.Resources
	queues []q
	// inqueue is what Enqueued reports at session open for admitted jobs not yet running.
	inqueue  map[string]framework.Resources
	deserved map[string]framework.Resources
	admit    []admitCheck
	enqueue  []enqueueStep
	reclaim  []reclaimCheck
	// order lists queues in the order CompareQueues must put them.
	order []string
}

func (c *goldenCase) build() (*framework.Snapshot, map[string]*framework.Queue) {
	s := &framework.Snapshot{Total: c.total}
	byName := map[string]*framework.Queue{}
	for _, x := range c.queues {
		fq := &framework.Queue{Name: x.name, Weight: max(x.weight, 1), Priority: x.priority, Reclaimable: true,
			Deserved: x.deserved, Capability: x.capability, Guarantee: x.guarantee,
			Allocated: x.allocated, Request: x.request}
		if fq.Capability.IsZero() {
			fq.Capability = framework.Unlimited.Clone()
		}
		s.Queues = append(s.Queues, fq)
		byName[x.name] = fq
		if !x.noJobs {
			s.Jobs = append(s.Jobs, &framework.Job{Name: x.name + "-job", Queue: fq})
		}
	}
	return s, byName
}

func TestGolden(t *testing.T) {
	// proportion_test.go TestEnqueueAndAllocable: n1, n2 of 2 cpu, 2G; q1 capability
	// 2 cpu 2G holds pod1 (1 cpu, 2G), q2 capability 3 cpu 3G holds pod2 (2 cpu, 1G).
	propEA := func(q1Request, q2Request framework.Resources) []q {
		return []q{
			{name: "q1", weight: 1, capability: capOf(2000, 2*gb, -1), allocated: res(1000, 2*gb, 0), request: q1Request},
			{name: "q2", weight: 1, capability: capOf(3000, 3*gb, -1), allocated: res(2000, 1*gb, 0), request: q2Request},
		}
	}
	// capacity_test.go TestEnqueueAndAllocatable: n1, n2 of 3 cpu, 3G; q1 deserves
	// 2 cpu 2G up to 2 cpu 2G and holds pod1 (1 cpu, 3G); q2 deserves 2 cpu 2G up to
	// 3 cpu 3G and holds pod2 (3 cpu, 1G).
	capEA := []q{
		{name: "q1", deserved: res(2000, 2*gb, 0), capability: capOf(2000, 2*gb, -1), allocated: res(1000, 3*gb, 0)},
		{name: "q2", deserved: res(2000, 2*gb, 0), capability: capOf(3000, 3*gb, -1), allocated: res(3000, 1*gb, 0)},
	}
	// Three queues of priority 5, 1 and 10, each capped at 2 cpu 4Gi, on two nodes of
	// 2 cpu 4Gi; the first holds 2 cpu 4Gi, the others each have one such pod pending.
	prioQueues := func(a, b, c string) []q {
		return []q{
			{name: a, priority: 5, capability: capOf(2000, 4*gi, -1), allocated: res(2000, 4*gi, 0), request: res(2000, 4*gi, 0)},
			{name: b, priority: 1, capability: capOf(2000, 4*gi, -1), request: res(2000, 4*gi, 0)},
			{name: c, priority: 10, capability: capOf(2000, 4*gi, -1), request: res(2000, 4*gi, 0)},
		}
	}
	third := 8 * float64(gi) / 3

	cases := []goldenCase{
		{
			name: "proportion_test.go TestEnqueueAndAllocable/case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
			mode: Proportion, total: res(4000, 4*gb, 0),
			queues:   propEA(res(2000, 2*gb, 0), res(2000, 1*gb, 0)),
			deserved: map[string]framework.Resources{"q1": res(2000, 2*gb, 0), "q2": res(2000, 1*gb, 0)},
			enqueue:  []enqueueStep{{queue: "q1", min: res(1000, 0, 0), want: true, commit: true}},
			admit:    []admitCheck{{"q1", res(1000, 0, 0), true}},
		},
		{
			name: "proportion_test.go TestEnqueueAndAllocable/case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
			mode: Proportion, total: res(4000, 4*gb, 0),
			queues:   propEA(res(1000, 2*gb, 0), res(2000, 2*gb, 0)),
			deserved: map[string]framework.Resources{"q1": res(1000, 2*gb, 0), "q2": res(2000, 2*gb, 0)},
			enqueue:  []enqueueStep{{queue: "q2", min: res(0, 1*gb, 0), want: true, commit: true}},
			admit:    []admitCheck{{"q2", res(0, 1*gb, 0), true}},
		},
		{
			name: "proportion_test.go TestEnqueueAndAllocable/case2: exceed capacity, can not enqueue",
			mode: Proportion, total: res(4000, 4*gb, 0),
			queues: propEA(res(2000, 3*gb, 0), res(2000, 1*gb, 0)),
			// q1 asks for more memory than its capability: it stays at 2 cpu 2G and
			// the 1G left over goes to nobody.
			deserved: map[string]framework.Resources{"q1": res(2000, 2*gb, 0), "q2": res(2000, 1*gb, 0)},
			enqueue:  []enqueueStep{{queue: "q1", min: res(1000, 1*gb, 0), want: false}},
		},
		{
			name: "proportion_test.go TestEnqueueAndAllocable/case3: exceed deserved, can not allocate",
			mode: Proportion, total: res(4000, 4*gb, 0),
			queues:   propEA(res(2000, 3*gb, 0), res(2000, 1*gb, 0)),
			deserved: map[string]framework.Resources{"q1": res(2000, 2*gb, 0), "q2": res(2000, 1*gb, 0)},
			admit:    []admitCheck{{"q1", res(1000, 1*gb, 0), false}},
		},
		{
			name: "proportion_test.go TestAllocate/case0: Pods are assigned according to the order of Queue Priority in which PGs are placed",
			mode: Proportion, total: res(4000, 8*gi, 0),
			queues: prioQueues("q1", "q2", "q3"),
			// Equal weights and requests: a third of the cluster each.
			deserved: map[string]framework.Resources{
				"q1": res(1333, int64(math.Round(third)), 0),
				"q2": res(1333, int64(math.Round(third)), 0),
				"q3": res(1333, int64(math.Round(third)), 0),
			},
			order: []string{"q3", "q1", "q2"},
		},
		{
			name: "proportion_test.go TestNoDoubleCountingForInqueueJobWithBindingTasks",
			mode: Proportion, total: res(4000, 8*gi, 0),
			// jobA's three 1 cpu 1Gi tasks are bound while its podgroup is still
			// Inqueue; jobB (1 cpu 1Gi) is pending.
			queues: []q{{name: "q1", weight: 1, capability: capOf(4000, 8*gi, -1), allocated: res(3000, 3*gi, 0), request: res(4000, 4*gi, 0)}},
			// jobA holds its minimum, so it reserves nothing more.
			inqueue:  map[string]framework.Resources{"q1": {}},
			deserved: map[string]framework.Resources{"q1": res(4000, 4*gi, 0)},
			enqueue:  []enqueueStep{{queue: "q1", min: res(1000, 1*gi, 0), want: true, commit: true}},
			admit:    []admitCheck{{"q1", res(1000, 1*gi, 0), true}},
		},
		{
			name: "proportion_test.go TestJobEnqueuedOnOtherPluginsReject",
			mode: Proportion, total: res(4000, 4*gb, 0),
			queues: []q{{name: "q1", weight: 1, capability: capOf(1000, 4*gb, -1), request: res(2000, 2*gb, 0)}},
			// pgA fits but another plugin refuses it, so Enqueued never follows and
			// pgB still fits.
			enqueue: []enqueueStep{
				{queue: "q1", min: res(1000, 1*gb, 0), want: true},
				{queue: "q1", min: res(1000, 1*gb, 0), want: true, commit: true},
			},
		},
		{
			name:    "enqueue_test.go TestEnqueue/pggroup cannot enqueue because queue resources are less than podgroup MinResources",
			mode:    Proportion,
			queues:  []q{{name: "c1", weight: 1, capability: capOf(1000, 1*gb, -1)}},
			enqueue: []enqueueStep{{queue: "c1", min: res(8000, 8*gb, 0), want: false}},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case0: Pod allocatable when queue has not exceed capability",
			mode: Capacity, total: res(4000, 8*gi, 0),
			queues:   []q{{name: "q1", capability: capOf(2000, 2*gi, -1), allocated: res(1000, 1*gi, 0)}},
			deserved: map[string]framework.Resources{"q1": {}},
			admit:    []admitCheck{{"q1", res(1000, 1*gi, 0), true}},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case1: Pod not allocatable when queue exceed queue capability",
			mode: Capacity, total: res(4000, 8*gi, 0),
			queues: []q{{name: "q2", capability: capOf(1500, 3*gi/2, -1), allocated: res(1000, 1*gi, 0)}},
			admit:  []admitCheck{{"q2", res(1000, 1*gi, 0), false}},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case2: Can reclaim from other queues when allocated < deserved",
			mode: Capacity, total: res(4000, 8*gi, 0),
			queues: []q{
				{name: "q3", deserved: res(2000, 4*gi, 0), allocated: res(4000, 8*gi, 0)},
				{name: "q4", deserved: res(2000, 4*gi, 0)},
			},
			deserved: map[string]framework.Resources{"q3": res(2000, 4*gi, 0), "q4": res(2000, 4*gi, 0)},
			admit:    []admitCheck{{"q4", res(2000, 4*gi, 0), true}},
			reclaim:  []reclaimCheck{{"q4", res(2000, 4*gi, 0), "q3", res(2000, 4*gi, 0), true, "p6 is evicted for p7"}},
			order:    []string{"q4", "q3"},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not request CPU & Memory, reclaim should happen",
			mode: Capacity, total: res(4000, 8*gi, 20000),
			queues: []q{
				{name: "q5", deserved: res(2000, 4*gi, 10000), allocated: res(0, 0, 20000)},
				{name: "q6", deserved: res(2000, 4*gi, 10000), allocated: res(4000, 8*gi, 0)},
			},
			deserved: map[string]framework.Resources{"q5": res(2000, 4*gi, 10000), "q6": res(2000, 4*gi, 10000)},
			reclaim:  []reclaimCheck{{"q6", res(0, 0, 10000), "q5", res(0, 0, 10000), true, "p9 is evicted for p12"}},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case4: Pods are assigned according to the order of Queue Priority in which PGs are placed",
			mode: Capacity, total: res(4000, 8*gi, 0),
			queues: prioQueues("q7", "q8", "q9"),
			admit:  []admitCheck{{"q9", res(2000, 4*gi, 0), true}},
			reclaim: []reclaimCheck{
				{"q8", res(2000, 4*gi, 0), "q7", res(2000, 4*gi, 0), false, "q8 deserves nothing, so p14 reclaims nothing"},
			},
			order: []string{"q9", "q7", "q8"},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case5: Can reclaim from other queues when allocated + req <= deserved on one dimension",
			mode: Capacity, total: res(2000, 4*gi, 0),
			queues: []q{
				{name: "q10", deserved: res(2000, 2*gi, 0), capability: capOf(4000, 4*gi, -1), allocated: res(1000, 3*gi, 0)},
				{name: "q11", capability: capOf(2000, 2*gi, -1), allocated: res(1000, 1*gi, 0)},
			},
			deserved: map[string]framework.Resources{"q10": res(2000, 2*gi, 0), "q11": {}},
			reclaim:  []reclaimCheck{{"q10", res(1000, 1*gi, 0), "q11", res(1000, 1*gi, 0), true, "p18 is evicted for p17"}},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case6: Can not reclaim from other queues when allocated + req > deserved",
			mode: Capacity, total: res(2000, 4*gi, 0),
			queues: []q{
				{name: "q12", deserved: res(1000, 2*gi, 0), capability: capOf(4000, 4*gi, -1), allocated: res(1000, 1*gi, 0)},
				{name: "q13", capability: capOf(2000, 2*gi, -1), allocated: res(1000, 1*gi, 0)},
			},
			reclaim: []reclaimCheck{{"q12", res(1000, 2*gi, 0), "q13", res(1000, 1*gi, 0), false, "p20 evicts nothing"}},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim",
			mode: Capacity, total: res(4000, 8*gi, 4000),
			queues: []q{
				{name: "queue14", deserved: res(2000, 4*gi, 2000), allocated: res(2000, 4*gi, 0)},
				{name: "queue15", allocated: res(0, 0, 1000)},
				{name: "queue16", deserved: res(2000, 4*gi, 2000), allocated: res(2000, 1*gi, 1000)},
			},
			// p23 alone may be taken but frees no cpu, so p25 still does not fit and
			// nothing is evicted; p22 may not be taken.
			reclaim: []reclaimCheck{
				{"queue16", res(2000, 3*gi, 1000), "queue14", res(2000, 4*gi, 0), false, "p22 is within its queue's deserved share"},
				{"queue16", res(2000, 3*gi, 1000), "queue15", res(0, 0, 1000), true, "p23's queue deserves nothing"},
			},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case8: reclaimer dimensions are considered properly while evicting reclaimees",
			mode: Capacity, total: res(4000, 8*gi, 1000),
			queues: []q{
				{name: "queue17", deserved: res(2000, 2*gi, 0), allocated: res(1000, 4*gi, 1000)},
				{name: "queue18", deserved: res(2000, 4*gi, 1000), allocated: res(2000, 4*gi, 0)},
			},
			reclaim: []reclaimCheck{
				{"queue18", res(1000, 0, 1000), "queue17", res(0, 4*gi, 0), false, "p26 frees only memory, which p30 does not ask for"},
				{"queue18", res(1000, 0, 1000), "queue17", res(1000, 0, 0), false, "p27 frees cpu, which queue17 holds within its deserved share"},
				{"queue18", res(1000, 0, 1000), "queue17", res(0, 0, 1000), true, "p28 frees a GPU, which queue17 does not deserve"},
			},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory",
			mode: Capacity, total: res(4000, 8*gi, 1000),
			queues: []q{
				{name: "queue19", deserved: res(0, 0, 1000), allocated: res(4000, 4*gi, 1000)},
				{name: "queue20", deserved: res(2000, 2*gi, 0)},
			},
			reclaim: []reclaimCheck{
				{"queue20", res(1000, 1*gi, 0), "queue19", res(4000, 4*gi, 1000), false, "p31 holds no more GPU than queue19 deserves"},
			},
		},
		{
			name: "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed capability",
			mode: Capacity, total: res(16000, 200*gi, 0),
			queues: []q{
				{name: "queue21", deserved: res(8000, 100*gi, 0), capability: capOf(8000, 100*gi, -1), allocated: res(7000, 90*gi, 0)},
				{name: "queue22", capability: capOf(2000, 5*gi, -1), allocated: res(2000, 5*gi, 0)},
			},
			admit:   []admitCheck{{"queue21", res(2000, 5*gi, 0), false}},
			reclaim: []reclaimCheck{{"queue21", res(2000, 5*gi, 0), "queue22", res(2000, 5*gi, 0), false, "p34 would take queue21 past its capability"}},
		},
		{
			name: "capacity_test.go TestEnqueueAndAllocatable/case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
			mode: Capacity, total: res(6000, 6*gb, 0),
			queues:   capEA,
			deserved: map[string]framework.Resources{"q1": res(2000, 2*gb, 0), "q2": res(2000, 2*gb, 0)},
			enqueue:  []enqueueStep{{queue: "q1", min: res(1000, 0, 0), want: true, commit: true}},
			admit:    []admitCheck{{"q1", res(1000, 0, 0), true}},
		},
		{
			name: "capacity_test.go TestEnqueueAndAllocatable/case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
			mode: Capacity, total: res(6000, 6*gb, 0),
			queues:  capEA,
			enqueue: []enqueueStep{{queue: "q2", min: res(0, 1*gb, 0), want: true, commit: true}},
			admit:   []admitCheck{{"q2", res(0, 1*gb, 0), true}},
		},
		{
			name: "capacity_test.go TestEnqueueAndAllocatable/case2: exceed capacity, can not enqueue",
			mode: Capacity, total: res(6000, 6*gb, 0),
			queues:  capEA,
			enqueue: []enqueueStep{{queue: "q1", min: res(1000, 1*gb, 0), want: false}},
		},
		{
			name: "capacity_test.go TestNoDoubleCountingForInqueueJobWithBindingTasks",
			mode: Capacity, total: res(4000, 8*gi, 0),
			queues:  []q{{name: "q1", capability: capOf(4000, 8*gi, -1), allocated: res(3000, 3*gi, 0)}},
			inqueue: map[string]framework.Resources{"q1": {}},
			enqueue: []enqueueStep{{queue: "q1", min: res(1000, 1*gi, 0), want: true, commit: true}},
			admit:   []admitCheck{{"q1", res(1000, 1*gi, 0), true}},
		},
		{
			name: "capacity_test.go TestJobEnqueuedOnOtherPluginsReject",
			mode: Capacity, total: res(4000, 4*gb, 0),
			queues: []q{{name: "q1", capability: capOf(1000, 4*gb, -1)}},
			enqueue: []enqueueStep{
				{queue: "q1", min: res(1000, 1*gb, 0), want: true},
				{queue: "q1", min: res(1000, 1*gb, 0), want: true, commit: true},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, byName := c.build()
			p := New(c.mode)
			p.OnSessionOpen(s)
			for name, want := range c.deserved {
				if got, _ := p.Share(byName[name]); !reflect.DeepEqual(got, want) {
					t.Errorf("deserved of %s = %+v, want %+v", name, got, want)
				}
			}
			for _, a := range c.admit {
				if got, msg := p.Admit(byName[a.queue], &a.req); got != a.want {
					t.Errorf("Admit(%s, %+v) = %v (%s), want %v", a.queue, a.req, got, msg, a.want)
				}
			}
			for name, need := range c.inqueue {
				p.Enqueued(&framework.Job{Queue: byName[name]}, &need)
			}
			for i, e := range c.enqueue {
				j := &framework.Job{Queue: byName[e.queue]}
				got, msg := p.Enqueueable(j, &e.min)
				if got != e.want {
					t.Errorf("step %d: Enqueueable(%s, %+v) = %v (%s), want %v", i, e.queue, e.min, got, msg, e.want)
				}
				if got && e.commit {
					p.Enqueued(j, &e.min)
				}
			}
			for _, r := range c.reclaim {
				if got := p.CanReclaim(byName[r.reclaimer], &r.req, byName[r.victim], &r.freed); got != r.want {
					t.Errorf("CanReclaim(%s for %+v, from %s freeing %+v) = %v, want %v (%s)",
						r.reclaimer, r.req, r.victim, r.freed, got, r.want, r.description)
				}
			}
			for i := 1; i < len(c.order); i++ {
				a, b := byName[c.order[i-1]], byName[c.order[i]]
				if p.CompareQueues(a, b) >= 0 || p.CompareQueues(b, a) <= 0 {
					t.Errorf("queue %s must go before %s", a.Name, b.Name)
				}
			}
		})
	}
}

// TestGoldenShare ports capacity_test.go Test_updateQueueAttrShare: a queue's share
// is its largest allocated/deserved ratio over the resources it deserves some of, and
// 1 for a best-effort queue (one that deserves nothing). Requests never count.
func TestGoldenShare(t *testing.T) {
	cases := []struct {
		name                string
		deserved, allocated framework.Resources
		want                float64
	}{
		{"best-effort queue with allocated resources", res(0, 0, 0), res(1000, 1*gi, 0), 1},
		{"best-effort queue with pending requests only (no allocated)", res(0, 0, 0), res(0, 0, 0), 1},
		{"best-effort queue with both allocated and request", res(0, 0, 0), res(1000, 1*gi, 0), 1},
		{"best-effort queue completely idle", res(0, 0, 0), res(0, 0, 0), 1},
		{"queue with deserved but no allocated", res(2000, 2*gi, 0), res(0, 0, 0), 0},
		{"queue with deserved, allocated < deserved (CPU dimension)", res(2000, 2*gi, 0), res(1000, 1*gi, 0), 0.5},
		{"queue with deserved, allocated = deserved", res(2000, 2*gi, 0), res(2000, 2*gi, 0), 1},
		{"queue with deserved, allocated > deserved (CPU dimension)", res(2000, 2*gi, 0), res(3000, 2*gi, 0), 1.5},
		{"queue with deserved, memory is dominant resource", res(2000, 4*gi, 0), res(1000, 3*gi, 0), 0.75},
		{"queue with deserved, CPU is dominant resource", res(2000, 4*gi, 0), res(1500, 2*gi, 0), 0.75},
		{"queue with deserved, allocated exceeds on both dimensions", res(2000, 2*gi, 0), res(3000, 3*gi, 0), 1.5},
		{"queue with deserved, request should not affect share calculation", res(2000, 2*gi, 0), res(1000, 1*gi, 0), 0.5},
		{"queue with deserved but zero values", res(0, 0, 0), res(1000, 1*gi, 0), 1},
		{"queue with deserved, allocated is zero", res(2000, 2*gi, 0), res(0, 0, 0), 0},
		{"best-effort queue with only CPU allocated", res(0, 0, 0), res(1000, 0, 0), 1},
		{"best-effort queue with only memory allocated", res(0, 0, 0), res(0, 1*gi, 0), 1},
		{"best-effort queue with only CPU request (no allocated)", res(0, 0, 0), res(0, 0, 0), 1},
	}
	for _, c := range cases {
		t.Run("capacity_test.go Test_updateQueueAttrShare/"+c.name, func(t *testing.T) {
			fq := &framework.Queue{Name: "test-queue", Weight: 1, Deserved: c.deserved, Capability: framework.Unlimited.Clone(), Allocated: c.allocated}
			p := New(Capacity)
			p.OnSessionOpen(&framework.Snapshot{Queues: []*framework.Queue{fq}, Total: res(unlimited, unlimited, unlimited)})
			if got := p.share(fq); got != c.want {
				t.Errorf("share = %v, want %v", got, c.want)
			}
		})
	}
}
