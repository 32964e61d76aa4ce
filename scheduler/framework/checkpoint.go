package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// checkpointRule says what Checkpoint does with one field.
type checkpointRule uint8

const (
	// immutable: set when the snapshot is built; no session or what-if change alters
	// it, in place or not, so Checkpoint does not save it.
	immutable checkpointRule = iota
	// cached: derived from immutable fields on first use; a filled cache stays right, so
	// it is not saved.
	cached
	// restored: saved with its contents; restore puts the value back and undoes changes
	// made in place to the maps and slices it holds (not to the Node, Task, Job or
	// Queue it points to: those are restored as objects of their own).
	restored
	// reassigned: saved as it is; restore puts the value back, but what it points to is
	// shared with the saved copy and must not be changed in place.
	reassigned
	// renewed: Node.Version, which only ever grows; restore moves it past every value it
	// had, so that caches keyed by it miss.
	renewed
)

// checkpointFields says, for every field of Snapshot, Node, Task, Job and Queue, what
// Checkpoint does with it. Checkpoint copies the fields by hand, which keeps it fast;
// its test fails when a field is missing here, and changes every field that is not
// immutable or cached, in place and by assignment, to check that restore puts it back.
// A new field that sessions change must be restored by Checkpoint and marked so here.
var checkpointFields = map[string]map[string]checkpointRule{
	"Snapshot": {
		"Now": restored, "Nodes": restored, "Jobs": restored, "Queues": restored,
		"TopologyLevels": reassigned, "MaxGPUMemoryMiB": restored, "Total": restored, "Workload": reassigned,
	},
	"Node": {
		"Name": immutable, "Index": restored, "Labels": immutable, "Taints": reassigned, "Unschedulable": restored,
		"Allocatable": restored, "Used": restored, "GPUs": restored, "GPUModel": immutable, "Domains": immutable,
		"Tasks": restored, "freeWhole": restored, "maxFreeMilli": restored, "allDevices": restored, "allShareable": restored, "viaClaims": restored, "Reserved": restored,
		"Version": renewed, "object": cached,
	},
	"Task": {
		"Name": immutable, "Namespace": immutable, "UID": immutable, "Job": immutable, "Container": immutable,
		"Request": immutable, "GPU": immutable, "Status": restored,
		"NodeSelector": immutable, "Affinity": immutable, "Tolerations": immutable,
		"Node": restored, "GPUs": restored, "GPUMilli": restored, "Placed": restored,
		"StartTime": restored, "Preemptible": restored, "CheckpointEvery": immutable, "CheckpointedAt": immutable, "affinity": cached,
	},
	"Job": {
		"Name": immutable, "Namespace": immutable, "UID": immutable, "Queue": immutable, "Priority": immutable,
		"MinMember": immutable, "Created": immutable, "Tasks": restored, "MinResources": immutable,
		"MinRuntime": immutable, "ExpectedRuntime": immutable, "Class": immutable, "Topology": immutable, "Inqueue": restored, "WaitingSince": restored,
		"Pending": reassigned, "Refused": immutable, "Held": immutable,
	},
	"Queue": {
		"Name": immutable, "Weight": immutable, "Priority": immutable, "Reclaimable": immutable,
		"Deserved": restored, "Capability": restored, "Guarantee": restored,
		"MaxMinRuntime": immutable, "Unqueued": immutable, "Parent": immutable, "Children": immutable, "Allocated": restored, "Request": restored,
	},
}

// Checkpoint records everything a session, or a what-if change made before one, may
// alter in the snapshot, and returns a func that puts it back: the node, job and queue
// lists, every node's allocation, taints and schedulability, every task's placement and
// status, every job's admission and waiting state, every queue's accounting and limits
// (checkpointFields lists them field by field). Objects added after the checkpoint are
// dropped from the lists again; label maps and requests must not be changed in place.
// Restoring gives each node a Version it never had before, so plugin caches keyed by it
// never return a verdict computed while the snapshot was changed.
func (s *Snapshot) Checkpoint() (restore func()) {
	type nodeState struct {
		n             *Node
		index         int
		taints        []corev1.Taint
		unschedulable bool
		allocatable   Resources
		used          Resources
		gpus          []GPU
		tasks         []*Task
		reserved      *Job
	}
	type taskState struct {
		t           *Task
		status      TaskStatus
		node        *Node
		gpus        GPUSet
		milli       int64
		placed      Resources
		start       time.Time
		preemptible bool
	}
	type jobState struct {
		j       *Job
		tasks   []*Task
		inqueue bool
		waiting time.Time
		pending *Reason
	}
	type queueState struct {
		q                                               *Queue
		allocated, request, deserved, capability, guarn Resources
	}
	top := *s
	top.Nodes, top.Jobs, top.Queues = clone(s.Nodes), clone(s.Jobs), clone(s.Queues)
	top.Total = s.Total.Clone()
	nodes := make([]nodeState, len(s.Nodes))
	for i, n := range s.Nodes {
		nodes[i] = nodeState{n: n, index: n.Index, taints: n.Taints, unschedulable: n.Unschedulable,
			allocatable: n.Allocatable.Clone(), used: n.Used.Clone(), gpus: clone(n.GPUs), tasks: clone(n.Tasks), reserved: n.Reserved}
	}
	count := 0
	for _, j := range s.Jobs {
		count += len(j.Tasks)
	}
	tasks := make([]taskState, 0, count)
	jobs := make([]jobState, len(s.Jobs))
	for i, j := range s.Jobs {
		jobs[i] = jobState{j: j, tasks: clone(j.Tasks), inqueue: j.Inqueue, waiting: j.WaitingSince, pending: j.Pending}
		for _, t := range j.Tasks {
			tasks = append(tasks, taskState{t: t, status: t.Status, node: t.Node, gpus: t.GPUs, milli: t.GPUMilli,
				placed: t.Placed.Clone(), start: t.StartTime, preemptible: t.Preemptible})
		}
	}
	queues := make([]queueState, len(s.Queues))
	for i, q := range s.Queues {
		queues[i] = queueState{q: q, allocated: q.Allocated.Clone(), request: q.Request.Clone(),
			deserved: q.Deserved.Clone(), capability: q.Capability.Clone(), guarn: q.Guarantee.Clone()}
	}
	return func() {
		*s = top
		s.Nodes, s.Jobs, s.Queues = clone(top.Nodes), clone(top.Jobs), clone(top.Queues)
		s.Total = top.Total.Clone()
		for _, st := range nodes {
			n := st.n
			n.Index, n.Taints, n.Unschedulable, n.Reserved = st.index, st.taints, st.unschedulable, st.reserved
			n.Allocatable, n.Used = st.allocatable.Clone(), st.used.Clone()
			n.GPUs, n.Tasks = clone(st.gpus), clone(st.tasks)
			n.Refresh()
			n.Version++ // past every version the change produced
		}
		for _, st := range tasks {
			t := st.t
			t.Status, t.Node, t.GPUs, t.GPUMilli, t.Placed = st.status, st.node, st.gpus, st.milli, st.placed.Clone()
			t.StartTime, t.Preemptible = st.start, st.preemptible
		}
		for _, st := range jobs {
			j := st.j
			j.Tasks, j.Inqueue, j.WaitingSince, j.Pending = clone(st.tasks), st.inqueue, st.waiting, st.pending
		}
		for _, st := range queues {
			q := st.q
			q.Allocated, q.Request = st.allocated.Clone(), st.request.Clone()
			q.Deserved, q.Capability, q.Guarantee = st.deserved.Clone(), st.capability.Clone(), st.guarn.Clone()
		}
	}
}

// RemoveNodes takes the named nodes out of the snapshot, as if they were deleted: the
// tasks holding resources on them become pending, and are returned. Unknown names are
// ignored. Use it inside a what-if change, after Checkpoint.
func (s *Snapshot) RemoveNodes(names ...string) []*Task {
	drop := make(map[string]bool, len(names))
	for _, name := range names {
		drop[name] = true
	}
	var displaced []*Task
	kept := s.Nodes[:0:0]
	for _, n := range s.Nodes {
		if !drop[n.Name] {
			kept = append(kept, n)
			continue
		}
		for len(n.Tasks) > 0 {
			t := n.Tasks[len(n.Tasks)-1]
			n.Remove(t)
			t.Status, t.StartTime = TaskPending, time.Time{}
			displaced = append(displaced, t)
		}
	}
	s.Nodes = kept
	return displaced
}

func clone[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
