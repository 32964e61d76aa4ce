package testutil

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// GPUMemoryMiB is the memory of the GPU models the wrappers know.
var GPUMemoryMiB = map[string]int64{
	"A100-80GB": 81920,
	"A100-40GB": 40960,
	"H100-80GB": 81559,
	"T4":        15109,
	"V100M16":   16160,
	"V100M32":   32510,
}

// Epoch is the creation time of wrapped jobs unless set.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NodeWrapper builds a framework.Node.
type NodeWrapper struct{ n framework.Node }

// MakeNode starts a node with 128 CPUs, 1 TiB memory, 110 pods and no GPUs.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{framework.Node{
		Name:        name,
		Labels:      map[string]string{"kubernetes.io/hostname": name},
		Allocatable: framework.Resources{MilliCPU: 128000, Memory: 1 << 40, Pods: 110},
	}}
}

// GPUs adds count GPUs of model, one NVLink island per 4 GPUs and two NUMA nodes.
func (w *NodeWrapper) GPUs(count int, model string) *NodeWrapper {
	mem, ok := GPUMemoryMiB[model]
	if !ok {
		panic(fmt.Sprintf("testutil: unknown GPU model %q", model))
	}
	w.n.GPUModel = model
	w.n.GPUs = make([]framework.GPU, count)
	for i := range w.n.GPUs {
		w.n.GPUs[i] = framework.GPU{Index: i, UUID: framework.DerivedGPUUUID(w.n.Name, i), Model: model, MemoryMiB: mem,
			Island: i / 4, NUMA: i * 2 / max(count, 1), Healthy: true}
	}
	w.n.Allocatable.GPU = int64(count) * framework.MilliPerGPU
	return w
}

// Islands regroups the GPUs into NVLink islands of size.
func (w *NodeWrapper) Islands(size int) *NodeWrapper {
	for i := range w.n.GPUs {
		w.n.GPUs[i].Island = i / size
	}
	return w
}

// Unhealthy marks GPU i unhealthy.
func (w *NodeWrapper) Unhealthy(i int) *NodeWrapper {
	w.n.GPUs[i].Healthy = false
	return w
}

// CPU sets allocatable CPU in millicores.
func (w *NodeWrapper) CPU(milli int64) *NodeWrapper { w.n.Allocatable.MilliCPU = milli; return w }

// Memory sets allocatable memory in bytes.
func (w *NodeWrapper) Memory(b int64) *NodeWrapper { w.n.Allocatable.Memory = b; return w }

// Label adds a label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper { w.n.Labels[k] = v; return w }

// Taint adds a NoSchedule taint.
func (w *NodeWrapper) Taint(k, v string) *NodeWrapper {
	w.n.Taints = append(w.n.Taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffectNoSchedule})
	return w
}

// UsedCPU marks milli millicores as already requested on the node.
func (w *NodeWrapper) UsedCPU(milli int64) *NodeWrapper { w.n.Used.MilliCPU = milli; return w }

// UsedGPUs marks GPU i as having usedMilli[i] of its share allocated (no tasks behind it),
// for scoring tests that need a partly filled node.
func (w *NodeWrapper) UsedGPUs(usedMilli ...int64) *NodeWrapper {
	for i, m := range usedMilli {
		w.n.GPUs[i].UsedMilli = m
	}
	return w
}

// Unschedulable cordons the node.
func (w *NodeWrapper) Unschedulable() *NodeWrapper { w.n.Unschedulable = true; return w }

// Obj returns the node.
func (w *NodeWrapper) Obj() *framework.Node {
	n := w.n
	n.Refresh()
	return &n
}

// QueueWrapper builds a framework.Queue.
type QueueWrapper struct{ q framework.Queue }

// MakeQueue starts a reclaimable queue of weight 1 without limits.
func MakeQueue(name string) *QueueWrapper {
	return &QueueWrapper{framework.Queue{Name: name, Weight: 1, Reclaimable: true, Capability: framework.Unlimited}}
}

// Weight sets the weight.
func (w *QueueWrapper) Weight(v int32) *QueueWrapper { w.q.Weight = v; return w }

// DeservedGPUs sets deserved GPUs.
func (w *QueueWrapper) DeservedGPUs(g int64) *QueueWrapper {
	w.q.Deserved.GPU = g * framework.MilliPerGPU
	return w
}

// CapabilityGPUs caps GPUs.
func (w *QueueWrapper) CapabilityGPUs(g int64) *QueueWrapper {
	w.q.Capability.GPU = g * framework.MilliPerGPU
	return w
}

// GuaranteeGPUs reserves GPUs.
func (w *QueueWrapper) GuaranteeGPUs(g int64) *QueueWrapper {
	w.q.Guarantee.GPU = g * framework.MilliPerGPU
	return w
}

// NotReclaimable keeps what the queue borrowed.
func (w *QueueWrapper) NotReclaimable() *QueueWrapper { w.q.Reclaimable = false; return w }

// Parent links the queue under p (p's Children is updated).
func (w *QueueWrapper) Parent(p *framework.Queue) *QueueWrapper { w.q.Parent = p; return w }

// Obj returns the queue.
func (w *QueueWrapper) Obj() *framework.Queue {
	q := w.q
	if q.Parent != nil {
		q.Parent.Children = append(q.Parent.Children, &q)
	}
	return &q
}

// JobWrapper builds a framework.Job and its tasks.
type JobWrapper struct {
	j     framework.Job
	tasks int
	tmpl  framework.Task
}

// MakeJob starts a job of one task asking 1 CPU and 1 GiB.
func MakeJob(name string) *JobWrapper {
	return &JobWrapper{
		j:     framework.Job{Name: name, Namespace: "default", UID: name, MinMember: 0, Created: Epoch},
		tasks: 1,
		tmpl:  framework.Task{Request: framework.Resources{MilliCPU: 1000, Memory: 1 << 30, Pods: 1}, Preemptible: true, Container: "main"},
	}
}

// Tasks sets the number of tasks (and minMember, unless set).
func (w *JobWrapper) Tasks(n int) *JobWrapper { w.tasks = n; return w }

// MinMember sets the gang size.
func (w *JobWrapper) MinMember(n int) *JobWrapper { w.j.MinMember = n; return w }

// GPU asks n whole GPUs per task.
func (w *JobWrapper) GPU(n int) *JobWrapper { w.tmpl.GPU.Count = n; return w }

// GPUMemory asks a slice of mib MiB of one GPU per task.
func (w *JobWrapper) GPUMemory(mib int64) *JobWrapper { w.tmpl.GPU.MemoryMiB = mib; return w }

// Share asks milli thousandths of one GPU per task.
func (w *JobWrapper) Share(milli int64) *JobWrapper { w.tmpl.GPU.Milli = milli; return w }

// Models restricts the GPU model.
func (w *JobWrapper) Models(m ...string) *JobWrapper { w.tmpl.GPU.Models = m; return w }

// CPU sets the CPU request per task in millicores.
func (w *JobWrapper) CPU(milli int64) *JobWrapper { w.tmpl.Request.MilliCPU = milli; return w }

// Memory sets the memory request per task in bytes.
func (w *JobWrapper) Memory(b int64) *JobWrapper { w.tmpl.Request.Memory = b; return w }

// Queue sets the queue.
func (w *JobWrapper) Queue(q *framework.Queue) *JobWrapper { w.j.Queue = q; return w }

// Priority sets the priority.
func (w *JobWrapper) Priority(p int32) *JobWrapper { w.j.Priority = p; return w }

// Created sets the creation time as an offset from Epoch.
func (w *JobWrapper) Created(d time.Duration) *JobWrapper { w.j.Created = Epoch.Add(d); return w }

// MinRuntime protects the job from eviction for d after it starts.
func (w *JobWrapper) MinRuntime(d time.Duration) *JobWrapper { w.j.MinRuntime = d; return w }

// RequiredTopology keeps the gang within one domain of the label level.
func (w *JobWrapper) RequiredTopology(level string) *JobWrapper {
	w.j.Topology.Required = level
	return w
}

// PreferredTopology prefers one domain of the label level.
func (w *JobWrapper) PreferredTopology(level string) *JobWrapper {
	w.j.Topology.Preferred = level
	return w
}

// NodeSelector restricts the tasks to nodes with the labels.
func (w *JobWrapper) NodeSelector(kv ...string) *JobWrapper {
	w.tmpl.NodeSelector = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		w.tmpl.NodeSelector[kv[i]] = kv[i+1]
	}
	return w
}

// Tolerate tolerates any NoSchedule taint with key.
func (w *JobWrapper) Tolerate(key string) *JobWrapper {
	w.tmpl.Tolerations = append(w.tmpl.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	return w
}

// NotPreemptible protects the tasks from eviction.
func (w *JobWrapper) NotPreemptible() *JobWrapper { w.tmpl.Preemptible = false; return w }

// Obj returns the job with its pending tasks.
func (w *JobWrapper) Obj() *framework.Job {
	j := w.j
	if j.MinMember == 0 {
		j.MinMember = w.tasks
	}
	for i := 0; i < w.tasks; i++ {
		t := w.tmpl
		t.Name = fmt.Sprintf("%s-%d", j.Name, i)
		t.Namespace = j.Namespace
		t.UID = t.Name
		t.Job = &j
		t.Request = t.Request.Clone()
		j.Tasks = append(j.Tasks, &t)
	}
	return &j
}

// Run places the job's tasks on the nodes in order (one task per node, or several
// when a node has room) as running, started at start, using the default GPU choice.
func Run(j *framework.Job, start time.Time, nodes ...*framework.Node) {
	k := 0
	for _, t := range j.Tasks {
		for ; k < len(nodes); k++ {
			n := nodes[k]
			var gpus framework.GPUSet
			if t.GPU.Any() {
				if gpus = framework.PickGPUs(&t.GPU, n); gpus == 0 {
					continue
				}
			}
			if ok, _ := t.Request.FitsIn(&n.Used, &n.Allocatable); !ok {
				continue
			}
			milli := int64(0)
			if gpus != 0 {
				milli = t.GPU.MilliOn(&n.GPUs[gpus.Indices()[0]])
			}
			n.Place(t, gpus, milli)
			t.Status = framework.TaskRunning
			t.StartTime = start
			break
		}
		if t.Status != framework.TaskRunning {
			panic(fmt.Sprintf("testutil.Run: no room for %s", t.Key()))
		}
	}
	j.Inqueue = true
}

// Snapshot assembles a snapshot at Epoch + now.
func Snapshot(now time.Duration, nodes []*framework.Node, jobs []*framework.Job, queues ...*framework.Queue) *framework.Snapshot {
	return &framework.Snapshot{Now: Epoch.Add(now), Nodes: nodes, Jobs: jobs, Queues: queues,
		TopologyLevels: []string{"tessera.dev/rack", "topology.kubernetes.io/zone"}}
}
