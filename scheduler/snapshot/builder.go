package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Options configure a Builder.
type Options struct {
	// TopologyLevels are the node label keys, narrowest first, that group nodes into
	// topology domains; default tesserav1.DefaultTopologyLevels.
	TopologyLevels []string
	// SchedulerName is the schedulerName of the pods to schedule; default "tessera".
	SchedulerName string
	// DefaultQueue is the queue of jobs that name none; default "default". It is
	// created (weight 1, no limits) when a job uses it and no Queue object defines it.
	DefaultQueue string
	// PriorityClasses resolves a PodGroup's spec.priorityClassName; a PodGroup whose
	// class is not listed takes the highest priority among its pods.
	PriorityClasses map[string]int32
	// WholeGPUs turns tessera.dev/gpu-memory slices into one whole GPU, for profiles
	// that cannot share GPUs (scheduler.Config.WholeGPUs).
	WholeGPUs bool
}

// Builder collects Kubernetes objects and converts them into a framework.Snapshot.
// Adding an object again (same kind and namespace/name) replaces it. A Builder is not
// safe for concurrent use.
type Builder struct {
	now        time.Time
	opts       Options
	nodes      map[string]nodeInput
	queues     map[string]*tesserav1.Queue
	podGroups  map[string]*tesserav1.PodGroup
	jobs       map[string]*batchv1.Job
	namespaces map[string]*corev1.Namespace
	pods       map[string]podInput
	pdbs       []*policyv1.PodDisruptionBudget
	memo       *Memo
}

type nodeInput struct {
	node *corev1.Node
	gpu  *tesserav1.GPUNode
}

type podInput struct {
	pod      *corev1.Pod
	priority int32
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
		jobs: map[string]*batchv1.Job{}, namespaces: map[string]*corev1.Namespace{}, pods: map[string]podInput{}}
}

// AddNode adds a node and, if the node agent published one, its GPUNode (g may be nil:
// then the GPUs are synthesized from the node's allocatable GPU resources and labels).
// A nil node is ignored.
func (b *Builder) AddNode(n *corev1.Node, g *tesserav1.GPUNode) {
	if n != nil {
		b.nodes[n.Name] = nodeInput{n, g}
	}
}

// AddQueue adds a queue. A nil queue is ignored.
func (b *Builder) AddQueue(q *tesserav1.Queue) {
	if q != nil {
		b.queues[q.Name] = q
	}
}

// AddPodGroup adds a gang. A nil PodGroup is ignored.
func (b *Builder) AddPodGroup(pg *tesserav1.PodGroup) {
	if pg != nil {
		b.podGroups[pg.Namespace+"/"+pg.Name] = pg
	}
}

// AddJob adds a batch Job, whose tessera.dev/min-available annotation or parallelism
// sizes the gang of its pods when the pods do not. A nil Job is ignored.
func (b *Builder) AddJob(j *batchv1.Job) {
	if j != nil {
		b.jobs[j.Namespace+"/"+j.Name] = j
	}
}

// AddNamespace adds a namespace, whose tessera.dev/queue annotation is the default
// queue of its pods. A nil Namespace is ignored.
func (b *Builder) AddNamespace(ns *corev1.Namespace) {
	if ns != nil {
		b.namespaces[ns.Name] = ns
	}
}

// AddPod adds a pod with the value of its priority class, resolved by the caller;
// spec.priority, when set, takes precedence. A nil pod is ignored.
func (b *Builder) AddPod(p *corev1.Pod, priority int32) {
	if p != nil {
		b.pods[p.Namespace+"/"+p.Name] = podInput{p, priority}
	}
}

// AddPDB adds a PodDisruptionBudget: the pods it selects are not preempted while it
// allows no disruption (the Eviction API would refuse them anyway). A nil PDB is ignored.
func (b *Builder) AddPDB(pdb *policyv1.PodDisruptionBudget) {
	if pdb != nil {
		b.pdbs = append(b.pdbs, pdb)
	}
}

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
	snap      *framework.Snapshot
	errs      []error
	nodes     map[string]*framework.Node
	queues    map[string]*framework.Queue
	jobs      map[string]*jobAcc
	scalars   map[corev1.ResourceName]bool
	placed    []*taskAcc // tasks that hold resources, in job order after sorting
	queueSpec map[string]corev1.ResourceList
	exhausted []exhausted
}

// jobAcc gathers one job's tasks before it is finished.
type jobAcc struct {
	job      *framework.Job
	group    *tesserav1.PodGroup // nil for implicit gangs
	owner    *batchv1.Job        // the batch Job, when the gang is implied by one
	implicit bool                // minMember still to be decided from the pods
	foreign  bool
	queue    string // explicit queue from the first pod that names one
	queueKey string // the label or annotation that named it
	queuePod string // the pod that named it
	tasks    []*taskAcc
}

type taskAcc struct {
	task     *framework.Task
	pod      *corev1.Pod
	priority int32
	memo     *podMemo // nil without a Memo
}

// Build converts the collected objects. Objects that cannot be converted are left out
// and reported; see ObjectError. Each call returns a new, independent snapshot.
func (b *Builder) Build() (*framework.Snapshot, []error) {
	s := &build{Builder: b,
		snap:      &framework.Snapshot{Now: b.now, TopologyLevels: slices.Clone(b.opts.TopologyLevels)},
		nodes:     map[string]*framework.Node{},
		queues:    map[string]*framework.Queue{},
		jobs:      map[string]*jobAcc{},
		scalars:   map[corev1.ResourceName]bool{},
		queueSpec: map[string]corev1.ResourceList{},
		exhausted: b.exhaustedPDBs(),
	}
	if b.memo != nil {
		b.memo.gen++
		b.memo.hits, b.memo.misses = 0, 0
	}
	s.buildNodes()
	s.buildQueues()
	s.buildJobs()
	s.place()
	s.finish()
	if b.memo != nil {
		b.memo.sweep(len(b.nodes), len(b.pods))
	}
	return s.snap, s.errs
}

func (s *build) fail(err error) { s.errs = append(s.errs, err) }

func (s *build) buildNodes() {
	for _, name := range slices.Sorted(maps.Keys(s.Builder.nodes)) {
		in := s.Builder.nodes[name]
		var n *framework.Node
		var err error
		if s.memo != nil {
			if n, err = s.memo.node(in.node, in.gpu); n != nil {
				n = cloneNode(n)
			}
		} else {
			n, err = convertNode(in.node, in.gpu)
		}
		if err != nil {
			s.fail(err)
			continue
		}
		n.Index = len(s.snap.Nodes)
		s.snap.Nodes = append(s.snap.Nodes, n)
		s.nodes[n.Name] = n
		for k := range n.Allocatable.Scalar {
			s.scalars[k] = true
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
	}
	s.errs = append(s.errs, linkQueues(s.snap.Queues, s.Builder.queues)...)
}

// buildJobs converts pods to tasks and groups them into jobs.
func (s *build) buildJobs() {
	for _, key := range slices.Sorted(maps.Keys(s.pods)) {
		in := s.pods[key]
		p := in.pod
		if p.Name == "" {
			s.fail(objErr("Pod", p.Namespace, "", "metadata.name", "is empty"))
			continue
		}
		bound := p.Spec.NodeName != ""
		ours := p.Spec.SchedulerName == s.opts.SchedulerName
		switch {
		case !ours && (!bound || finished(p)):
			continue // another scheduler's pod that holds nothing
		case !bound && p.DeletionTimestamp != nil:
			continue // a pending pod being deleted is not scheduled
		}
		var (
			t   *framework.Task
			err error
			pm  *podMemo
		)
		if s.memo != nil {
			if pm, t, err = s.memo.pod(key, p, s.opts.WholeGPUs && ours); t != nil {
				t = pm.instance()
			}
		} else {
			t, err = convertTask(p, s.opts.WholeGPUs && ours)
		}
		if err != nil {
			s.fail(err)
			continue
		}
		if len(s.exhausted) > 0 && bound && s.protected(p) {
			t.Preemptible = false
		}
		prio := in.priority
		if p.Spec.Priority != nil {
			prio = *p.Spec.Priority
		}
		switch {
		case finished(p):
			t.Status = framework.TaskSucceeded
		case p.DeletionTimestamp != nil:
			t.Status = framework.TaskReleasing
		case bound:
			t.Status = framework.TaskRunning
			if p.Status.StartTime != nil {
				t.StartTime = p.Status.StartTime.Time
			}
		default:
			t.Status = framework.TaskPending
		}
		if bound && t.Status.Holds() && s.nodes[p.Spec.NodeName] == nil {
			s.fail(objErr("Pod", p.Namespace, p.Name, "spec.nodeName", "node %q is not in the snapshot; the pod is left out", p.Spec.NodeName))
			continue
		}
		for k := range t.Request.Scalar {
			s.scalars[k] = true
		}
		ta := &taskAcc{task: t, pod: p, priority: prio, memo: pm}
		if !ours {
			t.Preemptible = false
			s.foreignJob(ta)
			continue
		}
		ja := s.jobFor(ta)
		ja.tasks = append(ja.tasks, ta)
	}
	s.finishJobs()
}

// foreignJob wraps another scheduler's bound pod as a running job of one, without a
// queue, that is never preempted.
func (s *build) foreignJob(ta *taskAcc) {
	p := ta.pod
	j := &framework.Job{Name: p.Name, Namespace: p.Namespace, UID: ta.task.UID, Priority: ta.priority,
		MinMember: 1, Created: p.CreationTimestamp.Time, Inqueue: true}
	s.jobs["pod:"+p.Namespace+"/"+p.Name] = &jobAcc{job: j, foreign: true, tasks: []*taskAcc{ta}}
}

// jobFor finds or creates the job of a pod: its PodGroup (label or Volcano annotation),
// else its batch Job owner, else a job of its own.
func (s *build) jobFor(ta *taskAcc) *jobAcc {
	p := ta.pod
	group := p.Labels[tesserav1.LabelPodGroup]
	if group == "" {
		group = p.Annotations[tesserav1.VolcanoGroupName]
	}
	var key, name string
	var owner *metav1OwnerRef
	switch {
	case group != "":
		key, name = "pg:"+p.Namespace+"/"+group, group
	default:
		if o := jobOwner(p); o != nil {
			owner = o
			key, name = "job:"+p.Namespace+"/"+o.Name, o.Name
		} else {
			key, name = "pod:"+p.Namespace+"/"+p.Name, p.Name
		}
	}
	if ja, ok := s.jobs[key]; ok {
		return ja
	}
	var j *framework.Job
	if s.memo != nil {
		j = s.memo.job(key)
		*j = framework.Job{Name: name, Namespace: p.Namespace, MinMember: 1, Tasks: j.Tasks[:0]}
	} else {
		j = &framework.Job{Name: name, Namespace: p.Namespace, MinMember: 1}
	}
	ja := &jobAcc{job: j}
	switch {
	case group != "":
		if pg := s.podGroups[p.Namespace+"/"+group]; pg != nil {
			ja.group = pg
			j.UID = uidOr(string(pg.UID), key)
			j.Created = pg.CreationTimestamp.Time
			j.MinMember = max(int(pg.Spec.MinMember), 1)
			j.MinResources = framework.FromResourceList(pg.Spec.MinResources)
			j.MinRuntime = tesserav1.DurationOrZero(pg.Spec.MinRuntime)
			if pg.Spec.Topology != nil {
				j.Topology = framework.TopologySpec{Required: pg.Spec.Topology.Required, Preferred: pg.Spec.Topology.Preferred}
			}
			j.Inqueue = pg.Status.Phase == tesserav1.PodGroupInqueue || pg.Status.Phase == tesserav1.PodGroupRunning
		} else {
			ja.implicit = true
			j.UID = key
		}
	case owner != nil:
		ja.implicit = true
		j.UID = uidOr(owner.UID, key)
		if bj := s.Builder.jobs[p.Namespace+"/"+owner.Name]; bj != nil && (owner.UID == "" || bj.UID == "" || string(bj.UID) == owner.UID) {
			ja.owner = bj
			j.Created = bj.CreationTimestamp.Time
		}
	default:
		j.UID = ta.task.UID
	}
	s.jobs[key] = ja
	return ja
}

// metav1OwnerRef is the part of an owner reference the builder needs.
type metav1OwnerRef struct{ Name, UID string }

// jobOwner returns the batch Job that owns the pod, if any.
func jobOwner(p *corev1.Pod) *metav1OwnerRef {
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" && (o.APIVersion == "" || strings.HasPrefix(o.APIVersion, "batch/")) && o.Name != "" {
			return &metav1OwnerRef{Name: o.Name, UID: string(o.UID)}
		}
	}
	return nil
}

// podQueue is the queue a pod names by label or annotation, and the field that names
// it; "" when none.
func podQueue(p *corev1.Pod) (string, string) {
	for _, k := range []string{tesserav1.LabelQueue, tesserav1.VolcanoQueueName, tesserav1.KueueQueueName} {
		if v := p.Labels[k]; v != "" {
			return v, "metadata.labels[" + k + "]"
		}
		if v := p.Annotations[k]; v != "" {
			return v, "metadata.annotations[" + k + "]"
		}
	}
	return "", ""
}

// finishJobs decides each job's gang size, priority, creation time and queue, and
// orders jobs and tasks.
func (s *build) finishJobs() {
	var accs []*jobAcc
	for _, key := range slices.Sorted(maps.Keys(s.jobs)) {
		ja := s.jobs[key]
		slices.SortFunc(ja.tasks, func(a, b *taskAcc) int { return strings.Compare(a.task.Name, b.task.Name) })
		if ja.foreign {
			accs = append(accs, ja)
			continue
		}
		s.gangSize(ja)
		j := ja.job
		prio, fromClass := int32(0), false
		if ja.group != nil && ja.group.Spec.PriorityClassName != "" {
			prio, fromClass = s.opts.PriorityClasses[ja.group.Spec.PriorityClassName]
		}
		created := j.Created
		for i, ta := range ja.tasks {
			if !fromClass && (i == 0 || ta.priority > prio) {
				prio = ta.priority
			}
			if c := ta.pod.CreationTimestamp.Time; j.Created.IsZero() && (created.IsZero() || c.Before(created)) {
				created = c
			}
			if ja.queue == "" {
				ja.queue, ja.queueKey = podQueue(ta.pod)
				ja.queuePod = ta.pod.Name
			}
			if ta.task.Status.Holds() || ta.task.Status == framework.TaskSucceeded {
				j.Inqueue = true
			}
		}
		j.Created = created
		j.Priority = prio
		if !s.assignQueue(ja) {
			continue
		}
		accs = append(accs, ja)
	}
	slices.SortStableFunc(accs, func(a, b *jobAcc) int {
		if c := a.job.Created.Compare(b.job.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.job.Key(), b.job.Key())
	})
	for _, ja := range accs {
		if len(ja.tasks) == 0 {
			continue
		}
		for _, ta := range ja.tasks {
			ta.task.Job = ja.job
			ja.job.Tasks = append(ja.job.Tasks, ta.task)
			if ta.task.Status.Holds() {
				s.placed = append(s.placed, ta)
			}
		}
		s.snap.Jobs = append(s.snap.Jobs, ja.job)
	}
}

// gangSize sets minMember of gangs implied by a label or a batch Job: the
// tessera.dev/min-available (or Volcano group-min-member) annotation of a pod, else the
// Job's annotation or parallelism, else every pod of the gang.
func (s *build) gangSize(ja *jobAcc) {
	if !ja.implicit {
		return
	}
	j := ja.job
	for _, ta := range ja.tasks {
		p := ta.pod
		for _, key := range []string{tesserav1.AnnotationMinAvailable, tesserav1.VolcanoGroupMinMember} {
			n, ok, err := minAvailable("Pod", p.Namespace, p.Name, p.Annotations, key)
			if err != nil {
				s.fail(err)
			}
			if ok {
				j.MinMember = n
				return
			}
		}
	}
	if bj := ja.owner; bj != nil {
		n, ok, err := minAvailable("Job", bj.Namespace, bj.Name, bj.Annotations, tesserav1.AnnotationMinAvailable)
		if err != nil {
			s.fail(err)
		}
		if ok {
			j.MinMember = n
			return
		}
		if bj.Spec.Parallelism != nil && *bj.Spec.Parallelism > 0 {
			j.MinMember = int(*bj.Spec.Parallelism)
			return
		}
	}
	j.MinMember = max(len(ja.tasks), 1)
}

// assignQueue links the job to its queue: the PodGroup's spec.queue, else the queue a
// pod names, else the namespace's default, else Options.DefaultQueue. A job that names
// an unknown queue is reported; its pending tasks are left out, its running ones are
// kept (without a queue) so that their nodes stay accounted. It reports whether the
// job stays in the snapshot.
func (s *build) assignQueue(ja *jobAcc) bool {
	j := ja.job
	name, field, kind := "", "", "Pod"
	objNS, objName := j.Namespace, j.Name
	if ja.group != nil && ja.group.Spec.Queue != "" {
		name, field, kind = ja.group.Spec.Queue, "spec.queue", "PodGroup"
	} else if ja.queue != "" {
		name, field, objName = ja.queue, ja.queueKey, ja.queuePod
	} else if ns := s.namespaces[j.Namespace]; ns != nil && ns.Annotations[tesserav1.AnnotationQueue] != "" {
		name, field, kind = ns.Annotations[tesserav1.AnnotationQueue], "metadata.annotations["+tesserav1.AnnotationQueue+"]", "Namespace"
		objNS, objName = "", j.Namespace
	} else {
		name = s.opts.DefaultQueue
	}
	if q := s.queues[name]; q != nil {
		j.Queue = q
		return true
	}
	if name == s.opts.DefaultQueue {
		q := &framework.Queue{Name: name, Weight: 1, Reclaimable: true, Capability: framework.Unlimited.Clone()}
		s.queues[name] = q
		s.snap.Queues = append(s.snap.Queues, q)
		slices.SortFunc(s.snap.Queues, func(a, b *framework.Queue) int { return strings.Compare(a.Name, b.Name) })
		j.Queue = q
		return true
	}
	s.fail(objErr(kind, objNS, objName, field, "queue %q does not exist; create the Queue or name another (job %s: pending pods are left out)", name, j.Key()))
	kept := ja.tasks[:0]
	for _, ta := range ja.tasks {
		if ta.task.Status.Holds() {
			kept = append(kept, ta)
		}
	}
	ja.tasks = kept
	return len(kept) > 0
}

// place puts the tasks that hold resources on their nodes: first those whose GPUs the
// tessera.dev/gpu-assignment annotation names, then the others on GPUs picked as the
// scheduler would.
func (s *build) place() {
	var later []*taskAcc
	for _, ta := range s.placed {
		if !ta.task.GPU.Any() {
			s.placeOn(ta, 0)
			continue
		}
		v, ok := ta.pod.Annotations[tesserav1.AnnotationGPUAssign]
		if !ok {
			later = append(later, ta)
			continue
		}
		set, err := s.assigned(ta, v)
		if err != nil {
			s.fail(err)
			later = append(later, ta)
			continue
		}
		s.placeOn(ta, set)
	}
	for _, ta := range later {
		n := s.nodes[ta.pod.Spec.NodeName]
		set := framework.PickGPUs(&ta.task.GPU, n)
		if set == 0 {
			s.fail(objErr("Pod", ta.pod.Namespace, ta.pod.Name, "spec.nodeName", "node %s has no free GPUs for the running pod's %s; it is counted without GPUs", n.Name, describeGPU(&ta.task.GPU)))
		}
		s.placeOn(ta, set)
	}
}

func (s *build) placeOn(ta *taskAcc, set framework.GPUSet) {
	n := s.nodes[ta.pod.Spec.NodeName]
	var milli int64
	if set != 0 {
		milli = ta.task.GPU.MilliOn(&n.GPUs[set.Indices()[0]])
	}
	n.Place(ta.task, set, milli)
}

// assigned maps the annotation's UUIDs to the node's GPUs.
func (s *build) assigned(ta *taskAcc, v string) (framework.GPUSet, error) {
	p, t := ta.pod, ta.task
	n := s.nodes[p.Spec.NodeName]
	var set framework.GPUSet
	var err error
	if pm := ta.memo; pm != nil {
		tmpl := s.memo.nodes[n.Name].out
		if pm.on != tmpl || pm.assignment != v {
			pm.set, pm.setErr = resolveAssignment(p, t, n, v)
			pm.on, pm.assignment = tmpl, v
		}
		set, err = pm.set, pm.setErr
	} else {
		set, err = resolveAssignment(p, t, n, v)
	}
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
