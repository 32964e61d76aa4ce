package failpoint

// Point names one step of a component where a fault is injected.
type Point string

// The fault points. Each is reached in every build; only a `faults` build can fire one.
const (
	// SchedulerBound: a pod's Binding was written; of a gang, others may not be yet
	// (error: the API server's answer was lost).
	SchedulerBound Point = "scheduler/bound"
	// SchedulerClaimsAllocated: a pod's resource claims were allocated, its bind is not
	// written yet.
	SchedulerClaimsAllocated Point = "scheduler/claims-allocated"
	// SchedulerEvicted: a victim was evicted; the preemptor binds in a later session
	// (error: the API server's answer was lost).
	SchedulerEvicted Point = "scheduler/evicted"
	// SchedulerReserved: a session ended holding nodes reserved for a starving gang.
	SchedulerReserved Point = "scheduler/reserved"
	// SchedulerUnschedulable: a pending pod's PodScheduled=False condition (what Cluster
	// Autoscaler and Karpenter read to scale up) is about to be written.
	SchedulerUnschedulable Point = "scheduler/unschedulable"
	// WebhookReview: the admission webhook received a review (error: it answers with an
	// error; sleep: it answers late, past the API server's timeout).
	WebhookReview Point = "webhook/review"
	// AutoscalerCordoned: a scale-down candidate was cordoned, none of its pods evicted.
	AutoscalerCordoned Point = "autoscaler/cordoned"
	// AutoscalerDrained: the node's pods are gone, its Machine not marked yet.
	AutoscalerDrained Point = "autoscaler/drained"
	// AutoscalerMachineMarked: the node's Machine is marked for deletion, the
	// MachineDeployment not lowered yet.
	AutoscalerMachineMarked Point = "autoscaler/machine-marked"
	// AutoscalerLowered: the MachineDeployment was lowered, the node's state not written.
	AutoscalerLowered Point = "autoscaler/lowered"
	// NodeAgentPrepare: the DRA plugin was asked to prepare a claim, before its CDI spec.
	NodeAgentPrepare Point = "node-agent/prepare"
	// NodeAgentPublishGPUNode: the agent is about to write its GPUNode.
	NodeAgentPublishGPUNode Point = "node-agent/publish-gpunode"
	// NodeAgentPublishSlices: the agent is about to publish its ResourceSlices (each
	// sample; a pool that did not change is not written again).
	NodeAgentPublishSlices Point = "node-agent/publish-resourceslices"
	// NodeAgentSample: the agent is sampling GPU usage for right-sizing and idle reclaim.
	NodeAgentSample Point = "node-agent/sample"
)

// CrashStatus is the exit status of a process a crash action ended.
const CrashStatus = 86

// Stats are what a point saw: how often it was reached and how often it fired, and the
// action armed now ("" when none).
type Stats struct {
	Reached int    `json:"reached"`
	Fired   int    `json:"fired"`
	Action  string `json:"action,omitempty"`
}

// Points is every fault point, in the order of the list above.
var Points = []Point{
	SchedulerBound, SchedulerClaimsAllocated, SchedulerEvicted, SchedulerReserved, SchedulerUnschedulable,
	WebhookReview,
	AutoscalerCordoned, AutoscalerDrained, AutoscalerMachineMarked, AutoscalerLowered,
	NodeAgentPrepare, NodeAgentPublishGPUNode, NodeAgentPublishSlices, NodeAgentSample,
}

// Component is the binary a point lives in: scheduler, webhook, autoscaler or node-agent.
func (p Point) Component() string {
	for i := range len(p) {
		if p[i] == '/' {
			return string(p[:i])
		}
	}
	return string(p)
}
