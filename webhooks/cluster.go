package webhooks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/policy"
)

// Queue and Namespace annotations the default policies read.
const (
	// AnnotationPriorityClass on a Queue or a Namespace names the default priorityClassName.
	AnnotationPriorityClass = "tessera.dev/priority-class"
	// AnnotationRuntime on a Queue ("short" or "long") is the default runtime of its jobs;
	// as a label on a workload it is the workload's own. Short jobs' gangs default to 80%
	// of their pods.
	AnnotationRuntime = "tessera.dev/runtime"
	// AnnotationRewriteNvidiaGPU "true" on a Namespace makes the gpu policy turn its
	// workloads' nvidia.com/gpu requests into tessera.dev/gpu.
	AnnotationRewriteNvidiaGPU = "tessera.dev/rewrite-nvidia-gpu"
)

// Cluster is the policy data shared by all requests until the cluster changes.
type Cluster struct {
	// Shared is the document at input.cluster.
	Shared *policy.Shared
	// PriorityClasses maps a PriorityClass name to its value.
	PriorityClasses map[string]int32
	// RightSizing maps the name of each queue whose spec.gpuRightSizing.mode is not Off
	// to its spec.gpuRightSizing.
	RightSizing map[string]tesserav1.GPURightSizing
	// MaxGPUMemoryMiB is the largest GPU's memory over all GPUNodes (0: none known).
	MaxGPUMemoryMiB int64
	// GPUNodes are the names of the nodes with GPUs (a GPUNode each), as at
	// input.cluster.gpuNodes.
	GPUNodes map[string]bool
}

// newCluster is the Cluster of the document ClusterDoc built from queues.
func newCluster(doc map[string]any, classes map[string]int32, queues []tesserav1.Queue) (*Cluster, error) {
	shared, err := policy.NewShared(doc)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Shared: shared, PriorityClasses: classes}
	c.MaxGPUMemoryMiB, _ = doc["maxGPUMemoryMiB"].(int64)
	if nodes, ok := doc["gpuNodes"].(map[string]any); ok {
		c.GPUNodes = make(map[string]bool, len(nodes))
		for n := range nodes {
			c.GPUNodes[n] = true
		}
	}
	for i := range queues {
		if rs := queues[i].Spec.GPURightSizing; rs != nil && rs.Mode != "" && rs.Mode != tesserav1.RightSizingOff {
			if c.RightSizing == nil {
				c.RightSizing = map[string]tesserav1.GPURightSizing{}
			}
			c.RightSizing[queues[i].Name] = *rs
		}
	}
	return c, nil
}

// Settings are the operator's admission settings, at input.cluster.settings.
type Settings struct {
	// SchedulerUsers are the scheduler's identity: exempt from the checks that keep
	// tenants from placing pods themselves (spec.nodeName, another schedulerName).
	SchedulerUsers []string
	// AllowedSchedulers may schedule GPU workloads besides tessera.
	AllowedSchedulers []string
	// SchedulerNameAliases mean tessera: a pod or pod template that names one gets
	// tessera instead, whatever it asks for. For the scheduler names operators' gang modes
	// write (volcano, scheduler-plugins-scheduler) once Tessera schedules in their place.
	SchedulerNameAliases []string
}

// Validate refuses aliases that would take pods Tessera must not take: "", tessera
// itself, default-scheduler (every pod that names none), and names also allowed to run
// beside Tessera (AllowedSchedulers).
func (s Settings) Validate() error {
	for _, a := range s.SchedulerNameAliases {
		switch {
		case a == "" || a == tesserav1.SchedulerName:
			return fmt.Errorf("--scheduler-name-alias=%q: an alias is the name of another scheduler that means %s", a, tesserav1.SchedulerName)
		case a == corev1.DefaultSchedulerName:
			return fmt.Errorf("--scheduler-name-alias=%q: it would hand Tessera every pod that names no scheduler", a)
		case slices.Contains(s.AllowedSchedulers, a):
			return fmt.Errorf("scheduler %q is in both --scheduler-name-alias (it means %s) and --allowed-scheduler (it schedules beside %s); keep it in one", a, tesserav1.SchedulerName, tesserav1.SchedulerName)
		}
	}
	return nil
}

func (s Settings) doc() map[string]any {
	list := func(v []string) []any {
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = x
		}
		return out
	}
	return map[string]any{"schedulerUsers": list(s.SchedulerUsers), "allowedSchedulers": list(s.AllowedSchedulers),
		"schedulerNameAliases": list(s.SchedulerNameAliases)}
}

// ClusterSource gives the handlers the cluster data and a request's namespace.
type ClusterSource interface {
	Cluster(ctx context.Context) (*Cluster, error)
	Namespace(ctx context.Context, name string) (*Namespace, error)
}

// ClusterDoc builds the input.cluster document:
//
//	queues:          {name: {capability, deserved, guarantee, priorityClassName, runtime, parent,
//	                  namespaceSelector: {matchLabels, matchExpressions: [{key, operator, values}]},
//	                  namespaceSelectorError, allowedPriorityClasses}}
//	maxGPUMemoryMiB: the largest GPU's memory over all GPUNodes (0: none known)
//	capacity:        {tessera.dev/gpu, nvidia.com/gpu: healthy GPUs; tessera.dev/gpu-memory: their MiB}
//	priorityClasses: {name: value}
//	defaultPriorityClass: the globalDefault PriorityClass (absent: none)
//	gpuNodes:        {node name: true} for every GPUNode
//
// CachedCluster adds settings: {schedulerUsers, allowedSchedulers, schedulerNameAliases} (Settings).
func ClusterDoc(queues []tesserav1.Queue, nodes []tesserav1.GPUNode, classes []schedulingv1.PriorityClass) (map[string]any, map[string]int32) {
	qs := make(map[string]any, len(queues))
	for i := range queues {
		q := &queues[i]
		info := map[string]any{
			"capability": resources(q.Spec.Capability),
			"deserved":   resources(q.Spec.Deserved),
			"guarantee":  resources(q.Spec.Guarantee),
		}
		setString(info, "priorityClassName", q.Annotations[AnnotationPriorityClass])
		setString(info, "runtime", q.Annotations[AnnotationRuntime])
		setString(info, "parent", q.Spec.Parent)
		queueAccess(info, &q.Spec)
		qs[q.Name] = info
	}
	var maxMiB, gpus, memMiB int64
	gpuNodes := make(map[string]any, len(nodes))
	for i := range nodes {
		gpuNodes[nodes[i].Name] = true
		for _, d := range nodes[i].Status.Devices {
			maxMiB = max(maxMiB, d.MemoryMiB)
			if d.Healthy {
				gpus++
				memMiB += d.MemoryMiB
			}
		}
	}
	pcs := make(map[string]int32, len(classes))
	pcDoc := make(map[string]any, len(classes))
	var globalDefault string
	for _, c := range classes {
		pcs[c.Name] = c.Value
		pcDoc[c.Name] = int64(c.Value)
		if c.GlobalDefault { // the API server allows one
			globalDefault = c.Name
		}
	}
	doc := map[string]any{
		"queues":          qs,
		"maxGPUMemoryMiB": maxMiB,
		"capacity": map[string]any{
			string(tesserav1.ResourceGPU):       gpus,
			string(tesserav1.ResourceNvidiaGPU): gpus,
			string(tesserav1.ResourceGPUMemory): memMiB,
		},
		"priorityClasses": pcDoc,
		"gpuNodes":        gpuNodes,
	}
	setString(doc, "defaultPriorityClass", globalDefault)
	return doc, pcs
}

// queueAccess adds who may use the queue to its document: namespaceSelector (absent:
// every namespace), namespaceSelectorError when the selector is not valid (the policies
// then let no namespace use the queue), allowedPriorityClasses (absent: any).
func queueAccess(info map[string]any, spec *tesserav1.QueueSpec) {
	if sel := spec.NamespaceSelector; sel != nil {
		exprs := make([]any, len(sel.MatchExpressions))
		for i, e := range sel.MatchExpressions {
			values := make([]any, len(e.Values))
			for j, v := range e.Values {
				values[j] = v
			}
			exprs[i] = map[string]any{"key": e.Key, "operator": string(e.Operator), "values": values}
		}
		info["namespaceSelector"] = map[string]any{"matchLabels": stringMap(sel.MatchLabels), "matchExpressions": exprs}
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			info["namespaceSelectorError"] = err.Error()
		}
	}
	if len(spec.AllowedPriorityClasses) > 0 {
		classes := make([]any, len(spec.AllowedPriorityClasses))
		for i, c := range spec.AllowedPriorityClasses {
			classes[i] = c
		}
		info["allowedPriorityClasses"] = classes
	}
}

// StaticCluster is a ClusterSource over fixed data (benchmarks, the simulator, tests).
type StaticCluster struct {
	Data       *Cluster
	Namespaces map[string]*Namespace
}

var _ ClusterSource = (*StaticCluster)(nil)

// NewStaticCluster builds a StaticCluster from API objects.
func NewStaticCluster(queues []tesserav1.Queue, nodes []tesserav1.GPUNode, classes []schedulingv1.PriorityClass, namespaces ...*Namespace) (*StaticCluster, error) {
	doc, pcs := ClusterDoc(queues, nodes, classes)
	data, err := newCluster(doc, pcs, queues)
	if err != nil {
		return nil, err
	}
	s := &StaticCluster{Data: data, Namespaces: map[string]*Namespace{}}
	for _, ns := range namespaces {
		s.Namespaces[ns.Name] = ns
	}
	return s, nil
}

// Cluster implements ClusterSource.
func (s *StaticCluster) Cluster(context.Context) (*Cluster, error) { return s.Data, nil }

// Namespace implements ClusterSource; an unknown namespace has no labels or annotations.
func (s *StaticCluster) Namespace(_ context.Context, name string) (*Namespace, error) {
	if ns, ok := s.Namespaces[name]; ok {
		return ns, nil
	}
	return &Namespace{Name: name}, nil
}

// CachedCluster reads Queues, GPUNodes, PriorityClasses and Namespaces through a
// client.Reader (an informer cache in the webhook). The cluster document is rebuilt
// after Invalidate (wired to informer events) or once MaxAge has passed.
type CachedCluster struct {
	Reader client.Reader
	// MaxAge bounds how stale the document may get without an Invalidate; 0 means 30s.
	MaxAge time.Duration
	// Settings appear at input.cluster.settings.
	Settings Settings

	dirty   atomic.Bool
	mu      sync.Mutex
	current *Cluster
	built   time.Time
}

var _ ClusterSource = (*CachedCluster)(nil)

// Invalidate makes the next request rebuild the cluster document.
func (c *CachedCluster) Invalidate() { c.dirty.Store(true) }

// Cluster implements ClusterSource.
func (c *CachedCluster) Cluster(ctx context.Context) (*Cluster, error) {
	maxAge := c.MaxAge
	if maxAge <= 0 {
		maxAge = 30 * time.Second
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil && !c.dirty.Load() && time.Since(c.built) < maxAge {
		return c.current, nil
	}
	c.dirty.Store(false)
	var queues tesserav1.QueueList
	if err := c.Reader.List(ctx, &queues); err != nil {
		return nil, fmt.Errorf("list queues for the policies: %w", err)
	}
	var nodes tesserav1.GPUNodeList
	if err := c.Reader.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list GPUNodes for the policies: %w", err)
	}
	var classes schedulingv1.PriorityClassList
	if err := c.Reader.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("list PriorityClasses for the policies: %w", err)
	}
	doc, pcs := ClusterDoc(queues.Items, nodes.Items, classes.Items)
	doc["settings"] = c.Settings.doc()
	current, err := newCluster(doc, pcs, queues.Items)
	if err != nil {
		return nil, err
	}
	c.current = current
	c.built = time.Now()
	return c.current, nil
}

// Namespace implements ClusterSource.
func (c *CachedCluster) Namespace(ctx context.Context, name string) (*Namespace, error) {
	if name == "" {
		return nil, nil
	}
	var ns corev1.Namespace
	if err := c.Reader.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return &Namespace{Name: name}, nil
		}
		return nil, fmt.Errorf("get namespace %s for the policies: %w", name, err)
	}
	return &Namespace{Name: name, Labels: ns.Labels, Annotations: ns.Annotations}, nil
}
