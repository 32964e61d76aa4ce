package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// Job keys name the job a pod belongs to: its PodGroup, its workload (see
// workloadJobKey), its batch Job, or itself.
func groupJobKey(namespace, name string) string { return "pg:" + namespace + "/" + name }
func ownerJobKey(namespace, name string) string { return "job:" + namespace + "/" + name }
func podJobKey(namespace, name string) string   { return "pod:" + namespace + "/" + name }

// jobKey is the key of the job a pod belongs to. Another scheduler's pod is a job of
// its own; one of ours belongs to the PodGroup its tessera.dev/pod-group label names,
// else to its workload's gang (a JobSet, a RayCluster...: see workloads.Of), else to
// the PodGroup Volcano's group annotation names, else to its batch Job owner, else is
// a job of its own.
func (b *Builder) jobKey(p *corev1.Pod) string {
	if p.Spec.SchedulerName != b.opts.SchedulerName {
		return podJobKey(p.Namespace, p.Name)
	}
	if g := p.Labels[tesserav1.LabelPodGroup]; g != "" {
		return groupJobKey(p.Namespace, g)
	}
	if r, ok := b.workloadOf(p); ok {
		return b.workloadKey(p, r)
	}
	if g := p.Annotations[tesserav1.VolcanoGroupName]; g != "" {
		return groupJobKey(p.Namespace, g)
	}
	if o := jobOwner(p); o != nil {
		return ownerJobKey(p.Namespace, o.Name)
	}
	return podJobKey(p.Namespace, p.Name)
}

// PodGroupName is the PodGroup a pod names by its tessera.dev/pod-group label or
// Volcano's group-name annotation; "" for none.
func PodGroupName(p *corev1.Pod) string {
	if g := p.Labels[tesserav1.LabelPodGroup]; g != "" {
		return g
	}
	return p.Annotations[tesserav1.VolcanoGroupName]
}

// buildJobs assembles the jobs whose inputs changed since the last build (all of them
// when s.all), keeps the memo's jobs in snapshot order, and hands out every job.
func (s *build) buildJobs() {
	m := s.memo
	var keys []string
	if s.all {
		clear(m.jobs)
		clear(m.failed)
		clear(m.order) // the array becomes the spare: keep none of the old jobs alive
		m.order = m.order[:0]
		keys = slices.Collect(maps.Keys(s.members))
	} else {
		keys = slices.Collect(maps.Keys(s.dirty))
	}
	var fresh []*jobMemo
	for _, key := range keys {
		if e := s.assemble(key); e != nil && len(e.tasks) > 0 {
			fresh = append(fresh, e)
		}
	}
	if len(keys) > 0 {
		m.reorder(fresh)
	}
	for _, key := range slices.Sorted(maps.Keys(m.failed)) {
		s.errs = append(s.errs, m.jobs[key].errs...)
	}
	s.emit()
}

// assemble converts the pods of job key into tasks and decides the job's gang size,
// priority, creation time and queue name. It returns nil when the job has no pods.
func (s *build) assemble(key string) *jobMemo {
	m := s.memo
	e := m.jobs[key]
	if e != nil {
		e.built = m.gen // out of the order until placed again
	}
	delete(m.failed, key)
	pods := s.members[key]
	if len(pods) == 0 {
		delete(m.jobs, key)
		return nil
	}
	m.assembled++
	if e == nil {
		e = &jobMemo{key: key, live: new(framework.Job), built: m.gen}
		m.jobs[key] = e
	}
	clear(e.tasks)
	*e = jobMemo{key: key, live: e.live, built: m.gen, tasks: e.tasks[:0], scalars: e.scalars[:0], classes: e.classes[:0]}
	// Pods of one job share a namespace: by key is by name.
	for _, pk := range slices.Sorted(slices.Values(pods)) {
		ta, err := s.task(pk)
		if err != nil {
			e.errs = append(e.errs, err)
		}
		if ta != nil {
			e.tasks = append(e.tasks, ta)
			for k := range ta.task.Request.Scalar {
				if !slices.Contains(e.scalars, k) {
					e.scalars = append(e.scalars, k)
				}
			}
		}
	}
	if len(e.tasks) > 0 {
		if first := e.tasks[0]; first.pod.Spec.SchedulerName != s.opts.SchedulerName {
			s.foreignJob(e)
		} else {
			s.jobOf(e)
			expectedRuntime(e)
			s.gangSize(e)
			s.finishJob(e)
		}
		e.sortKey = e.tmpl.Key()
	}
	if len(e.errs) > 0 {
		m.failed[key] = true
	}
	return e
}

// task converts the pod with key into a task with its status; nil (and no error) for
// pods that are not scheduled and hold nothing.
func (s *build) task(key string) (*taskAcc, error) {
	in := s.pods[key]
	p := in.pod
	if p.Name == "" {
		return nil, objErr("Pod", p.Namespace, "", "metadata.name", "is empty")
	}
	bound := p.Spec.NodeName != ""
	ours := p.Spec.SchedulerName == s.opts.SchedulerName
	switch {
	case !ours && (!bound || finished(p)):
		return nil, nil // another scheduler's pod that holds nothing
	case !bound && p.DeletionTimestamp != nil:
		return nil, nil // a pending pod being deleted is not scheduled
	}
	pm, t, err := s.memo.pod(key, p, s.opts.WholeGPUs && ours)
	if err != nil {
		return nil, err
	}
	if len(p.Spec.ResourceClaims) > 0 {
		if err := s.claimGPU(p, t); err != nil {
			return nil, err
		}
	}
	prio := in.priority
	if p.Spec.Priority != nil {
		prio = *p.Spec.Priority
	}
	t.StartTime = time.Time{}
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
	t.Preemptible = ours && preemptible(p)
	t.CheckpointEvery, t.CheckpointedAt = checkpoints(p)
	ta := &taskAcc{task: t, pod: p, priority: prio, memo: pm, node: -1}
	if bound && t.Status.Holds() {
		n := s.nodes[p.Spec.NodeName]
		if n == nil {
			return nil, objErr("Pod", p.Namespace, p.Name, "spec.nodeName", "node %q is not in the snapshot; the pod is left out", p.Spec.NodeName)
		}
		ta.node = n.Index
		ta.assignment, ta.hasAssignment = p.Annotations[tesserav1.AnnotationGPUAssign]
	}
	return ta, nil
}

// foreignJob makes another scheduler's bound pod a running job of one, without a
// queue, that is never preempted.
func (s *build) foreignJob(e *jobMemo) {
	ta := e.tasks[0]
	p := ta.pod
	e.foreign = true
	e.tmpl = framework.Job{Name: p.Name, Namespace: p.Namespace, UID: ta.task.UID, Priority: ta.priority,
		MinMember: 1, Created: p.CreationTimestamp.Time, Inqueue: true}
}

// jobOf fills the job from what its first pod says it belongs to: its PodGroup, else
// its batch Job owner, else itself.
func (s *build) jobOf(e *jobMemo) {
	ta := e.tasks[0]
	p := ta.pod
	j := &e.tmpl
	*j = framework.Job{Namespace: p.Namespace, MinMember: 1}
	if strings.HasPrefix(e.key, "wl:") {
		r, _ := workloads.Of(p)
		s.workloadJob(e, r)
		return
	}
	group := PodGroupName(p)
	owner := jobOwner(p)
	switch {
	case group != "":
		j.Name = group
		if pg := s.podGroups[p.Namespace+"/"+group]; pg != nil {
			e.group = pg
			j.UID = uidOr(string(pg.UID), e.key)
			j.Created = pg.CreationTimestamp.Time
			j.MinMember = max(int(pg.Spec.MinMember), 1)
			j.MinResources = framework.FromResourceList(pg.Spec.MinResources)
			j.MinRuntime = tesserav1.DurationOrZero(pg.Spec.MinRuntime)
			if pg.Spec.Topology != nil {
				j.Topology = framework.TopologySpec{Required: pg.Spec.Topology.Required, Preferred: pg.Spec.Topology.Preferred}
			}
			j.Inqueue = pg.Status.Phase == tesserav1.PodGroupInqueue || pg.Status.Phase == tesserav1.PodGroupRunning
		} else {
			e.implicit = true
			j.UID = e.key
		}
	case owner != nil:
		j.Name = owner.Name
		e.implicit = true
		j.UID = uidOr(owner.UID, e.key)
		if bj := s.jobs[p.Namespace+"/"+owner.Name]; bj != nil && (owner.UID == "" || bj.UID == "" || string(bj.UID) == owner.UID) {
			e.owner = bj
			j.Created = bj.CreationTimestamp.Time
		}
	default:
		j.Name = p.Name
		j.UID = ta.task.UID
	}
}

// expectedRuntime fills the job's runtime class and its declared runtime: the
// expected-runtime annotation of its pod, PodGroup or Job, else the activeDeadlineSeconds
// of its Job or pod. An annotation that does not parse is ignored.
func expectedRuntime(e *jobMemo) {
	j, p := &e.tmpl, e.tasks[0].pod
	j.Class = p.Labels["tessera.dev/runtime"] // the workload's runtime class (webhooks.AnnotationRuntime)
	annotations := []map[string]string{p.Annotations}
	if e.group != nil {
		annotations = append(annotations, e.group.Annotations)
	}
	if e.owner != nil {
		annotations = append(annotations, e.owner.Annotations)
	}
	for _, a := range annotations {
		if d, err := time.ParseDuration(a[tesserav1.AnnotationExpectedRuntime]); err == nil && d > 0 {
			j.ExpectedRuntime = d
			return
		}
	}
	switch {
	case e.owner != nil && e.owner.Spec.ActiveDeadlineSeconds != nil && *e.owner.Spec.ActiveDeadlineSeconds > 0:
		j.ExpectedRuntime = time.Duration(*e.owner.Spec.ActiveDeadlineSeconds) * time.Second
	case p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds > 0:
		j.ExpectedRuntime = time.Duration(*p.Spec.ActiveDeadlineSeconds) * time.Second
	}
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

// finishJob decides the job's priority, creation time and the queue its pods name.
func (s *build) finishJob(e *jobMemo) {
	j := &e.tmpl
	prio, fromClass := int32(0), false
	if e.group != nil && e.group.Spec.PriorityClassName != "" {
		prio, fromClass = s.opts.PriorityClasses[e.group.Spec.PriorityClassName]
	}
	if e.group != nil && e.group.Spec.PriorityClassName != "" {
		e.classes = append(e.classes, e.group.Spec.PriorityClassName)
	}
	created := j.Created
	for i, ta := range e.tasks {
		if c := ta.pod.Spec.PriorityClassName; !slices.Contains(e.classes, c) {
			e.classes = append(e.classes, c)
		}
		if !fromClass && (i == 0 || ta.priority > prio) {
			prio = ta.priority
		}
		if c := ta.pod.CreationTimestamp.Time; j.Created.IsZero() && (created.IsZero() || c.Before(created)) {
			created = c
		}
		if e.queue == "" {
			e.queue, e.queueKey = podQueue(ta.pod)
			e.queuePod = ta.pod.Name
		}
		if ta.task.Status.Holds() || ta.task.Status == framework.TaskSucceeded {
			j.Inqueue = true
		}
	}
	j.Created = created
	j.Priority = prio
}

// gangSize sets minMember of gangs implied by a label or a batch Job: the
// tessera.dev/min-available (or Volcano group-min-member) annotation of a pod, else the
// Job's annotation or parallelism, else every pod of a Job's gang. A label gang with
// neither a PodGroup nor a declared size is held: the pods that exist now are not
// always the whole gang (controllers create pods in waves).
func (s *build) gangSize(e *jobMemo) {
	if !e.implicit {
		return
	}
	j := &e.tmpl
	for _, ta := range e.tasks {
		p := ta.pod
		for _, key := range []string{tesserav1.AnnotationMinAvailable, tesserav1.VolcanoGroupMinMember} {
			n, ok, err := minAvailable("Pod", p.Namespace, p.Name, p.Annotations, key)
			if err != nil {
				e.errs = append(e.errs, err)
			}
			if ok {
				j.MinMember = n
				return
			}
		}
	}
	if bj := e.owner; bj != nil {
		n, ok, err := minAvailable("Job", bj.Namespace, bj.Name, bj.Annotations, tesserav1.AnnotationMinAvailable)
		if err != nil {
			e.errs = append(e.errs, err)
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
	j.MinMember = max(len(e.tasks), 1)
	if strings.HasPrefix(e.key, "pg:") {
		j.Held = &framework.Reason{Code: framework.ReasonGangSizeUnknown, Message: fmt.Sprintf(
			"PodGroup %s does not exist and no pod declares the gang's size; create the PodGroup or set the annotation %s on the pods",
			j.Key(), tesserav1.AnnotationMinAvailable)}
	}
}

// reorder keeps m.order in snapshot order, by creation time then namespace/name:
// the jobs assembled this build (fresh) leave their old places and are merged in.
func (m *Memo) reorder(fresh []*jobMemo) {
	order := func(a, b *jobMemo) int {
		if c := a.tmpl.Created.Compare(b.tmpl.Created); c != 0 {
			return c
		}
		if c := cmp.Compare(a.sortKey, b.sortKey); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	}
	slices.SortFunc(fresh, order)
	out := m.spare[:0]
	i := 0
	for _, e := range m.order {
		if e.built == m.gen {
			continue // assembled again (in fresh when it has tasks) or gone
		}
		for ; i < len(fresh) && order(fresh[i], e) < 0; i++ {
			out = append(out, fresh[i])
		}
		out = append(out, e)
	}
	out = append(out, fresh[i:]...)
	clear(m.order)
	m.spare, m.order = m.order[:0], out
}

// emit hands out every job in order: a fresh copy of each task, the job linked to its
// queue, the tasks that hold resources listed for placement.
func (s *build) emit() {
	for _, e := range s.memo.order {
		for _, k := range e.scalars {
			s.scalars[k] = true
		}
		j := e.live
		tasks := j.Tasks[:0]
		*j = e.tmpl
		j.MinResources = e.tmpl.MinResources.Clone()
		if !e.foreign {
			s.assignQueue(e, j)
		}
		for _, ta := range e.tasks {
			t := ta.memo.instance()
			ta.live = t
			if len(s.exhausted) > 0 && ta.pod.Spec.NodeName != "" && s.protected(ta.pod) {
				t.Preemptible = false
			}
			t.Job = j
			tasks = append(tasks, t)
			if t.Status.Holds() {
				s.placed = append(s.placed, ta)
			}
		}
		clear(tasks[len(tasks):cap(tasks)])
		j.Tasks = tasks
		if len(tasks) > 0 {
			s.snap.Jobs = append(s.snap.Jobs, j)
		}
	}
}

// assignQueue links the job to its queue: the PodGroup's spec.queue, else the queue a
// pod names, else the namespace's default, else Options.DefaultQueue. A queue that does
// not exist, or whose namespace selector or allowed priority classes exclude the job,
// does not take it: the job is refused (Job.Refused says why) and charged to the
// unqueued queue, where what its running pods hold may be reclaimed by any queue and
// its pending pods wait.
func (s *build) assignQueue(e *jobMemo, j *framework.Job) {
	name, field := "", ""
	if e.group != nil && e.group.Spec.Queue != "" {
		name, field = e.group.Spec.Queue, "PodGroup "+j.Key()+" spec.queue"
	} else if e.queue != "" {
		name, field = e.queue, "pod "+j.Namespace+"/"+e.queuePod+" "+e.queueKey
	} else if ns := s.namespaces[j.Namespace]; ns != nil && ns.Annotations[tesserav1.AnnotationQueue] != "" {
		name, field = ns.Annotations[tesserav1.AnnotationQueue], "namespace "+j.Namespace+" annotation "+tesserav1.AnnotationQueue
	} else {
		name = s.opts.DefaultQueue
	}
	q, a := s.queues[name], s.access[name]
	if q == nil && name == s.opts.DefaultQueue {
		q = &framework.Queue{Name: name, Weight: 1, Reclaimable: true, Capability: framework.Unlimited.Clone(),
			MaxMinRuntime: tesserav1.DefaultMaxMinRuntime}
		s.addQueue(q)
	}
	if q == nil {
		named := ""
		if field != "" {
			named = " (named by " + field + ")"
		}
		s.refuse(j, framework.ReasonQueueNotFound, fmt.Sprintf("queue %q does not exist%s; create the Queue or name another", name, named))
		return
	}
	var nsLabels labels.Labels
	if a.selected != nil {
		nsLabels = s.namespaceLabels(j.Namespace)
	}
	if msg := a.refuses(name, j.Namespace, nsLabels, e.classes, s.opts.DefaultPriorityClass); msg != "" {
		s.refuse(j, framework.ReasonQueueRefused, msg)
		return
	}
	j.Queue = q
}

// refuse charges the job to the unqueued queue, for the reason given.
func (s *build) refuse(j *framework.Job, code, msg string) {
	if s.unqueued == nil {
		s.unqueued = &framework.Queue{Name: framework.UnqueuedQueue, Weight: 1, Reclaimable: true, Unqueued: true,
			Capability: framework.Unlimited.Clone(), MaxMinRuntime: tesserav1.DefaultMaxMinRuntime}
		s.addQueue(s.unqueued)
	}
	j.Queue = s.unqueued
	j.Refused = &framework.Reason{Code: code, Message: msg + "; its pending pods wait and what its running pods hold may be reclaimed"}
}

// addQueue adds a queue no Queue object defines to the snapshot.
func (s *build) addQueue(q *framework.Queue) {
	s.queues[q.Name] = q
	s.snap.Queues = append(s.snap.Queues, q)
	slices.SortFunc(s.snap.Queues, func(a, b *framework.Queue) int { return strings.Compare(a.Name, b.Name) })
}

// namespaceLabels are the labels of namespace ns, which always include
// kubernetes.io/metadata.name (the API server sets it; a namespace the builder was not
// given has only that one).
func (s *build) namespaceLabels(ns string) labels.Labels {
	if l, ok := s.nsLabels[ns]; ok {
		return l
	}
	set := labels.Set{corev1.LabelMetadataName: ns}
	if o := s.namespaces[ns]; o != nil {
		set = labels.Merge(o.Labels, set)
	}
	s.nsLabels[ns] = set
	return set
}
