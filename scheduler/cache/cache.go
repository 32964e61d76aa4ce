package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// Objects are the kinds the cache watches.
func Objects() []client.Object {
	return []client.Object{&corev1.Pod{}, &corev1.Node{}, &tesserav1.GPUNode{}, &tesserav1.Queue{}, &tesserav1.PodGroup{},
		&schedulingv1.PriorityClass{}, &policyv1.PodDisruptionBudget{}, &corev1.Namespace{}, &batchv1.Job{}}
}

// Options are the controller-runtime cache options the scheduler's manager needs:
// managedFields and last-applied annotations stripped from every object, and Lists that
// hand out the cached objects without copying them (the snapshot builder only reads).
func Options() crcache.Options {
	yes := true
	return crcache.Options{DefaultTransform: strip, DefaultUnsafeDisableDeepCopy: &yes}
}

// strip drops what the scheduler never reads, to keep the cache small at 50,000 pods.
func strip(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	delete(o.GetAnnotations(), corev1.LastAppliedConfigAnnotation)
	if p, ok := obj.(*corev1.Pod); ok {
		p.Status.Conditions = nil
		p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses = nil, nil, nil
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			c.Env, c.EnvFrom, c.VolumeMounts, c.Command, c.Args = nil, nil, nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
		}
	}
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
		n.Status.Conditions = nil
	}
	return obj, nil
}

// Cache builds snapshots from informer-fed state.
type Cache struct {
	reader client.Reader
	opts   snapshot.Options

	mu      sync.Mutex
	assumed map[types.UID]assumption
	changed chan struct{}
}

// assumption is a decision the informers have not reported back yet.
type assumption struct {
	node       string
	assignment string // tessera.dev/gpu-assignment, "" for pods without GPUs
	evicted    bool
	at         time.Time
}

// assumeTTL bounds how long an assumption outlives its informer confirmation; a bind
// the API server accepted shows up in the watch well within it.
const assumeTTL = 30 * time.Second

// New returns a cache reading from c. Options.SchedulerName and friends are passed on
// to snapshot.Builder; PriorityClasses are read from the cluster.
func New(c client.Reader, opts snapshot.Options) *Cache {
	return &Cache{reader: c, opts: opts, assumed: map[types.UID]assumption{}, changed: make(chan struct{}, 1)}
}

// Watch registers event handlers on the informers of every watched kind, so Changed
// fires when one changes. Call it once, before the informers start or after.
func (c *Cache) Watch(ctx context.Context, informers crcache.Informers) error {
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.notify() },
		UpdateFunc: func(any, any) { c.notify() },
		DeleteFunc: func(any) { c.notify() },
	}
	for _, o := range Objects() {
		inf, err := informers.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", o, err)
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("event handler for %T: %w", o, err)
		}
	}
	return nil
}

func (c *Cache) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Changed receives a value after a watched object changed since the last receive.
func (c *Cache) Changed() <-chan struct{} { return c.changed }

// Assume records that pod uid was bound to node with the given GPU assignment, until
// the informer shows it bound.
func (c *Cache) Assume(uid types.UID, node, assignment string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assumed[uid] = assumption{node: node, assignment: assignment, at: now}
}

// AssumeEvicted records that pod uid is being evicted, until the informer shows it
// terminating or gone.
func (c *Cache) AssumeEvicted(uid types.UID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assumed[uid] = assumption{evicted: true, at: now}
}

// Forget drops what Assume recorded (a bind that failed).
func (c *Cache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.assumed, uid)
}

// State is the state a snapshot was built from, for writers that need the API objects
// behind the snapshot's jobs.
type State struct {
	Builder   *snapshot.Builder
	Pods      map[types.UID]*corev1.Pod
	PodGroups map[string]*tesserav1.PodGroup // namespace/name
	Queues    map[string]*tesserav1.Queue
	Jobs      map[string]*batchv1.Job // namespace/name
	Nodes     map[string]*corev1.Node
	GPUNodes  map[string]*tesserav1.GPUNode
}

// Snapshot lists the cached objects and builds a snapshot taken at now, with the
// assumed binds and evictions applied. The errors are the objects the builder left out
// or partly ignored; err is set only when the cache cannot be read.
func (c *Cache) Snapshot(ctx context.Context, now time.Time) (*framework.Snapshot, *State, []error, error) {
	var (
		pods   corev1.PodList
		nodes  corev1.NodeList
		gnodes tesserav1.GPUNodeList
		queues tesserav1.QueueList
		groups tesserav1.PodGroupList
		pcs    schedulingv1.PriorityClassList
		pdbs   policyv1.PodDisruptionBudgetList
		nss    corev1.NamespaceList
		jobs   batchv1.JobList
	)
	for _, l := range []client.ObjectList{&pods, &nodes, &gnodes, &queues, &groups, &pcs, &pdbs, &nss, &jobs} {
		if err := c.reader.List(ctx, l); err != nil {
			return nil, nil, nil, fmt.Errorf("list %T from the cache: %w", l, err)
		}
	}
	opts := c.opts
	opts.PriorityClasses = make(map[string]int32, len(pcs.Items))
	for i := range pcs.Items {
		opts.PriorityClasses[pcs.Items[i].Name] = pcs.Items[i].Value
	}
	b := snapshot.NewBuilder(now, opts)
	st := &State{Builder: b, Pods: make(map[types.UID]*corev1.Pod, len(pods.Items)), PodGroups: map[string]*tesserav1.PodGroup{},
		Queues: map[string]*tesserav1.Queue{}, Jobs: map[string]*batchv1.Job{}, Nodes: map[string]*corev1.Node{}, GPUNodes: map[string]*tesserav1.GPUNode{}}
	for i := range gnodes.Items {
		st.GPUNodes[gnodes.Items[i].Name] = &gnodes.Items[i]
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		st.Nodes[n.Name] = n
		b.AddNode(n, st.GPUNodes[n.Name])
	}
	addAll(queues.Items, st.Queues, b.AddQueue)
	addAll(groups.Items, st.PodGroups, b.AddPodGroup)
	addAll(nss.Items, nil, b.AddNamespace)
	addAll(jobs.Items, st.Jobs, b.AddJob)
	addAll(pdbs.Items, nil, b.AddPDB)
	c.mu.Lock()
	seen := make(map[types.UID]bool, len(c.assumed))
	for i := range pods.Items {
		p := &pods.Items[i]
		if a, ok := c.assumed[p.UID]; ok {
			seen[p.UID] = true
			p = c.apply(p, a, now)
		}
		st.Pods[p.UID] = p
		b.AddPod(p, opts.PriorityClasses[p.Spec.PriorityClassName])
	}
	for uid := range c.assumed {
		if !seen[uid] {
			delete(c.assumed, uid) // the pod is gone
		}
	}
	c.mu.Unlock()
	snap, errs := b.Build()
	return snap, st, errs, nil
}

// addAll hands each listed object to add and, when index is not nil, records it there
// by namespace/name (name for cluster-scoped kinds).
func addAll[T any, P interface {
	*T
	client.Object
}](items []T, index map[string]P, add func(P)) {
	for i := range items {
		o := P(&items[i])
		if index != nil {
			key := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				key = ns + "/" + key
			}
			index[key] = o
		}
		add(o)
	}
}

// apply returns the pod as the assumption says it is, or the cached pod (dropping the
// assumption) once the informer has caught up or the assumption expired. Called with
// c.mu held; the cached pod is never modified.
func (c *Cache) apply(p *corev1.Pod, a assumption, now time.Time) *corev1.Pod {
	caughtUp := (a.evicted && p.DeletionTimestamp != nil) || (!a.evicted && p.Spec.NodeName != "")
	if caughtUp || now.Sub(a.at) > assumeTTL {
		delete(c.assumed, p.UID)
		return p
	}
	cp := *p
	if a.evicted {
		ts := metav1.NewTime(now)
		cp.DeletionTimestamp = &ts
		return &cp
	}
	cp.Spec.NodeName = a.node
	if a.assignment != "" {
		cp.Annotations = make(map[string]string, len(p.Annotations)+1)
		for k, v := range p.Annotations {
			cp.Annotations[k] = v
		}
		cp.Annotations[tesserav1.AnnotationGPUAssign] = a.assignment
	}
	return &cp
}
