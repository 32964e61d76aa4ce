package framework

import (
	"fmt"
	"sort"
	"strings"
)

// Reason codes say, machine-readably, why a job is pending.
const (
	ReasonNotEnqueued     = "NotEnqueued"             // queue capability or minResources keep the job out
	ReasonQueueCapability = "QueueCapabilityExceeded" // admitting more would exceed a queue's capability
	ReasonUnschedulable   = "Unschedulable"           // no node fits a task
	ReasonGangIncomplete  = "GangIncomplete"          // fewer than minMember tasks fit together
	ReasonTopology        = "TopologyUnsatisfied"     // no single topology domain fits the gang
	ReasonWaitingInLine   = "WaitingInLine"           // a job ahead in the queue holds the capacity
	ReasonReserved        = "NodesReserved"           // capacity is reserved for a starving gang
	ReasonEvicted         = "Evicted"                 // preempted or reclaimed in this session
	ReasonQueueNotFound   = "QueueNotFound"           // the job names a queue that does not exist
	ReasonQueueRefused    = "QueueRefused"            // the job's queue does not take its namespace or priority class
	ReasonGangSizeUnknown = "GangSizeUnknown"         // the gang's size is not known yet (its sizing object or declared size is missing)
	ReasonGangPodsMissing = "GangPodsMissing"         // fewer pods exist than the gang's minMember: its controller has not made them yet
	ReasonClusterTooSmall = "ClusterTooSmall"         // the gang needs more GPUs than every node of the cluster has together
)

// NodesWouldHelp reports whether more nodes could let a job pending for reason code
// run: it waits for room, not for its queue's capability, its admission, its
// controller or its eviction. Pods pending for such a reason are what cluster
// autoscalers provision nodes for (PodScheduled False, reason Unschedulable).
func NodesWouldHelp(code string) bool {
	switch code {
	case ReasonUnschedulable, ReasonGangIncomplete, ReasonTopology, ReasonWaitingInLine, ReasonReserved, ReasonClusterTooSmall:
		return true
	}
	return false
}

// Reason is why a job is pending: a code and a message for people.
type Reason struct {
	Code    string
	Message string
}

func (r *Reason) String() string { return r.Code + ": " + r.Message }

// FitCode is why one node cannot take one task; FitOK when it can.
type FitCode uint8

// Node fit failures, counted per session to explain a pending task.
const (
	FitOK FitCode = iota
	FitUnschedulable
	FitTaint
	FitNodeSelector
	FitCPU
	FitMemory
	FitPods
	FitScalar
	FitGPUModel
	FitGPUCount
	FitGPUMemory
	FitReserved
	FitTopology
	FitGPUDevice
	numFitCodes
)

var fitText = [numFitCodes]string{
	FitOK:            "fit",
	FitUnschedulable: "node(s) were unschedulable",
	FitTaint:         "node(s) had untolerated taints",
	FitNodeSelector:  "node(s) didn't match the node selector or affinity",
	FitCPU:           "insufficient cpu",
	FitMemory:        "insufficient memory",
	FitPods:          "too many pods",
	FitScalar:        "insufficient extended resources",
	FitGPUModel:      "node(s) had no GPU of the requested model",
	FitGPUCount:      "insufficient free whole GPUs",
	FitGPUMemory:     "no single GPU with enough free memory",
	FitReserved:      "node(s) reserved for a waiting gang",
	FitTopology:      "node(s) outside the gang's topology domain",
	FitGPUDevice:     "node(s) had no GPU published as a device that the pod's resource claims accept",
}

func (c FitCode) String() string { return fitText[c] }

// FitStats counts node fit failures by code, as kube-scheduler's "0/N nodes are available".
type FitStats struct {
	Nodes  int
	Counts [numFitCodes]int
}

// Add records one node's outcome.
func (s *FitStats) Add(c FitCode) {
	s.Nodes++
	s.Counts[c]++
}

// String renders "0/5000 nodes fit: 4000 insufficient free whole GPUs, 1000 node(s) had untolerated taints".
func (s *FitStats) String() string {
	type kv struct {
		c FitCode
		n int
	}
	var parts []kv
	for c := FitUnschedulable; c < numFitCodes; c++ {
		if s.Counts[c] > 0 {
			parts = append(parts, kv{c, s.Counts[c]})
		}
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].n > parts[j].n })
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, fmt.Sprintf("%d %s", p.n, p.c))
	}
	return fmt.Sprintf("%d/%d nodes fit: %s", s.Counts[FitOK], s.Nodes, strings.Join(out, ", "))
}
