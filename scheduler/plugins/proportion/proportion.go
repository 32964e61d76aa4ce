package proportion

import (
	"cmp"

	"fmt"
	"math"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "proportion"

// Proportion is the queue-share plugin. OnSessionOpen computes each queue's entitlement.
type Proportion struct {
	total    framework.Resources
	entitled map[*framework.Queue]*framework.Resources
	deserved map[*framework.Queue]*framework.Resources
	queues   []*framework.Queue
}

var (
	_ framework.QueueOrder       = (*Proportion)(nil)
	_ framework.QueueAdmission   = (*Proportion)(nil)
	_ framework.ReclaimPolicy    = (*Proportion)(nil)
	_ framework.SnapshotObserver = (*Proportion)(nil)
	_ framework.QueueShares      = (*Proportion)(nil)
)

// New returns the plugin.
func New() *Proportion { return &Proportion{} }

// Name implements framework.Plugin.
func (*Proportion) Name() string { return Name }

// OnSessionOpen implements framework.SnapshotObserver.
func (p *Proportion) OnSessionOpen(s *framework.Snapshot) {
	p.total = s.Total.Clone()
	p.queues = s.Queues
	p.entitled = make(map[*framework.Queue]*framework.Resources, len(s.Queues))
	p.deserved = make(map[*framework.Queue]*framework.Resources, len(s.Queues))
	var roots []*framework.Queue
	for _, q := range s.Queues {
		if q.Parent == nil {
			roots = append(roots, q)
		}
	}
	p.divide(roots, p.total)
}

// Entitled is what the queue may hold under contention.
func (p *Proportion) Entitled(q *framework.Queue) framework.Resources {
	if e := p.entitled[q]; e != nil {
		return *e
	}
	return framework.Resources{}
}

// Share implements framework.QueueShares.
func (p *Proportion) Share(q *framework.Queue) (deserved, entitled framework.Resources) {
	if d := p.deserved[q]; d != nil {
		deserved = *d
	}
	return deserved, p.Entitled(q)
}

// divide splits capacity among sibling queues, then recurses into their children.
func (p *Proportion) divide(siblings []*framework.Queue, capacity framework.Resources) {
	if len(siblings) == 0 {
		return
	}
	type dim struct {
		get func(*framework.Resources) *int64
	}
	dims := []dim{
		{func(r *framework.Resources) *int64 { return &r.MilliCPU }},
		{func(r *framework.Resources) *int64 { return &r.Memory }},
		{func(r *framework.Resources) *int64 { return &r.GPU }},
	}
	for _, q := range siblings {
		p.entitled[q], p.deserved[q] = &framework.Resources{}, &framework.Resources{}
	}
	for _, d := range dims {
		left := *d.get(&capacity)
		// want is what the queue can use: its request, capped by capability.
		want := map[*framework.Queue]int64{}
		for _, q := range siblings {
			w := *d.get(&q.Request)
			if c := *d.get(&q.Capability); c > 0 && c < w {
				w = c
			}
			if q.Unqueued {
				w = 0 // what no queue takes is borrowed, whatever is free
			}
			want[q] = w
			// Explicit deserved (and guarantee) come first, up to what is wanted.
			base := *d.get(&q.Deserved)
			if g := *d.get(&q.Guarantee); g > base {
				base = g
			}
			base = min(base, w)
			*d.get(p.entitled[q]), *d.get(p.deserved[q]) = base, base
			left -= base
		}
		// Water-fill the rest by weight among queues that want more.
		for left > 0 {
			var weights int64
			for _, q := range siblings {
				if *d.get(p.entitled[q]) < want[q] {
					weights += int64(max(q.Weight, 1))
				}
			}
			if weights == 0 {
				break
			}
			given := int64(0)
			for _, q := range siblings {
				e := d.get(p.entitled[q])
				if *e >= want[q] {
					continue
				}
				share := max(left*int64(max(q.Weight, 1))/weights, 1)
				add := min(share, want[q]-*e, left-given)
				*e += add
				given += add
				if given >= left {
					break
				}
			}
			if given == 0 {
				break
			}
			left -= given
		}
	}
	for _, q := range siblings {
		if len(q.Children) > 0 {
			p.divide(q.Children, *p.entitled[q])
		}
	}
}

// share is the queue's dominant share of its entitlement.
func (p *Proportion) share(q *framework.Queue) float64 {
	e := p.entitled[q]
	if e == nil {
		return math.Inf(1)
	}
	s := 0.0
	for _, pair := range [][2]int64{{q.Allocated.MilliCPU, e.MilliCPU}, {q.Allocated.Memory, e.Memory}, {q.Allocated.GPU, e.GPU}} {
		switch {
		case pair[1] > 0:
			s = math.Max(s, float64(pair[0])/float64(pair[1]))
		case pair[0] > 0:
			s = math.Max(s, 1+float64(pair[0])) // holds what it is not entitled to
		}
	}
	return s
}

// CompareQueues implements framework.QueueOrder.
func (p *Proportion) CompareQueues(a, b *framework.Queue) int {
	if c := cmp.Compare(p.share(a), p.share(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// Admit implements framework.QueueAdmission: capability of the queue and its parents,
// and the guarantees of other queues.
func (p *Proportion) Admit(q *framework.Queue, req *framework.Resources) (bool, string) {
	for _, a := range q.Ancestors() {
		if ok, res := req.FitsCapability(&a.Allocated, &a.Capability); !ok {
			return false, fmt.Sprintf("queue %s at capability %s/%s %s, job needs %s more",
				a.Name, framework.FormatDim(res, &a.Allocated), framework.FormatDim(res, &a.Capability), framework.UnitOf(res), framework.FormatDim(res, req))
		}
	}
	// Capacity guaranteed to other queues and not used by them is not available.
	reserved := framework.Resources{}
	used := framework.Resources{}
	for _, o := range p.queues {
		if o.Parent != nil {
			continue
		}
		used.Add(&o.Allocated)
		if o == q || isAncestor(o, q) {
			continue
		}
		g := o.Guarantee
		unused := framework.Resources{MilliCPU: max(0, g.MilliCPU-o.Allocated.MilliCPU), Memory: max(0, g.Memory-o.Allocated.Memory), GPU: max(0, g.GPU-o.Allocated.GPU)}
		reserved.Add(&unused)
	}
	used.Add(&reserved)
	limit := p.total
	if ok, res := req.FitsIn(&used, &limit); !ok && reserved.Get(res) > 0 {
		return false, fmt.Sprintf("the free %s is guaranteed to other queues", res)
	}
	return true, ""
}

func isAncestor(a, q *framework.Queue) bool {
	for x := q.Parent; x != nil; x = x.Parent {
		if x == a {
			return true
		}
	}
	return false
}

// CanReclaim implements framework.ReclaimPolicy: the reclaimer must stay within its
// entitlement after taking req, and the victim's queue must stay at or above its own.
func (p *Proportion) CanReclaim(reclaimer *framework.Queue, req *framework.Resources, victim *framework.Queue, freed *framework.Resources) bool {
	if !victim.Reclaimable || victim == reclaimer {
		return false
	}
	after := reclaimer.Allocated.Clone()
	after.Add(req)
	e := p.Entitled(reclaimer)
	// Entitlements cover the shared dimensions (cpu, memory, GPU) only.
	if after.MilliCPU > e.MilliCPU || after.Memory > e.Memory || after.GPU > e.GPU {
		return false
	}
	left := victim.Allocated.Clone()
	left.Sub(freed)
	ve := p.Entitled(victim)
	// The victim must hold more than its entitlement in a dimension the reclaimer needs.
	return (req.GPU > 0 && left.GPU >= ve.GPU) || (req.GPU == 0 && left.MilliCPU >= ve.MilliCPU && left.Memory >= ve.Memory)
}
