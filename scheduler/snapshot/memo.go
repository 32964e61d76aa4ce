package snapshot

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Memo carries what one Build converted and assembled to the next, so that a builder
// kept up to date with the cluster's changes pays for the changes, not for the cluster:
//
//   - nodes and pods are converted again only when they changed: an object counts as
//     unchanged when it is the same pointer as last time, or has the same UID and a
//     non-empty resourceVersion equal to last time's (the API server's objects never
//     change without a new resourceVersion; objects handed to a Builder with a Memo
//     must not be modified in place);
//   - a job is assembled again (its tasks grouped, its gang size, priority, creation
//     time and queue name decided) only when one of its pods, its PodGroup or its batch
//     Job was added, replaced or removed since the last Build of the same Builder; the
//     jobs stay sorted in snapshot order between builds. Everything is assembled again
//     when the Builder is another than last time, the priority classes changed, or the
//     set of nodes that convert did.
//
// What every build still does for every object is copy: each snapshot gets its own
// nodes, jobs and tasks, which its session changes. A snapshot built with a Memo is
// valid until the next Build with the same Memo, which reuses its tasks and jobs (a
// scheduler that builds a snapshot per session keeps none from one session to the
// next); the nodes of such snapshots share their Labels and Taints, which sessions only
// read. A Memo is not safe for concurrent use: one Build at a time.
type Memo struct {
	nodes map[string]*nodeMemo
	pods  map[string]*podMemo
	jobs  map[string]*jobMemo // by job key (see Builder.jobKey)
	// order are the jobs with tasks in snapshot order; spare is the slice the next
	// reorder fills.
	order, spare []*jobMemo
	// failed are the job keys whose assembly reported errors.
	failed map[string]bool
	// owner is the Builder whose changes jobs reflects; nodeSet the nodes that
	// converted in its last build.
	owner   *Builder
	nodeSet map[string]bool
	gen     uint64
	// hits and misses count the conversions reused and done, assembled the jobs
	// assembled, for tests and metrics.
	hits, misses, assembled int
}

type nodeMemo struct {
	node          *corev1.Node
	gpu           *tesserav1.GPUNode
	nodeRV, gpuRV string
	out           *framework.Node // the converted node, never handed out: snapshots get copies
	err           error
	gen           uint64
	// live is the node the last build handed out, overwritten by the next.
	live *framework.Node
}

type podMemo struct {
	pod   *corev1.Pod
	uid   types.UID
	rv    string
	whole bool
	task  *framework.Task // the converted task, never handed out: snapshots get copies
	err   error
	// The last resolution of the pod's GPU assignment annotation on node template on.
	assignment string
	on         *framework.Node
	set        framework.GPUSet
	setErr     error
	gen        uint64
	// live is the task the last build handed out, overwritten by the next.
	live *framework.Task
}

// jobMemo is one assembled job.
type jobMemo struct {
	key      string
	tmpl     framework.Job         // the job without its tasks and queue
	sortKey  string                // tmpl.Key()
	tasks    []*taskAcc            // by pod name
	scalars  []corev1.ResourceName // the scalar resources its tasks request
	errs     []error               // what assembling the job reported
	group    *tesserav1.PodGroup   // nil for implicit gangs
	owner    *batchv1.Job          // the batch Job, when the gang is implied by one
	implicit bool                  // minMember decided from the pods
	workload bool                  // a workload gang (see workloads.Of)
	foreign  bool                  // another scheduler's pod
	queue    string                // explicit queue from the first pod that names one
	queueKey string                // the label or annotation that named it
	queuePod string                // the pod that named it
	classes  []string              // the priority classes its PodGroup and pods name, "" for none
	built    uint64                // the Memo generation that last assembled it
	// live is the job the last build handed out, overwritten by the next.
	live *framework.Job
}

// instance overwrites the task the last build handed out with the converted task, and
// returns it.
func (e *podMemo) instance() *framework.Task {
	if e.live == nil {
		e.live = new(framework.Task)
	}
	*e.live = *e.task
	e.live.Request = e.task.Request.Clone()
	return e.live
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{nodes: map[string]*nodeMemo{}, pods: map[string]*podMemo{}, jobs: map[string]*jobMemo{}, failed: map[string]bool{}}
}

// Jobs returns how many jobs the last Build assembled, and how many it holds.
func (m *Memo) Jobs() (assembled, total int) { return m.assembled, len(m.order) }

// Stats returns how many node and pod conversions the last Build reused and did.
func (m *Memo) Stats() (reused, converted int) { return m.hits, m.misses }

// WithMemo makes Build reuse and update m. It returns b.
func (b *Builder) WithMemo(m *Memo) *Builder {
	b.memo = m
	return b
}

// node converts a node through the memo and returns its entry: the converted node
// (out) or the error.
func (m *Memo) node(n *corev1.Node, g *tesserav1.GPUNode) *nodeMemo {
	e := m.nodes[n.Name]
	if e != nil && sameNode(e, n, g) {
		// Keep the newest objects, not those of the first list: a list's objects share
		// one array, which one kept pointer would keep whole.
		e.node, e.gpu, e.gen = n, g, m.gen
		m.hits++
		return e
	}
	m.misses++
	out, err := convertNode(n, g)
	e = &nodeMemo{node: n, gpu: g, nodeRV: n.ResourceVersion, out: out, err: err, gen: m.gen}
	if g != nil {
		e.gpuRV = g.ResourceVersion
	}
	m.nodes[n.Name] = e
	return e
}

func sameNode(e *nodeMemo, n *corev1.Node, g *tesserav1.GPUNode) bool {
	if e.node != n && (n.ResourceVersion == "" || n.ResourceVersion != e.nodeRV || n.UID != e.node.UID) {
		return false
	}
	switch {
	case g == nil || e.gpu == nil:
		return g == nil && e.gpu == nil
	case e.gpu == g:
		return true
	default:
		return g.ResourceVersion != "" && g.ResourceVersion == e.gpuRV && g.UID == e.gpu.UID
	}
}

// pod converts a pod's spec through the memo, keyed by namespace/name. The task it
// returns is the memo's template: copy it (cloneTask) before use.
func (m *Memo) pod(key string, p *corev1.Pod, whole bool) (*podMemo, *framework.Task, error) {
	e := m.pods[key]
	if e != nil && e.whole == whole && (e.pod == p || p.ResourceVersion != "" && p.ResourceVersion == e.rv && p.UID == e.uid) {
		e.pod, e.gen = p, m.gen // the newest object, as in node
		m.hits++
		return e, e.task, e.err
	}
	m.misses++
	t, err := convertTask(p, whole)
	e = &podMemo{pod: p, uid: p.UID, rv: p.ResourceVersion, whole: whole, task: t, err: err, gen: m.gen}
	m.pods[key] = e
	return e, t, err
}

// sweep forgets the nodes the last build did not see, once they are a good part of the
// memo, and the pods too after a build that assembled every job (otherwise RemovePod
// forgets them).
func (m *Memo) sweep(nodes, pods int, all bool) {
	if len(m.nodes) > nodes+nodes/4+16 {
		for k, e := range m.nodes {
			if e.gen != m.gen {
				delete(m.nodes, k)
			}
		}
	}
	if all && len(m.pods) > pods+pods/4+16 {
		for k, e := range m.pods {
			if e.gen != m.gen {
				delete(m.pods, k)
			}
		}
	}
}

// instance overwrites the node the last build handed out with the converted node, and
// returns it: what sessions change (usage, GPUs, tasks) is reset, the slices are
// reused. Its Version only grows, so that what plugins remember of the node by version
// is never taken for its state in a later snapshot.
func (e *nodeMemo) instance() *framework.Node {
	n := e.live
	if n == nil {
		n = new(framework.Node)
		e.live = n
	}
	gpus, tasks, version := n.GPUs[:0], n.Tasks[:0], n.Version
	clear(tasks[:cap(tasks)])
	*n = *e.out
	n.GPUs = append(gpus, e.out.GPUs...)
	n.Tasks = tasks
	n.Allocatable = e.out.Allocatable.Clone()
	n.Used = e.out.Used.Clone()
	n.Version = max(version, e.out.Version) + 1
	return n
}
