package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// TaskStatus is where a task is in its life, as the scheduler sees it.
type TaskStatus uint8

// Task statuses.
const (
	// TaskPending waits for a node.
	TaskPending TaskStatus = iota
	// TaskAllocated is placed in this session; not yet committed.
	TaskAllocated
	// TaskRunning is bound to a node.
	TaskRunning
	// TaskReleasing is being evicted; it still holds its resources.
	TaskReleasing
	// TaskSucceeded finished; it holds nothing.
	TaskSucceeded
)

// Holds reports whether a task in this status holds node resources.
func (s TaskStatus) Holds() bool { return s == TaskAllocated || s == TaskRunning || s == TaskReleasing }

func (s TaskStatus) String() string {
	return [...]string{"Pending", "Allocated", "Running", "Releasing", "Succeeded"}[s]
}

// Node is a schedulable node and what is allocated on it.
type Node struct {
	Name          string
	Index         int // position in Snapshot.Nodes
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool
	Allocatable   Resources
	Used          Resources
	GPUs          []GPU
	// GPUModel is the model of the node's GPUs ("" for CPU-only nodes).
	GPUModel string
	// Domains holds, per topology level of the snapshot, the interned domain id of the
	// node (-1 when the node lacks that label).
	Domains []int32
	// Tasks are the tasks holding resources on the node.
	Tasks []*Task

	freeWhole    int   // healthy GPUs with nothing allocated
	maxFreeMilli int64 // largest free share on one healthy GPU
	// allDevices: every GPU is published as a DRA device; allShareable: as one that
	// takes several allocations; viaClaims: some GPU is reached only through claims.
	allDevices, allShareable, viaClaims bool
	// Reserved marks a node held for a starving gang; only that job may use it.
	Reserved *Job
	// Version changes whenever the node's allocation changes, for plugin caches.
	Version uint64

	object *corev1.Node
}

// FreeWholeGPUs is the number of healthy, completely free GPUs.
func (n *Node) FreeWholeGPUs() int { return n.freeWhole }

// MaxFreeMilli is the largest free share on any one healthy GPU.
func (n *Node) MaxFreeMilli() int64 { return n.maxFreeMilli }

// FreeGPUMilli is the free share summed over healthy GPUs.
func (n *Node) FreeGPUMilli() int64 {
	var f int64
	for i := range n.GPUs {
		f += n.GPUs[i].FreeMilli()
	}
	return f
}

// ClaimsLikeExtended reports whether a request fits n exactly as the same request as
// extended resources would on GPUs reached without claims: it is such a request on
// such a node, or the claims (its own, or those made for it where GPU.ViaClaims) accept
// every GPU and every GPU of n is published as a device that can serve it. Then the
// node's GPU summaries answer for it.
func (n *Node) ClaimsLikeExtended(r *GPURequest) bool {
	if r.Claim == nil && !n.viaClaims {
		return true
	}
	return (r.Claim == nil || r.Claim.Allowed == nil) && n.allDevices && (n.allShareable || !r.Shared())
}

// Idle reports whether nothing is allocated on the node.
func (n *Node) Idle() bool { return len(n.Tasks) == 0 }

// Refresh recomputes the node's GPU summaries; call after changing GPUs directly.
func (n *Node) Refresh() {
	n.freeWhole, n.maxFreeMilli = 0, 0
	n.allDevices, n.allShareable, n.viaClaims = true, true, false
	for i := range n.GPUs {
		g := &n.GPUs[i]
		n.allDevices = n.allDevices && g.Device != ""
		n.allShareable = n.allShareable && g.Shareable
		n.viaClaims = n.viaClaims || g.ViaClaims
		f := g.FreeMilli()
		if f == MilliPerGPU {
			n.freeWhole++
		}
		if f > n.maxFreeMilli {
			n.maxFreeMilli = f
		}
	}
}

// Place puts t on the node using the GPUs in gpus, each taking milli. The caller has
// checked that it fits.
func (n *Node) Place(t *Task, gpus GPUSet, milli int64) {
	t.Node, t.GPUs, t.GPUMilli = n, gpus, milli
	req := t.Request
	req.GPU = int64(gpus.Len()) * milli
	t.Placed = req
	n.Used.Add(&t.Placed)
	for v := uint64(gpus); v != 0; v &= v - 1 {
		g := &n.GPUs[trailingZeros(v)]
		g.UsedMilli += milli
		g.Tasks++
	}
	n.Tasks = append(n.Tasks, t)
	n.Refresh()
	n.Version++
}

// Remove takes t off the node.
func (n *Node) Remove(t *Task) {
	n.Used.Sub(&t.Placed)
	for v := uint64(t.GPUs); v != 0; v &= v - 1 {
		g := &n.GPUs[trailingZeros(v)]
		g.UsedMilli -= t.GPUMilli
		g.Tasks--
	}
	for i, x := range n.Tasks {
		if x == t {
			last := len(n.Tasks) - 1
			n.Tasks[i] = n.Tasks[last]
			n.Tasks[last] = nil
			n.Tasks = n.Tasks[:last]
			break
		}
	}
	t.Node, t.GPUs, t.GPUMilli, t.Placed = nil, 0, 0, Resources{}
	n.Refresh()
	n.Version++
}

// Task is one pod of a job.
type Task struct {
	Name      string
	Namespace string
	UID       string
	Job       *Job
	// Container is the container the GPUs are assigned to.
	Container string
	Request   Resources // cpu, memory, pods=1, scalars; GPU is set from GPU at placement
	GPU       GPURequest
	Status    TaskStatus

	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration

	// Node, GPUs and GPUMilli say where the task is placed.
	Node     *Node
	GPUs     GPUSet
	GPUMilli int64
	Placed   Resources // what the task holds on its node
	// StartTime is when the task started running (zero while pending).
	StartTime time.Time
	// Preemptible is false for tasks that must never be evicted (PDB exhausted, annotations).
	Preemptible bool
	// CheckpointEvery is how often the task saves its progress, as it declares it
	// (0: not declared); CheckpointedAt is when it last did, as it reports it (zero:
	// every CheckpointEvery from StartTime). An eviction loses the work since then.
	CheckpointEvery time.Duration
	CheckpointedAt  time.Time

	affinity *nodeaffinity.RequiredNodeAffinity
}

// Key is namespace/name.
func (t *Task) Key() string { return t.Namespace + "/" + t.Name }

// Tolerates reports whether one of the task's tolerations tolerates taint.
func (t *Task) Tolerates(taint *corev1.Taint) bool {
	for i := range t.Tolerations {
		if t.Tolerations[i].ToleratesTaint(klog.Background(), taint, true) {
			return true
		}
	}
	return false
}

// TopologySpec keeps a multi-node gang within one topology domain.
type TopologySpec struct {
	Required  string // label key; empty when not required
	Preferred string
}

// Job is a gang of tasks that the scheduler places all-or-nothing (a lone pod is a job of one).
type Job struct {
	Name      string
	Namespace string
	UID       string
	Queue     *Queue
	Priority  int32
	MinMember int
	Created   time.Time
	Tasks     []*Task
	// MinResources must be admissible by the queue before the job is enqueued.
	MinResources Resources
	MinRuntime   time.Duration
	// ExpectedRuntime is how long the job says one run takes (its expected-runtime
	// annotation, else its activeDeadlineSeconds); 0 when it says nothing.
	ExpectedRuntime time.Duration
	// Class is the job's runtime class (its tessera.dev/runtime label), which with its
	// queue and shape groups the runs whose history estimates its runtime.
	Class    string
	Topology TopologySpec
	// Inqueue is set by the enqueue action once the queue admits the job.
	Inqueue bool
	// WaitingSince is when the job last started waiting for placement.
	WaitingSince time.Time
	// Pending is why the job is not (fully) running after the last session.
	Pending *Reason
	// Refused, when set, is why the queue the job names does not take it (the queue
	// does not exist, or its namespace selector or allowed priority classes exclude the
	// job). The job is charged to the unqueued queue and its pending tasks are not
	// placed.
	Refused *Reason
	// Held, when set, is why the job's pending tasks are not placed yet although its
	// queue takes it: its gang's size is not known (ReasonGangSizeUnknown).
	Held *Reason
}

// Key is namespace/name.
func (j *Job) Key() string { return j.Namespace + "/" + j.Name }

// Count returns how many of the job's tasks are in any of the statuses.
func (j *Job) Count(statuses ...TaskStatus) int {
	n := 0
	if len(statuses) == 1 {
		for _, t := range j.Tasks {
			if t.Status == statuses[0] {
				n++
			}
		}
		return n
	}
	for _, t := range j.Tasks {
		for _, s := range statuses {
			if t.Status == s {
				n++
				break
			}
		}
	}
	return n
}

// Ready reports whether enough tasks hold resources for the gang to run.
func (j *Job) Ready() bool {
	return j.Count(TaskAllocated, TaskRunning, TaskSucceeded) >= j.MinMember
}

// StartedAt is the earliest start time among running tasks (zero when none).
func (j *Job) StartedAt() time.Time {
	var s time.Time
	for _, t := range j.Tasks {
		if t.Status == TaskRunning && !t.StartTime.IsZero() && (s.IsZero() || t.StartTime.Before(s)) {
			s = t.StartTime
		}
	}
	return s
}

// UnqueuedQueue is the name of the queue of the jobs no queue takes (Queue.Unqueued); no
// Queue object can have it.
const UnqueuedQueue = "tessera.dev/unqueued"

// Queue is a share of the cluster.
type Queue struct {
	Name        string
	Weight      int32
	Priority    int32
	Reclaimable bool
	// Deserved, Capability and Guarantee come from the spec; what no queue deserves is
	// split by weight.
	Deserved   Resources
	Capability Resources
	Guarantee  Resources
	// MaxMinRuntime caps the min runtime that protects the queue's jobs; 0: no cap.
	MaxMinRuntime time.Duration
	// Unqueued marks the queue of the jobs that no queue takes (Job.Refused): it
	// deserves nothing, so whatever it holds may be reclaimed.
	Unqueued bool
	Parent   *Queue
	Children []*Queue
	// Allocated is what the queue's (and its children's) tasks hold.
	Allocated Resources
	// Request is Allocated plus what pending tasks ask for.
	Request Resources
}

// Ancestors returns the queue and its parents, nearest first.
func (q *Queue) Ancestors() []*Queue {
	var out []*Queue
	for x := q; x != nil; x = x.Parent {
		out = append(out, x)
	}
	return out
}

// Snapshot is the cluster as one session sees it. Sessions mutate it in place; the
// caller commits the resulting decisions.
type Snapshot struct {
	Now    time.Time
	Nodes  []*Node
	Jobs   []*Job
	Queues []*Queue
	// TopologyLevels are the node label keys, narrowest first, that Node.Domains indexes.
	TopologyLevels []string
	// MaxGPUMemoryMiB is the largest GPU memory of any node (for estimates).
	MaxGPUMemoryMiB int64
	// Total is the allocatable sum over schedulable nodes.
	Total Resources
	// Workload is the typical pods fragmentation-aware placers measure against.
	Workload Workload
}
