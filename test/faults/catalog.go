package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tessera-gpu/tessera/internal/failpoint"
)

// Fault is one injection: a fault point and what happens there. A point is a failpoint
// of a Tessera component (internal/failpoint) or a process of the control plane
// ("process/etcd", ...).
type Fault struct {
	Point  string
	Action string
}

func (f Fault) String() string { return f.Point + "=" + f.Action }

// The process fault points: a control-plane process killed (SIGKILL) and started again.
const (
	KillAPIServer        = "process/kube-apiserver"
	KillEtcd             = "process/etcd"
	KillWebhook          = "process/webhook"
	KillSchedulerLeader  = "process/scheduler-leader"
	KillAutoscalerLeader = "process/autoscaler-leader"
	KillNodeAgent        = "process/node-agent"
)

// actions are the actions a schedule picks from at each point.
var actions = map[string][]string{
	string(failpoint.SchedulerBound):           {"1*crash", "3*error"},
	string(failpoint.SchedulerClaimsAllocated): {"1*crash", "3*error"},
	string(failpoint.SchedulerEvicted):         {"1*crash", "2*error"},
	string(failpoint.SchedulerReserved):        {"1*crash", "3*error"},
	string(failpoint.SchedulerUnschedulable):   {"1*crash", "5*error"},
	string(failpoint.WebhookReview):            {"1*crash", "5*error", "1*sleep(12s)"},
	string(failpoint.AutoscalerCordoned):       {"1*crash", "3*error"},
	string(failpoint.AutoscalerDrained):        {"1*crash", "3*error"},
	string(failpoint.AutoscalerMachineMarked):  {"1*crash", "3*error"},
	string(failpoint.AutoscalerLowered):        {"1*crash", "3*error"},
	string(failpoint.NodeAgentPrepare):         {"1*crash", "3*error"},
	string(failpoint.NodeAgentPublishGPUNode):  {"1*crash", "3*error"},
	string(failpoint.NodeAgentPublishSlices):   {"1*crash", "3*error"},
	string(failpoint.NodeAgentSample):          {"1*crash", "3*error"},
	KillAPIServer:                              {"kill(1s)", "kill(4s)"},
	KillEtcd:                                   {"kill(1s)", "kill(4s)"},
	KillWebhook:                                {"kill(2s)", "kill(6s)"},
	KillSchedulerLeader:                        {"kill"},
	KillAutoscalerLeader:                       {"kill"},
	KillNodeAgent:                              {"kill(1s)", "kill(4s)"},
}

// Points is every fault point of the catalog: Tessera's failpoints, then the processes.
func Points() []string {
	var out []string
	for _, p := range failpoint.Points {
		out = append(out, string(p))
	}
	return append(out, KillAPIServer, KillEtcd, KillWebhook, KillSchedulerLeader, KillAutoscalerLeader, KillNodeAgent)
}

// Schedule is seed's faults: every point once, in an order and with actions the seed
// draws.
func Schedule(seed uint64) []Fault {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	points := Points()
	rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
	out := make([]Fault, len(points))
	for i, p := range points {
		acts := actions[p]
		out[i] = Fault{Point: p, Action: acts[rng.IntN(len(acts))]}
	}
	return out
}

// ParsePoints reads a comma-separated list of fault points ($FAULT_POINTS), each one of
// Points.
func ParsePoints(spec string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(Points(), p) {
			return nil, fmt.Errorf("FAULT_POINTS: unknown fault point %q; the points are %s", p, strings.Join(Points(), ", "))
		}
		out = append(out, p)
	}
	return out, nil
}
