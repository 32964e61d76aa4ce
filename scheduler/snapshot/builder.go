package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// Options configure a Builder.
type Options struct {
	// TopologyLevels are the node label keys, narrowest first, that group nodes into
	// topology domains; default tesserav1.DefaultTopologyLevels.
	TopologyLevels []string
	// SchedulerName is the schedulerName of the pods to schedule; default "tessera".
	SchedulerName string
	// DefaultQueue is the queue of jobs that name none; default "default". It is
	// created (weight 1, no limits, every namespace, the default priority class only)
	// when a job uses it and no Queue object defines it.
	DefaultQueue string
	// PriorityClasses resolves a PodGroup's spec.priorityClassName; a PodGroup whose
	// class is not listed takes the highest priority among its pods.
	PriorityClasses map[string]int32
	// DefaultPriorityClass is the PriorityClass with globalDefault ("" for none): the
	// class of a pod that names none, and the only class a queue without
	// spec.allowedPriorityClasses takes.
	DefaultPriorityClass string
	// WholeGPUs turns tessera.dev/gpu-memory slices into one whole GPU, for profiles
	// that cannot share GPUs (scheduler.Config.WholeGPUs).
	WholeGPUs bool
	// Workloads are the workload kinds whose objects the caller feeds with
	// AddWorkload (those the API server serves). Pods of a kind sized by its object
	// form one gang of the workload only when the kind is listed; Kueue's pod groups
	// and LeaderWorkerSet groups, which their pods size, always do.
	Workloads []workloads.Kind
	// DRA says the API server serves Dynamic Resource Allocation (resource.k8s.io/v1):
	// the caller feeds ResourceSlices, ResourceClaims and DeviceClasses too.
	DRA bool
	// ExtendedResourceClaims says on which nodes the GPUs of pods asking them as
	// extended resources come through a claim the scheduler makes (ExtendedClaimsModes;
	// default ExtendedClaimsAuto): their GPUs are marked framework.GPU.ViaClaims.
	ExtendedResourceClaims string
}

// Builder collects Kubernetes objects and converts them into a framework.Snapshot.
// Adding an object again (same kind and namespace/name) replaces it; the Remove
// methods take one out. A Builder with a Memo is a maintained model: fed the changes
// an informer reports and built once per session, it assembles again only the jobs
// whose pods, PodGroup or batch Job changed (see Memo). A Builder is not safe for
// concurrent use.
type Builder struct {
	now        time.Time
	opts       Options
	nodes      map[string]nodeInput
	queues     map[string]*tesserav1.Queue
	podGroups  map[string]*tesserav1.PodGroup
	jobs       map[string]*batchv1.Job
	namespaces map[string]*corev1.Namespace
	pods       map[string]podInput
	pdbs       map[string]*policyv1.PodDisruptionBudget
	workloads  map[string]*unstructured.Unstructured // by workloads.ObjectKey
	dra        claimState
	memo       *Memo

	// members are the pods (namespace/name) of each job key (see jobKey); dirty are
	// the job keys whose inputs changed since the last Build, and dirtyAll says that
	// something every job depends on did.
	members  map[string][]string
	dirty    map[string]bool
	dirtyAll bool
	// gangsOf are the job keys of the pods each workload object sizes, by
	// workloads.ObjectKey (it may name jobs that are gone).
	gangsOf map[string]map[string]bool
}

type nodeInput struct {
	node *corev1.Node
	gpu  *tesserav1.GPUNode
}

type podInput struct {
	pod      *corev1.Pod
	priority int32
	job      string // the job key
}

// NewBuilder returns a builder of snapshots taken at now.
func NewBuilder(now time.Time, opts Options) *Builder {
	if opts.TopologyLevels == nil {
		opts.TopologyLevels = slices.Clone(tesserav1.DefaultTopologyLevels)
	}
	if opts.SchedulerName == "" {
		opts.SchedulerName = tesserav1.SchedulerName
	}
	if opts.DefaultQueue == "" {
		opts.DefaultQueue = tesserav1.DefaultQueue
	}
	return &Builder{now: now, opts: opts,
		nodes: map[string]nodeInput{}, queues: map[string]*tesserav1.Queue{}, podGroups: map[string]*tesserav1.PodGroup{},
		jobs: map[string]*batchv1.Job{}, namespaces: map[string]*corev1.Namespace{}, pods: map[string]podInput{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, workloads: map[string]*unstructured.Unstructured{},
		members: map[string][]string{}, dirty: map[string]bool{}, gangsOf: map[string]map[string]bool{}, dra: newClaimState()}
}

// SetNow sets the time the next snapshot is taken at.
func (b *Builder) SetNow(now time.Time) { b.now = now }

// SetPriorityClasses replaces Options.PriorityClasses and Options.DefaultPriorityClass.
func (b *Builder) SetPriorityClasses(classes map[string]int32, globalDefault string) {
	if !maps.Equal(classes, b.opts.PriorityClasses) || globalDefault != b.opts.DefaultPriorityClass {
		b.opts.PriorityClasses, b.opts.DefaultPriorityClass = classes, globalDefault
		b.dirtyAll = true
	}
}

// AddNode adds a node and, if the node agent published one, its GPUNode (g may be nil:
// then the GPUs are synthesized from the node's allocatable GPU resources and labels).
// A nil node is ignored.
func (b *Builder) AddNode(n *corev1.Node, g *tesserav1.GPUNode) {
	if n != nil {
		b.nodes[n.Name] = nodeInput{n, g}
	}
}

// RemoveNode takes a node (and its GPUNode) out.
func (b *Builder) RemoveNode(name string) { delete(b.nodes, name) }

// AddQueue adds a queue. A nil queue is ignored.
func (b *Builder) AddQueue(q *tesserav1.Queue) {
	if q != nil {
		b.queues[q.Name] = q
	}
}

// RemoveQueue takes a queue out.
func (b *Builder) RemoveQueue(name string) { delete(b.queues, name) }

// AddPodGroup adds a gang. A nil PodGroup is ignored.
func (b *Builder) AddPodGroup(pg *tesserav1.PodGroup) {
	if pg != nil {
		b.podGroups[pg.Namespace+"/"+pg.Name] = pg
		b.dirty[groupJobKey(pg.Namespace, pg.Name)] = true
	}
}

// RemovePodGroup takes a gang's PodGroup out.
func (b *Builder) RemovePodGroup(namespace, name string) {
	delete(b.podGroups, namespace+"/"+name)
	b.dirty[groupJobKey(namespace, name)] = true
}

// AddJob adds a batch Job, whose tessera.dev/min-available annotation or parallelism
// sizes the gang of its pods when the pods do not. A nil Job is ignored.
func (b *Builder) AddJob(j *batchv1.Job) {
	if j != nil {
		b.jobs[j.Namespace+"/"+j.Name] = j
		b.jobChanged(j)
	}
}

// RemoveJob takes a batch Job out.
func (b *Builder) RemoveJob(namespace, name string) {
	if j := b.jobs[namespace+"/"+name]; j != nil {
		delete(b.jobs, namespace+"/"+name)
		b.jobChanged(j)
	}
	b.dirty[ownerJobKey(namespace, name)] = true
}

// jobChanged marks the gangs a batch Job sizes: its own, and its JobSet's.
func (b *Builder) jobChanged(j *batchv1.Job) {
	b.dirty[ownerJobKey(j.Namespace, j.Name)] = true
	if js := j.Labels[workloads.LabelJobSetName]; js != "" {
		b.dirtyGangsOf(workloads.ObjectKey(workloads.JobSet, j.Namespace, js))
	}
}

// AddNamespace adds a namespace, whose tessera.dev/queue annotation is the default
// queue of its pods. A nil Namespace is ignored.
func (b *Builder) AddNamespace(ns *corev1.Namespace) {
	if ns != nil {
		b.namespaces[ns.Name] = ns
	}
}

// RemoveNamespace takes a namespace out.
func (b *Builder) RemoveNamespace(name string) { delete(b.namespaces, name) }

// AddPod adds a pod with the value of its priority class, resolved by the caller;
// spec.priority, when set, takes precedence. A nil pod is ignored.
func (b *Builder) AddPod(p *corev1.Pod, priority int32) {
	if p == nil {
		return
	}
	key := p.Namespace + "/" + p.Name
	job := b.jobKey(p)
	if old, ok := b.pods[key]; ok && old.job != job {
		b.unlink(key, old.job)
	}
	old, ok := b.pods[key]
	if !ok || old.job != job {
		b.members[job] = append(b.members[job], key)
	}
	if len(p.Spec.ResourceClaims) > 0 || ok && len(old.pod.Spec.ResourceClaims) > 0 {
		b.useClaims(key, old.pod, p)
	}
	b.pods[key] = podInput{p, priority, job}
	b.dirty[job] = true
}

// RemovePod takes a pod out.
func (b *Builder) RemovePod(namespace, name string) {
	key := namespace + "/" + name
	if old, ok := b.pods[key]; ok {
		b.unlink(key, old.job)
		b.useClaims(key, old.pod, nil)
		delete(b.pods, key)
		if b.memo != nil {
			delete(b.memo.pods, key)
		}
	}
}

// unlink takes pod key out of job's members.
func (b *Builder) unlink(key, job string) {
	ms := b.members[job]
	if i := slices.Index(ms, key); i >= 0 {
		ms[i] = ms[len(ms)-1]
		ms = ms[:len(ms)-1]
	}
	if len(ms) == 0 {
		delete(b.members, job)
	} else {
		b.members[job] = ms
	}
	b.dirty[job] = true
}

// AddPDB adds a PodDisruptionBudget: the pods it selects are not preempted while it
// allows no disruption (the Eviction API would refuse them anyway). A nil PDB is ignored.
func (b *Builder) AddPDB(pdb *policyv1.PodDisruptionBudget) {
	if pdb != nil {
		b.pdbs[pdb.Namespace+"/"+pdb.Name] = pdb
	}
}

// RemovePDB takes a PodDisruptionBudget out.
func (b *Builder) RemovePDB(namespace, name string) { delete(b.pdbs, namespace+"/"+name) }

// exhausted is an exhausted PodDisruptionBudget's namespace and selector.
type exhausted struct {
	namespace string
	selector  labels.Selector
}

// exhaustedPDBs returns the PodDisruptionBudgets that allow no disruption and select
// some pods, with their selectors parsed.
func (b *Builder) exhaustedPDBs() []exhausted {
	var out []exhausted
	for _, pdb := range b.pdbs {
		if pdb.Status.DisruptionsAllowed > 0 || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && !sel.Empty() {
			out = append(out, exhausted{pdb.Namespace, sel})
		}
	}
	return out
}

// protected reports whether an exhausted PodDisruptionBudget covers the pod.
func (s *build) protected(p *corev1.Pod) bool {
	for _, e := range s.exhausted {
		if e.namespace == p.Namespace && e.selector.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}

// build is the state of one Build call.
type build struct {
	*Builder
	memo      *Memo
	snap      *framework.Snapshot
	errs      []error
	nodes     map[string]*framework.Node
	templates []*framework.Node // the memo's node of each snapshot node, by index
	queues    map[string]*framework.Queue
	scalars   map[corev1.ResourceName]bool
	placed    []*taskAcc // tasks that hold resources, in job order
	queueSpec map[string]corev1.ResourceList
	access    map[string]access // by queue name
	nsLabels  map[string]labels.Labels
	unqueued  *framework.Queue // made when a job needs it
	exhausted []exhausted
	all       bool // every job is assembled again
}

// taskAcc is one pod of an assembled job.
type taskAcc struct {
	task     *framework.Task // the pod's converted task, with its status: the template of live
	pod      *corev1.Pod
	priority int32
	memo     *podMemo
	live     *framework.Task // the task this build hands out
	// node is the index of the pod's node in the snapshot, for tasks that hold
	// resources; assignment its tessera.dev/gpu-assignment annotation, if it has one.
	node          int
	assignment    string
	hasAssignment bool
}

// Build converts the collected objects. Objects that cannot be converted are left out
// and reported; see ObjectError. Without a Memo each call returns a new, independent
// snapshot; with one, see Memo.
func (b *Builder) Build() (*framework.Snapshot, []error) {
	m := b.memo
	if m == nil {
		m = NewMemo()
	}
	s := &build{Builder: b, memo: m,
		snap:      &framework.Snapshot{Now: b.now, TopologyLevels: slices.Clone(b.opts.TopologyLevels)},
		nodes:     make(map[string]*framework.Node, len(b.nodes)),
		queues:    map[string]*framework.Queue{},
		scalars:   map[corev1.ResourceName]bool{},
		queueSpec: map[string]corev1.ResourceList{},
		access:    map[string]access{},
		nsLabels:  map[string]labels.Labels{},
		exhausted: b.exhaustedPDBs(),
		all:       m.owner != b || b.dirtyAll,
	}
	m.owner = b
	m.gen++
	m.hits, m.misses, m.assembled = 0, 0, 0
	s.buildNodes()
	s.buildQueues()
	s.buildJobs()
	s.place()
	s.finish()
	m.sweep(len(b.nodes), len(b.pods), s.all)
	clear(b.dirty)
	b.dirtyAll = false
	return s.snap, s.errs
}

func (s *build) fail(err error) { s.errs = append(s.errs, err) }

// buildNodes converts the nodes. When the nodes that convert are not those of the last
// build, every job is assembled again: a pod bound to a node that is not in the
// snapshot is left out of its job.
func (s *build) buildNodes() {
	m := s.memo
	same := true
	devs := s.Builder.Devices()
	for _, name := range slices.Sorted(maps.Keys(s.Builder.nodes)) {
		in := s.Builder.nodes[name]
		e := m.node(in.node, in.gpu)
		if e.err != nil {
			s.fail(e.err)
			continue
		}
		s.templates = append(s.templates, e.out)
		n := e.instance()
		if len(devs.ByUUID) > 0 {
			markDevices(n, devs, s.opts.claimsCarryGPUs(in.node))
		}
		n.Index = len(s.snap.Nodes)
		s.snap.Nodes = append(s.snap.Nodes, n)
		s.nodes[n.Name] = n
		same = same && m.nodeSet[n.Name]
		for k := range n.Allocatable.Scalar {
			s.scalars[k] = true
		}
	}
	if !same || len(m.nodeSet) != len(s.nodes) {
		s.all = true
		m.nodeSet = make(map[string]bool, len(s.nodes))
		for name := range s.nodes {
			m.nodeSet[name] = true
		}
	}
}

func (s *build) buildQueues() {
	for _, name := range slices.Sorted(maps.Keys(s.Builder.queues)) {
		q := s.Builder.queues[name]
		if q.Name == "" {
			s.fail(objErr("Queue", "", "", "metadata.name", "is empty"))
			continue
		}
		fq := convertQueue(q)
		s.snap.Queues = append(s.snap.Queues, fq)
		s.queues[fq.Name] = fq
		s.queueSpec[fq.Name] = q.Spec.Capability
		s.access[fq.Name] = accessOf(q)
	}
	s.errs = append(s.errs, linkQueues(s.snap.Queues, s.Builder.queues)...)
}

// place puts the tasks that hold resources on their nodes: first those whose GPUs the
// tessera.dev/gpu-assignment annotation names, or else the allocations of the claims
// reserved for them, then the others on GPUs picked as the scheduler would.
func (s *build) place() {
	var later []*taskAcc
	for _, ta := range s.placed {
		if !ta.live.GPU.Any() {
			s.placeOn(ta, 0)
			continue
		}
		if !ta.hasAssignment {
			if set := s.claimedGPUs(ta.pod, s.snap.Nodes[ta.node]); set != 0 && set.Len() == ta.live.GPU.GPUs() {
				s.placeOn(ta, set)
			} else {
				later = append(later, ta)
			}
			continue
		}
		set, err := s.assigned(ta)
		if err != nil {
			s.fail(err)
			later = append(later, ta)
			continue
		}
		s.placeOn(ta, set)
	}
	for _, ta := range later {
		n := s.snap.Nodes[ta.node]
		set := framework.PickGPUs(&ta.live.GPU, n)
		if set == 0 {
			s.fail(objErr("Pod", ta.pod.Namespace, ta.pod.Name, "spec.nodeName", "node %s has no free GPUs for the running pod's %s; it is counted without GPUs", n.Name, describeGPU(&ta.live.GPU)))
		}
		s.placeOn(ta, set)
	}
	s.chargeForeignClaims()
}

func (s *build) placeOn(ta *taskAcc, set framework.GPUSet) {
	n := s.snap.Nodes[ta.node]
	var milli int64
	if set != 0 {
		milli = ta.live.GPU.MilliOn(&n.GPUs[set.Indices()[0]])
	}
	n.Place(ta.live, set, milli)
}

// assigned maps the UUIDs of the pod's tessera.dev/gpu-assignment to its node's GPUs.
func (s *build) assigned(ta *taskAcc) (framework.GPUSet, error) {
	p, t, pm, v := ta.pod, ta.live, ta.memo, ta.assignment
	n := s.snap.Nodes[ta.node]
	if tmpl := s.templates[ta.node]; pm.on != tmpl || pm.assignment != v {
		pm.set, pm.setErr = resolveAssignment(p, t, n, v)
		pm.on, pm.assignment = tmpl, v
	}
	set, err := pm.set, pm.setErr
	if err != nil {
		return 0, err
	}
	field := "metadata.annotations[" + tesserav1.AnnotationGPUAssign + "]"
	for _, i := range set.Indices() {
		if g := &n.GPUs[i]; t.GPU.MilliOn(g) > g.FreeMilli() && g.Healthy {
			s.fail(objErr("Pod", p.Namespace, p.Name, field, "GPU %s on node %s is oversubscribed by the pods assigned to it", g.UUID, n.Name))
		}
	}
	return set, nil
}

// resolveAssignment maps the UUIDs of the annotation v to the GPUs of n, the pod's
// node. It depends only on the pod's spec, v and n's GPU list.
func resolveAssignment(p *corev1.Pod, t *framework.Task, n *framework.Node, v string) (framework.GPUSet, error) {
	field := "metadata.annotations[" + tesserav1.AnnotationGPUAssign + "]"
	bad := func(format string, args ...any) error {
		return objErr("Pod", p.Namespace, p.Name, field, format+"; GPUs are picked as the scheduler would", args...)
	}
	a, err := tesserav1.ParseGPUAssignment(v)
	if err != nil {
		return 0, bad("%v", err)
	}
	if a.Node != p.Spec.NodeName {
		return 0, bad("names node %q, the pod runs on %q", a.Node, p.Spec.NodeName)
	}
	var set framework.GPUSet
	for _, c := range a.Containers {
		for _, u := range c.UUIDs {
			i := slices.IndexFunc(n.GPUs, func(g framework.GPU) bool { return g.UUID == u })
			if i < 0 {
				return 0, bad("GPU %s is not on node %s", u, n.Name)
			}
			set = set.Add(i)
		}
	}
	if want := t.GPU.GPUs(); set.Len() != want {
		return 0, bad("names %d GPUs, the pod asks %s", set.Len(), describeGPU(&t.GPU))
	}
	return set, nil
}

func describeGPU(r *framework.GPURequest) string {
	if r.Count > 0 {
		return fmt.Sprintf("%d whole GPU(s)", r.Count)
	}
	return fmt.Sprintf("a %d MiB GPU slice", r.MemoryMiB)
}

// finish fills capability scalars, totals and the workload.
func (s *build) finish() {
	for _, q := range s.snap.Queues {
		fillScalars(q, s.queueSpec[q.Name], s.scalars)
	}
	for _, n := range s.snap.Nodes {
		if len(n.Tasks) == 0 {
			n.Tasks = nil // an empty node's reused slice, as a new node's
		}
		if !n.Unschedulable {
			s.snap.Total.Add(&n.Allocatable)
		}
		for i := range n.GPUs {
			s.snap.MaxGPUMemoryMiB = max(s.snap.MaxGPUMemoryMiB, n.GPUs[i].MemoryMiB)
		}
	}
	s.snap.Workload = workload(s.snap.Jobs, newGPUModels(s.snap.Nodes))
}

// workload is the distribution of the snapshot's task shapes, the typical pods that
// fragmentation-aware placers measure against. A task's GPU models are its request's,
// or else those its node selector and affinity pin by GPU model label.
func workload(jobs []*framework.Job, gm *gpuModels) framework.Workload {
	type shape struct {
		cpu           int64
		count         int
		milli, memory int64
		models        string
	}
	counts := map[shape]int{}
	var order []shape
	total := 0
	for _, j := range jobs {
		for _, t := range j.Tasks {
			models := t.GPU.Models
			if len(models) == 0 {
				models = gm.of(t)
			}
			k := shape{t.Request.MilliCPU, t.GPU.Count, t.GPU.Milli, t.GPU.MemoryMiB, strings.Join(models, "|")}
			if counts[k] == 0 {
				order = append(order, k)
			}
			counts[k]++
			total++
		}
	}
	w := make(framework.Workload, 0, len(order))
	for _, k := range order {
		w = append(w, framework.PodShape{MilliCPU: k.cpu, P: float64(counts[k]) / float64(total),
			GPU: framework.GPURequest{Count: k.count, Milli: k.milli, MemoryMiB: k.memory, Models: modelList(k.models)}})
	}
	return w
}

func modelList(joined string) []string {
	if joined == "" {
		return nil
	}
	return strings.Split(joined, "|")
}
