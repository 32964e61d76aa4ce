package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/podrequests"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

// Objects are the kinds the cache watches.
func Objects() []client.Object {
	return []client.Object{&corev1.Pod{}, &corev1.Node{}, &tesserav1.GPUNode{}, &tesserav1.Queue{}, &tesserav1.PodGroup{},
		&schedulingv1.PriorityClass{}, &policyv1.PodDisruptionBudget{}, &corev1.Namespace{}, &batchv1.Job{}}
}

// ServedWorkloads are the workload kinds whose objects size gangs (see
// workloads.Kinds) that the API server serves: the cache watches those, as unstructured
// objects. A kind whose CRD is installed later is watched from the next restart.
func ServedWorkloads(mapper apimeta.RESTMapper) []workloads.Kind {
	var out []workloads.Kind
	for _, k := range workloads.Kinds() {
		gvk, _ := k.GVK()
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// ServedKinds sums up what the scheduler and the autoscaler set their watches up for:
// the workload kinds and whether DRA is served (for controller.KindsWatch).
func ServedKinds(mapper apimeta.RESTMapper) string {
	return KindsSummary(ServedWorkloads(mapper), ServesDRA(mapper))
}

// KindsSummary is ServedKinds of what was looked up already.
func KindsSummary(kinds []workloads.Kind, dra bool) string {
	return fmt.Sprintf("workloads %v, DRA %v", kinds, dra)
}

// ServesDRA reports whether the API server serves Dynamic Resource Allocation's
// resource.k8s.io/v1 (ResourceSlices, ResourceClaims, DeviceClasses).
func ServesDRA(mapper apimeta.RESTMapper) bool {
	for _, kind := range []string{"ResourceSlice", "ResourceClaim", "DeviceClass"} {
		if _, err := mapper.RESTMapping(resourcev1.SchemeGroupVersion.WithKind(kind).GroupKind(), resourcev1.SchemeGroupVersion.Version); err != nil {
			return false
		}
	}
	return true
}

// draObjects are the Dynamic Resource Allocation kinds the cache watches when dra is set.
func draObjects(dra bool) []client.Object {
	if !dra {
		return nil
	}
	return []client.Object{&resourcev1.ResourceSlice{}, &resourcev1.ResourceClaim{}, &resourcev1.DeviceClass{}}
}

// workloadObjects are empty unstructured objects of the workload kinds given.
func workloadObjects(kinds []workloads.Kind) []client.Object {
	out := make([]client.Object, 0, len(kinds))
	for _, k := range kinds {
		gvk, _ := k.GVK()
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		out = append(out, o)
	}
	return out
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
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status") // a workload's size is in its spec
	}
	if p, ok := obj.(*corev1.Pod); ok {
		// A pending pod keeps its PodScheduled condition, which the status writer updates.
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return p.Spec.NodeName != "" || c.Type != corev1.PodScheduled
		})
		p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses = nil, nil, nil
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			c.Env, c.EnvFrom, c.VolumeMounts, c.Command, c.Args = nil, nil, nil, nil, nil
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
			limitsToRequests(&c.Resources)
		}
		for i := range p.Spec.InitContainers {
			limitsToRequests(&p.Spec.InitContainers[i].Resources)
		}
	}
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
		n.Status.Conditions = nil
	}
	return obj, nil
}

// limitsToRequests drops a container's limits once they fill the requests it leaves
// out: the scheduler reads requests only, and limits are a good part of a cached pod.
func limitsToRequests(r *corev1.ResourceRequirements) {
	r.Requests, r.Limits = podrequests.DefaultedRequests(*r), nil
}

// Cache builds snapshots from informer-fed state. Without Watch every snapshot lists
// the objects from the reader and converts only the nodes and pods that changed since
// the last one (a snapshot.Memo). Once Watch's event handlers have seen every
// informer's objects, the cache is a maintained model: the events update the objects
// it keeps and a snapshot.Builder, assumed binds and evictions are applied to the
// builder as they are made, and a snapshot assembles again only the jobs that changed.
type Cache struct {
	reader client.Reader
	opts   snapshot.Options

	mu      sync.Mutex
	assumed map[types.UID]assumption
	changed chan struct{}
	// objects is what the event handlers reported, by kind and namespace/name; synced
	// reports whether each handler has seen its informer's initial list.
	objects *objects
	synced  []func() bool
	// live is the builder the event handlers keep up to date; pcsChanged says that
	// the priority classes changed since the last snapshot.
	live       *snapshot.Builder
	pcsChanged bool

	// build serializes snapshots, which share memo.
	build sync.Mutex
	memo  *snapshot.Memo
}

// objects are the watched objects by namespace/name (name for cluster-scoped kinds).
type objects struct {
	pods   map[string]*corev1.Pod
	byUID  map[types.UID]*corev1.Pod
	nodes  map[string]*corev1.Node
	gnodes map[string]*tesserav1.GPUNode
	queues map[string]*tesserav1.Queue
	groups map[string]*tesserav1.PodGroup
	pcs    map[string]*schedulingv1.PriorityClass
	pdbs   map[string]*policyv1.PodDisruptionBudget
	nss    map[string]*corev1.Namespace
	jobs   map[string]*batchv1.Job
	wls    map[string]*unstructured.Unstructured // by workloads.ObjectKey
	claims map[string]*resourcev1.ResourceClaim
	rslice map[string]*resourcev1.ResourceSlice
	dclass map[string]*resourcev1.DeviceClass
}

func newObjects() *objects {
	return &objects{pods: map[string]*corev1.Pod{}, byUID: map[types.UID]*corev1.Pod{}, nodes: map[string]*corev1.Node{}, gnodes: map[string]*tesserav1.GPUNode{},
		queues: map[string]*tesserav1.Queue{}, groups: map[string]*tesserav1.PodGroup{}, pcs: map[string]*schedulingv1.PriorityClass{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, nss: map[string]*corev1.Namespace{}, jobs: map[string]*batchv1.Job{},
		wls: map[string]*unstructured.Unstructured{}, claims: map[string]*resourcev1.ResourceClaim{},
		rslice: map[string]*resourcev1.ResourceSlice{}, dclass: map[string]*resourcev1.DeviceClass{}}
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

// handlerSyncWait bounds how long a snapshot waits for event handlers that are
// registered but have not yet seen every object the informers listed. Until they have,
// a snapshot lists the objects instead: a second copy of every pod, and a second
// builder, beside the one the handlers are filling (at 5,000 nodes and 35,000 pending
// pods, the first session's peak memory). Handlers catch up within a second or two of
// the informers' sync; the wait only ends in a list when they do not.
const handlerSyncWait = 10 * time.Second

// New returns a cache reading from c. Options.SchedulerName and friends are passed on
// to snapshot.Builder; PriorityClasses are read from the cluster.
func New(c client.Reader, opts snapshot.Options) *Cache {
	return &Cache{reader: c, opts: opts, assumed: map[types.UID]assumption{}, changed: make(chan struct{}, 1), memo: snapshot.NewMemo()}
}

// Watch registers event handlers on the informers of every watched kind, so Changed
// fires when one changes and the cache keeps the objects the events report. Call it
// once, before the informers start or after.
func (c *Cache) Watch(ctx context.Context, informers crcache.Informers) error {
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.observe(o, false) },
		UpdateFunc: func(_, o any) { c.observe(o, false) },
		DeleteFunc: func(o any) { c.observe(o, true) },
	}
	c.mu.Lock()
	if c.objects == nil {
		c.track()
	}
	c.mu.Unlock()
	for _, o := range c.watched() {
		inf, err := informers.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", o, err)
		}
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return fmt.Errorf("event handler for %T: %w", o, err)
		}
		c.mu.Lock()
		c.synced = append(c.synced, reg.HasSynced)
		c.mu.Unlock()
	}
	return nil
}

// track starts keeping the objects the events report, and a builder of them; called
// with c.mu held.
func (c *Cache) track() {
	c.objects = newObjects()
	c.live = snapshot.NewBuilder(time.Time{}, c.opts).WithMemo(c.memo)
}

// observe records an added, updated or deleted object.
func (c *Cache) observe(obj any, deleted bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	key := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	c.mu.Lock()
	if os := c.objects; os != nil {
		switch o := o.(type) {
		case *corev1.Pod:
			if old := os.pods[key]; old != nil {
				delete(os.byUID, old.UID)
			}
			record(os.pods, key, o, deleted)
			if !deleted {
				os.byUID[o.UID] = o
			}
		case *corev1.Node:
			record(os.nodes, key, o, deleted)
		case *tesserav1.GPUNode:
			record(os.gnodes, key, o, deleted)
		case *tesserav1.Queue:
			record(os.queues, key, o, deleted)
		case *tesserav1.PodGroup:
			record(os.groups, key, o, deleted)
		case *schedulingv1.PriorityClass:
			record(os.pcs, key, o, deleted)
		case *policyv1.PodDisruptionBudget:
			record(os.pdbs, key, o, deleted)
		case *corev1.Namespace:
			record(os.nss, key, o, deleted)
		case *batchv1.Job:
			record(os.jobs, key, o, deleted)
		case *resourcev1.ResourceClaim:
			record(os.claims, key, o, deleted)
		case *resourcev1.ResourceSlice:
			record(os.rslice, key, o, deleted)
		case *resourcev1.DeviceClass:
			record(os.dclass, key, o, deleted)
		case *unstructured.Unstructured:
			if k, ok := workloads.KindOf(o.GroupVersionKind()); ok {
				record(os.wls, workloads.ObjectKey(k, o.GetNamespace(), o.GetName()), o, deleted)
			}
		}
		c.feed(o, deleted)
	}
	c.mu.Unlock()
	c.notify()
}

// feed hands an observed change to the live builder; called with c.mu held.
func (c *Cache) feed(o client.Object, deleted bool) {
	b, os := c.live, c.objects
	switch o := o.(type) {
	case *corev1.Pod:
		if deleted {
			b.RemovePod(o.Namespace, o.Name)
		} else {
			c.addPod(o)
		}
	case *corev1.Node:
		if deleted {
			b.RemoveNode(o.Name)
		} else {
			b.AddNode(o, os.gnodes[o.Name])
		}
	case *tesserav1.GPUNode:
		if n := os.nodes[o.Name]; n != nil {
			b.AddNode(n, os.gnodes[o.Name])
		}
	case *tesserav1.Queue:
		change(o, deleted, b.AddQueue, func(_, name string) { b.RemoveQueue(name) })
	case *tesserav1.PodGroup:
		change(o, deleted, b.AddPodGroup, b.RemovePodGroup)
	case *schedulingv1.PriorityClass:
		c.pcsChanged = true
	case *policyv1.PodDisruptionBudget:
		change(o, deleted, b.AddPDB, b.RemovePDB)
	case *corev1.Namespace:
		change(o, deleted, b.AddNamespace, func(_, name string) { b.RemoveNamespace(name) })
	case *batchv1.Job:
		change(o, deleted, b.AddJob, b.RemoveJob)
	case *resourcev1.ResourceClaim:
		change(o, deleted, b.AddResourceClaim, b.RemoveResourceClaim)
	case *resourcev1.ResourceSlice:
		change(o, deleted, b.AddResourceSlice, func(_, name string) { b.RemoveResourceSlice(name) })
	case *resourcev1.DeviceClass:
		change(o, deleted, b.AddDeviceClass, func(_, name string) { b.RemoveDeviceClass(name) })
	case *unstructured.Unstructured:
		if k, ok := workloads.KindOf(o.GroupVersionKind()); ok {
			change(o, deleted, b.AddWorkload, func(ns, name string) { b.RemoveWorkload(k, ns, name) })
		}
	}
}

// change adds o, or removes it by namespace and name when it was deleted.
func change[T client.Object](o T, deleted bool, add func(T), remove func(namespace, name string)) {
	if deleted {
		remove(o.GetNamespace(), o.GetName())
	} else {
		add(o)
	}
}

// addPod hands the cached pod to the live builder as its assumption, if any, says it
// is; called with c.mu held.
func (c *Cache) addPod(p *corev1.Pod) {
	if a, ok := c.assumed[p.UID]; ok {
		p = c.apply(p, a, a.at)
	}
	var prio int32
	if pc := c.objects.pcs[p.Spec.PriorityClassName]; pc != nil {
		prio = pc.Value
	}
	c.live.AddPod(p, prio)
}

func record[T any](m map[string]*T, key string, o *T, deleted bool) {
	if deleted {
		delete(m, key)
	} else {
		m[key] = o
	}
}

// watching reports whether the event handlers have seen every informer's objects;
// called with c.mu held.
func (c *Cache) watching() bool {
	return c.objects != nil && len(c.synced) == len(c.watched()) && allSynced(c.synced)
}

// watched are the kinds Watch registers handlers on: Objects, the served workload kinds
// and, with DRA, its kinds.
func (c *Cache) watched() []client.Object {
	return slices.Concat(Objects(), workloadObjects(c.opts.Workloads), draObjects(c.opts.DRA))
}

func allSynced(synced []func() bool) bool {
	for _, f := range synced {
		if !f() {
			return false
		}
	}
	return true
}

// awaitHandlers waits, up to handlerSyncWait, for registered event handlers to see
// every object; it returns at once when no handlers are registered (a cache without
// Watch lists every time).
func (c *Cache) awaitHandlers(ctx context.Context) {
	c.mu.Lock()
	registered := c.objects != nil && len(c.synced) == len(c.watched())
	if !registered || allSynced(c.synced) {
		c.mu.Unlock()
		return // nothing to wait for: the common case, every session once synced
	}
	synced := slices.Clone(c.synced)
	c.mu.Unlock()
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, handlerSyncWait, false, func(context.Context) (bool, error) {
		return allSynced(synced), nil
	})
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
	a := assumption{node: node, assignment: assignment, at: now}
	old, renewed := c.assumed[uid]
	c.assumed[uid] = a
	if old.at = now; renewed && old == a {
		return // the same assumption, renewed: the builder has it already
	}
	c.refresh(uid)
}

// AssumeEvicted records that pod uid is being evicted, until the informer shows it
// terminating or gone.
func (c *Cache) AssumeEvicted(uid types.UID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assumed[uid] = assumption{evicted: true, at: now}
	c.refresh(uid)
}

// Forget drops what Assume recorded (a bind that failed).
func (c *Cache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.assumed, uid)
	c.refresh(uid)
}

// refresh hands pod uid to the live builder again after its assumption changed;
// called with c.mu held.
func (c *Cache) refresh(uid types.UID) {
	if c.live == nil {
		return
	}
	if p := c.objects.byUID[uid]; p != nil {
		c.addPod(p)
	}
}

// State is the state a snapshot was built from, for writers that need the API objects
// behind the snapshot's jobs.
type State struct {
	Pods      map[types.UID]*corev1.Pod
	PodGroups map[string]*tesserav1.PodGroup // namespace/name
	Queues    map[string]*tesserav1.Queue
	Jobs      map[string]*batchv1.Job // namespace/name
	Nodes     map[string]*corev1.Node
	GPUNodes  map[string]*tesserav1.GPUNode
	// Claims are the ResourceClaims by namespace/name, and Devices the GPUs published
	// for Dynamic Resource Allocation (both empty where the cluster does not serve it).
	Claims  map[string]*resourcev1.ResourceClaim
	Devices *snapshot.Devices
}

// input is the objects one snapshot is built from.
type input struct {
	pods   []*corev1.Pod
	nodes  []*corev1.Node
	gnodes []*tesserav1.GPUNode
	queues []*tesserav1.Queue
	groups []*tesserav1.PodGroup
	pcs    []*schedulingv1.PriorityClass
	pdbs   []*policyv1.PodDisruptionBudget
	nss    []*corev1.Namespace
	jobs   []*batchv1.Job
	wls    []*unstructured.Unstructured
	claims []*resourcev1.ResourceClaim
	rslice []*resourcev1.ResourceSlice
	dclass []*resourcev1.DeviceClass
}

// Snapshot builds a snapshot taken at now from the cached objects, with the assumed
// binds and evictions applied. The errors are the objects the builder left out or
// partly ignored; err is set only when the cache cannot be read. The snapshot is valid
// until the next Snapshot call, which reuses its tasks and jobs.
func (c *Cache) Snapshot(ctx context.Context, now time.Time) (*framework.Snapshot, *State, []error, error) {
	c.build.Lock()
	defer c.build.Unlock()
	c.awaitHandlers(ctx)
	c.mu.Lock()
	if c.watching() {
		defer c.mu.Unlock()
		snap, st, errs := c.maintained(now)
		return snap, st, errs, nil
	}
	// Until every handler has synced, the events update the live builder, and through
	// it the memo, under c.mu while this builds without it: a memo is not safe for
	// concurrent use, so these few snapshots convert every object.
	memo := c.memo
	if c.live != nil {
		memo = nil
	}
	c.mu.Unlock()
	in, err := c.list(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	snap, st, errs := c.snapshot(&in, now, memo)
	return snap, st, errs, nil
}

// maintained builds the snapshot from the live builder, once the assumptions that
// expired or whose pods are gone are dropped; called with c.mu held.
func (c *Cache) maintained(now time.Time) (*framework.Snapshot, *State, []error) {
	os := c.objects
	if c.pcsChanged {
		c.pcsChanged = false
		c.live.SetPriorityClasses(priorityClasses(slices.Collect(maps.Values(os.pcs))))
		for _, p := range os.pods {
			c.addPod(p)
		}
	}
	for uid, a := range c.assumed {
		switch p := os.byUID[uid]; {
		case p == nil:
			delete(c.assumed, uid) // the pod is gone
		case now.Sub(a.at) > assumeTTL:
			delete(c.assumed, uid)
			c.addPod(p)
		}
	}
	c.live.SetNow(now)
	snap, errs := c.live.Build()
	st := &State{Pods: maps.Clone(os.byUID), PodGroups: maps.Clone(os.groups), Queues: maps.Clone(os.queues),
		Jobs: maps.Clone(os.jobs), Nodes: maps.Clone(os.nodes), GPUNodes: maps.Clone(os.gnodes),
		Claims: maps.Clone(os.claims), Devices: c.live.Devices()}
	for uid, a := range c.assumed {
		if p := st.Pods[uid]; p != nil {
			st.Pods[uid] = c.apply(p, a, a.at)
		}
	}
	return snap, st, errs
}

// list reads every watched kind from the reader.
func (c *Cache) list(ctx context.Context) (input, error) {
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
			return input{}, fmt.Errorf("list %T from the cache: %w", l, err)
		}
	}
	in := input{pods: pointers(pods.Items), nodes: pointers(nodes.Items), gnodes: pointers(gnodes.Items), queues: pointers(queues.Items),
		groups: pointers(groups.Items), pcs: pointers(pcs.Items), pdbs: pointers(pdbs.Items), nss: pointers(nss.Items), jobs: pointers(jobs.Items)}
	for _, k := range c.opts.Workloads {
		gvk, _ := k.GVK()
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.reader.List(ctx, l); err != nil {
			return input{}, fmt.Errorf("list %s from the cache: %w", k, err)
		}
		in.wls = append(in.wls, pointers(l.Items)...)
	}
	if c.opts.DRA {
		var (
			claims resourcev1.ResourceClaimList
			rslice resourcev1.ResourceSliceList
			dclass resourcev1.DeviceClassList
		)
		for _, l := range []client.ObjectList{&claims, &rslice, &dclass} {
			if err := c.reader.List(ctx, l); err != nil {
				return input{}, fmt.Errorf("list %T from the cache: %w", l, err)
			}
		}
		in.claims, in.rslice, in.dclass = pointers(claims.Items), pointers(rslice.Items), pointers(dclass.Items)
	}
	return in, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// snapshot builds the snapshot of in, with the assumed binds and evictions applied,
// through memo (nil: converting every object).
func (c *Cache) snapshot(in *input, now time.Time, memo *snapshot.Memo) (*framework.Snapshot, *State, []error) {
	opts := c.opts
	opts.PriorityClasses, opts.DefaultPriorityClass = priorityClasses(in.pcs)
	b := snapshot.NewBuilder(now, opts)
	if memo != nil {
		b.WithMemo(memo)
	}
	st := &State{Pods: make(map[types.UID]*corev1.Pod, len(in.pods)), PodGroups: make(map[string]*tesserav1.PodGroup, len(in.groups)),
		Queues: make(map[string]*tesserav1.Queue, len(in.queues)), Jobs: make(map[string]*batchv1.Job, len(in.jobs)),
		Nodes: make(map[string]*corev1.Node, len(in.nodes)), GPUNodes: make(map[string]*tesserav1.GPUNode, len(in.gnodes)),
		Claims: make(map[string]*resourcev1.ResourceClaim, len(in.claims))}
	for _, g := range in.gnodes {
		st.GPUNodes[g.Name] = g
	}
	for _, n := range in.nodes {
		st.Nodes[n.Name] = n
		b.AddNode(n, st.GPUNodes[n.Name])
	}
	addAll(in.queues, st.Queues, b.AddQueue)
	addAll(in.groups, st.PodGroups, b.AddPodGroup)
	addAll(in.nss, nil, b.AddNamespace)
	addAll(in.jobs, st.Jobs, b.AddJob)
	addAll(in.pdbs, nil, b.AddPDB)
	addAll(in.wls, nil, b.AddWorkload)
	addAll(in.claims, st.Claims, b.AddResourceClaim)
	addAll(in.rslice, nil, b.AddResourceSlice)
	addAll(in.dclass, nil, b.AddDeviceClass)
	st.Devices = b.Devices()
	c.mu.Lock()
	seen := make(map[types.UID]bool, len(c.assumed))
	for _, p := range in.pods {
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
	return snap, st, errs
}

// priorityClasses are the classes' values by name, and the name of the one with
// globalDefault ("" for none; of several, the API server's choice: the lowest value).
func priorityClasses(pcs []*schedulingv1.PriorityClass) (map[string]int32, string) {
	values := make(map[string]int32, len(pcs))
	def, defValue := "", int32(0)
	for _, pc := range pcs {
		values[pc.Name] = pc.Value
		if pc.GlobalDefault && (def == "" || pc.Value < defValue || (pc.Value == defValue && pc.Name < def)) {
			def, defValue = pc.Name, pc.Value
		}
	}
	return values, def
}

// addAll hands each listed object to add and, when index is not nil, records it there
// by namespace/name (name for cluster-scoped kinds).
func addAll[T any, P interface {
	*T
	client.Object
}](items []P, index map[string]P, add func(P)) {
	for _, o := range items {
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
