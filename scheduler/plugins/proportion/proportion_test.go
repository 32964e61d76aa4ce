package proportion_test

import (
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/plugins/proportion"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

const gpu = framework.MilliPerGPU

// open runs the plugin over queues on a cluster of totalGPUs; each queue asks for the
// GPUs in want (its Request).
func open(totalGPUs int64, queues []*framework.Queue, want map[*framework.Queue]int64) *proportion.Proportion {
	for q, w := range want {
		q.Request.GPU = w * gpu
	}
	p := proportion.New()
	p.OnSessionOpen(&framework.Snapshot{Queues: queues, Total: framework.Resources{GPU: totalGPUs * gpu}})
	return p
}

func TestEntitlementWaterFilling(t *testing.T) {
	type qspec struct {
		weight                        int32
		deserved, capability, guarant int64
		want                          int64 // GPUs requested
		entitled                      int64 // GPUs expected
	}
	tests := []struct {
		name   string
		total  int64
		queues []qspec
	}{
		{"weights 2:1", 12, []qspec{{weight: 2, want: 100, entitled: 8}, {weight: 1, want: 100, entitled: 4}}},
		{"what one does not want goes to the other", 12, []qspec{{weight: 2, want: 2, entitled: 2}, {weight: 1, want: 100, entitled: 10}}},
		{"nobody wants everything", 12, []qspec{{weight: 1, want: 3, entitled: 3}, {weight: 1, want: 4, entitled: 4}}},
		{"three ways 3:2:1", 12, []qspec{{weight: 3, want: 100, entitled: 6}, {weight: 2, want: 100, entitled: 4}, {weight: 1, want: 100, entitled: 2}}},
		{"water fills twice", 12, []qspec{{weight: 1, want: 2, entitled: 2}, {weight: 1, want: 100, entitled: 5}, {weight: 1, want: 100, entitled: 5}}},
		{"deserved first, the rest by weight", 12, []qspec{{weight: 1, deserved: 8, want: 100, entitled: 9}, {weight: 3, want: 100, entitled: 3}}},
		{"idle deserved is lent", 12, []qspec{{weight: 1, deserved: 8, want: 1, entitled: 1}, {weight: 1, want: 100, entitled: 11}}},
		{"guarantee above deserved", 12, []qspec{{weight: 1, deserved: 2, guarant: 6, want: 100, entitled: 6 + 3}, {weight: 1, want: 100, entitled: 3}}},
		{"capability caps", 12, []qspec{{weight: 5, capability: 3, want: 100, entitled: 3}, {weight: 1, want: 100, entitled: 9}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var queues []*framework.Queue
			want := map[*framework.Queue]int64{}
			for i, s := range tc.queues {
				w := testutil.MakeQueue(string(rune('a' + i))).Weight(s.weight)
				if s.deserved > 0 {
					w.DeservedGPUs(s.deserved)
				}
				if s.capability > 0 {
					w.CapabilityGPUs(s.capability)
				}
				if s.guarant > 0 {
					w.GuaranteeGPUs(s.guarant)
				}
				q := w.Obj()
				queues = append(queues, q)
				want[q] = s.want
			}
			p := open(tc.total, queues, want)
			for i, q := range queues {
				e := p.Entitled(q)
				if e.GPU != tc.queues[i].entitled*gpu {
					t.Errorf("queue %s entitled %s GPUs, want %d", q.Name, framework.FormatGPU(e.GPU), tc.queues[i].entitled)
				}
			}
		})
	}
}

func TestHierarchy(t *testing.T) {
	parent := testutil.MakeQueue("research").Weight(1).Obj()
	a := testutil.MakeQueue("research-a").Weight(1).Parent(parent).Obj()
	b := testutil.MakeQueue("research-b").Weight(3).Parent(parent).Obj()
	prod := testutil.MakeQueue("prod").Weight(1).Obj()
	queues := []*framework.Queue{parent, a, b, prod}
	// The parent asks for what its children ask.
	p := open(16, queues, map[*framework.Queue]int64{parent: 100, a: 50, b: 50, prod: 100})
	for q, want := range map[*framework.Queue]int64{parent: 8, a: 2, b: 6, prod: 8} {
		if got := p.Entitled(q).GPU; got != want*gpu {
			t.Errorf("%s entitled %s GPUs, want %d", q.Name, framework.FormatGPU(got), want)
		}
	}
}

func TestAdmit(t *testing.T) {
	parent := testutil.MakeQueue("train").CapabilityGPUs(12).Obj()
	dev := testutil.MakeQueue("train-dev").CapabilityGPUs(10).Parent(parent).Obj()
	prod := testutil.MakeQueue("train-prod").Parent(parent).Obj()
	guarded := testutil.MakeQueue("infer").GuaranteeGPUs(4).Obj()
	queues := []*framework.Queue{parent, dev, prod, guarded}
	p := open(16, queues, map[*framework.Queue]int64{dev: 20, prod: 20})
	dev.Allocated.GPU, prod.Allocated.GPU, parent.Allocated.GPU = 8*gpu, 2*gpu, 10*gpu
	tests := []struct {
		q    *framework.Queue
		gpus int64
		msg  string
	}{
		{dev, 2, ""},
		{dev, 3, "queue train-dev at capability 8/10 GPU, job needs 3 more"},
		{prod, 2, ""},
		{prod, 3, "queue train at capability 10/12 GPU, job needs 3 more"},
		{guarded, 4, ""},
	}
	for _, tc := range tests {
		ok, msg := p.Admit(tc.q, &framework.Resources{GPU: tc.gpus * gpu, Pods: 1})
		if ok != (tc.msg == "") || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s + %d GPUs: ok=%v %q, want %q", tc.q.Name, tc.gpus, ok, msg, tc.msg)
		}
	}
	// Another queue may not take the unused guarantee: 10 held + 4 guaranteed leaves 2.
	other := testutil.MakeQueue("batch").Obj()
	queues = append(queues, other)
	p = open(16, queues, map[*framework.Queue]int64{dev: 20, prod: 20, other: 20})
	if ok, _ := p.Admit(other, &framework.Resources{GPU: 2 * gpu}); !ok {
		t.Error("2 free GPUs not admitted")
	}
	if ok, msg := p.Admit(other, &framework.Resources{GPU: 3 * gpu}); ok || !strings.Contains(msg, "guaranteed to other queues") {
		t.Errorf("guarantee lent: ok=%v %q", ok, msg)
	}
}

func TestCompareQueues(t *testing.T) {
	a := testutil.MakeQueue("a").Weight(2).Obj()
	b := testutil.MakeQueue("b").Weight(1).Obj()
	p := open(12, []*framework.Queue{a, b}, map[*framework.Queue]int64{a: 100, b: 100})
	// a holds 4 of its 8 (0.5), b 3 of its 4 (0.75): a goes first.
	a.Allocated.GPU, b.Allocated.GPU = 4*gpu, 3*gpu
	if p.CompareQueues(a, b) >= 0 || p.CompareQueues(b, a) <= 0 {
		t.Fatal("lower share does not go first")
	}
	b.Allocated.GPU = 2 * gpu
	if c := p.CompareQueues(a, b); c >= 0 {
		t.Fatalf("equal shares order by name: %d", c)
	}
}

func TestCanReclaim(t *testing.T) {
	owner := testutil.MakeQueue("owner").DeservedGPUs(8).Obj()
	borrower := testutil.MakeQueue("borrower").DeservedGPUs(8).Obj()
	locked := testutil.MakeQueue("locked").DeservedGPUs(8).NotReclaimable().Obj()
	queues := []*framework.Queue{owner, borrower, locked}
	p := open(24, queues, map[*framework.Queue]int64{owner: 8, borrower: 16, locked: 16})
	borrower.Allocated.GPU, locked.Allocated.GPU = 12*gpu, 12*gpu
	// Pods are not shared by entitlement and must not block a reclaim.
	four := framework.Resources{GPU: 4 * gpu, Pods: 1}
	tests := []struct {
		name      string
		reclaimer *framework.Queue
		req       int64
		held      int64 // owner's allocation
		victim    *framework.Queue
		freed     int64
		want      bool
	}{
		{"owner takes back its deserved", owner, 4, 4, borrower, 4, true},
		{"not beyond the reclaimer's entitlement", owner, 4, 6, borrower, 4, false},
		{"not below the victim's entitlement", owner, 4, 0, borrower, 8, false},
		{"not from a non-reclaimable queue", owner, 4, 4, locked, 4, false},
		{"not from itself", borrower, 4, 4, borrower, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			owner.Allocated = framework.Resources{GPU: tc.held * gpu}
			req := four
			req.GPU = tc.req * gpu
			freed := framework.Resources{GPU: tc.freed * gpu}
			if got := p.CanReclaim(tc.reclaimer, &req, tc.victim, &freed); got != tc.want {
				t.Fatalf("CanReclaim = %v", got)
			}
		})
	}
}
