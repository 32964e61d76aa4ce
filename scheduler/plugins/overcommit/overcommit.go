package overcommit

import (
	"fmt"
	"strconv"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "overcommit"

// FactorArgument is the argument that sets the factor, as Volcano spells it.
const FactorArgument = "overcommit-factor"

// DefaultFactor is Volcano's default overcommit factor.
const DefaultFactor = 1.2

// Overcommit is the enqueue gate.
type Overcommit struct {
	Factor float64
	// idle is Factor times the cluster less what is in use; inqueue what admitted jobs
	// that do not run yet need.
	idle, inqueue framework.Resources
}

var (
	_ framework.EnqueueGate      = (*Overcommit)(nil)
	_ framework.SnapshotObserver = (*Overcommit)(nil)
)

// New returns the plugin with Volcano's default factor.
func New() *Overcommit { return &Overcommit{Factor: DefaultFactor} }

// Name implements framework.Plugin.
func (*Overcommit) Name() string { return Name }

// Configure reads overcommit-factor; Volcano falls back to its default below 1, this
// refuses it.
func (o *Overcommit) Configure(args map[string]string) error {
	for k, v := range args {
		if k != FactorArgument {
			return fmt.Errorf("unknown argument %q; known: %s", k, FactorArgument)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 {
			return fmt.Errorf("%s: %q is not a number of at least 1 (Volcano's default is %g)", k, v, DefaultFactor)
		}
		o.Factor = f
	}
	return nil
}

// OnSessionOpen implements framework.SnapshotObserver.
func (o *Overcommit) OnSessionOpen(s *framework.Snapshot) {
	var used framework.Resources
	for _, n := range s.Nodes {
		used.Add(&n.Used)
	}
	scale := func(v int64) int64 { return int64(float64(v) * o.Factor) }
	o.idle = framework.Resources{MilliCPU: scale(s.Total.MilliCPU) - used.MilliCPU, Memory: scale(s.Total.Memory) - used.Memory,
		GPU: scale(s.Total.GPU) - used.GPU}
	o.inqueue = framework.Resources{}
}

// Enqueueable implements framework.EnqueueGate.
func (o *Overcommit) Enqueueable(j *framework.Job, min *framework.Resources) (bool, string) {
	req := framework.Resources{MilliCPU: min.MilliCPU, Memory: min.Memory, GPU: min.GPU}
	if ok, res := req.FitsIn(&o.inqueue, &o.idle); !ok {
		return false, fmt.Sprintf("the cluster is overcommitted in %s: admitted gangs that do not run yet need %s of the %s that %g times the cluster leaves free, this one %s more",
			res, framework.FormatDim(res, &o.inqueue), framework.FormatDim(res, &o.idle), o.Factor, framework.FormatDim(res, &req))
	}
	return true, ""
}

// Enqueued implements framework.EnqueueGate.
func (o *Overcommit) Enqueued(_ *framework.Job, need *framework.Resources) {
	o.inqueue.MilliCPU += need.MilliCPU
	o.inqueue.Memory += need.Memory
	o.inqueue.GPU += need.GPU
}
