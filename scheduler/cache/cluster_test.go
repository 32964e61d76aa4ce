package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

// epoch is when the test objects are created.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cluster holds objects as an informer cache does, by kind and namespace/name, and
// lists them as the controller-runtime cache does without deep copies: the list's
// items are shallow copies of the stored objects.
type cluster struct {
	objs map[string]map[string]client.Object // kind -> key -> object
	rv   int
}

func newCluster() *cluster { return &cluster{objs: map[string]map[string]client.Object{}} }

func kindOf(o client.Object) string { return fmt.Sprintf("%T", o) }

func keyOf(o client.Object) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}

// put stores o (replacing the object of its key) with a new resourceVersion.
func (c *cluster) put(o client.Object) {
	c.rv++
	o.SetResourceVersion(fmt.Sprint(c.rv))
	k := kindOf(o)
	if c.objs[k] == nil {
		c.objs[k] = map[string]client.Object{}
	}
	c.objs[k][keyOf(o)] = o
}

func (c *cluster) del(o client.Object) { delete(c.objs[kindOf(o)], keyOf(o)) }

func (c *cluster) get(o client.Object) client.Object { return c.objs[kindOf(o)][keyOf(o)] }

func (c *cluster) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("not implemented")
}

func (c *cluster) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	switch l := l.(type) {
	case *corev1.PodList:
		l.Items = items[corev1.Pod](c, &corev1.Pod{})
	case *corev1.NodeList:
		l.Items = items[corev1.Node](c, &corev1.Node{})
	case *tesserav1.GPUNodeList:
		l.Items = items[tesserav1.GPUNode](c, &tesserav1.GPUNode{})
	case *tesserav1.QueueList:
		l.Items = items[tesserav1.Queue](c, &tesserav1.Queue{})
	case *tesserav1.PodGroupList:
		l.Items = items[tesserav1.PodGroup](c, &tesserav1.PodGroup{})
	case *schedulingv1.PriorityClassList:
		l.Items = items[schedulingv1.PriorityClass](c, &schedulingv1.PriorityClass{})
	case *policyv1.PodDisruptionBudgetList:
		l.Items = items[policyv1.PodDisruptionBudget](c, &policyv1.PodDisruptionBudget{})
	case *corev1.NamespaceList:
		l.Items = items[corev1.Namespace](c, &corev1.Namespace{})
	case *batchv1.JobList:
		l.Items = items[batchv1.Job](c, &batchv1.Job{})
	default:
		return fmt.Errorf("list %T: not implemented", l)
	}
	return nil
}

func items[T any](c *cluster, kind client.Object) []T {
	m := c.objs[kindOf(kind)]
	out := make([]T, 0, len(m))
	for _, o := range m {
		out = append(out, *any(o).(*T))
	}
	return out
}

// all returns every stored object.
func (c *cluster) all() []client.Object {
	var out []client.Object
	for _, m := range c.objs {
		for _, o := range m {
			out = append(out, o)
		}
	}
	return out
}

// gpuNodeName is the name of node i.
func gpuNodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// bigCluster is nodes nodes of 8 GPUs (every other one with a GPUNode) in racks of 20,
// four queues with a namespace each, and pods one-GPU pods: gangs of four with a
// PodGroup, batch Jobs of two and lone pods, 70% of the GPUs bound (with a device
// assignment) and the rest pending; and a PDB and a PriorityClass.
func bigCluster(nodes, pods int, rng *rand.Rand) *cluster {
	c := newCluster()
	c.put(&schedulingv1.PriorityClass{ObjectMeta: meta("high", ""), Value: 1000})
	for q := range 4 {
		name := fmt.Sprintf("team-%d", q)
		c.put(apitest.MakeQueue(name).Weight(int32(q + 1)).Obj())
		c.put(apitest.MakeNamespace(name).Annotation(tesserav1.AnnotationQueue, name).Obj())
	}
	maxAvail := intstr.FromInt32(0)
	c.put(&policyv1.PodDisruptionBudget{ObjectMeta: meta("keep", "team-0"),
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxAvail, Selector: apitestSelector("app", "keep")}})
	for i := range nodes {
		c.put(bigNode(i).Obj())
		if i%2 == 0 {
			c.put(apitest.MakeGPUNode(gpuNodeName(i)).GPUs(8, "H100", 81559).Obj())
		}
	}
	bound := min(pods, nodes*8*7/10)
	for i := range pods {
		c.put(bigPod(i, i < bound, nodes, rng).Obj())
		if i%20 == 0 && i+3 < pods {
			ns, g := fmt.Sprintf("team-%d", i%4), fmt.Sprintf("gang-%d", i)
			c.put(apitest.MakePodGroup(g, ns).UID("uid-pg-" + g).Created(epoch).MinMember(4).Obj())
		}
		if i%20 == 10 {
			ns, j := fmt.Sprintf("team-%d", i%4), fmt.Sprintf("job-%d", i)
			c.put(apitest.MakeJob(j, ns).UID("uid-" + j).Created(epoch).Parallelism(2).Obj())
		}
	}
	return c
}

func bigNode(i int) *apitest.NodeWrapper {
	name := gpuNodeName(i)
	return apitest.MakeNode(name).Label(corev1.LabelHostname, name).Label(tesserav1.LabelRack, fmt.Sprintf("rack-%d", i/20)).
		Label("topology.kubernetes.io/zone", fmt.Sprintf("zone-%d", i/1000)).
		Allocatable(corev1.ResourceCPU, "128").Allocatable(corev1.ResourceMemory, "1Ti").Allocatable(corev1.ResourcePods, "110").
		GPUs(8, "H100", 81559)
}

// bigPod is pod i of bigCluster: bound pods fill the nodes' GPUs in order (the first
// seven of every eight GPU slots), pending ones ask one GPU.
func bigPod(i int, bound bool, nodes int, rng *rand.Rand) *apitest.PodWrapper {
	ns := fmt.Sprintf("team-%d", i%4)
	name := fmt.Sprintf("pod-%06d", i)
	w := apitest.MakePod(name, ns).UID("uid-" + name).Created(epoch.Add(time.Duration(i) * time.Millisecond)).
		SchedulerName(tesserav1.SchedulerName).CPU("4").Memory("16Gi").GPU(1)
	switch base := i - i%20; {
	case i%20 < 4:
		w.Group(fmt.Sprintf("gang-%d", base))
	case i%20 == 10 || i%20 == 11:
		w.ControlledBy("Job", fmt.Sprintf("job-%d", base+10))
	}
	if i%100 == 7 {
		w.Label("app", "keep")
	}
	if i%50 == 3 {
		w.PriorityClass("high")
	}
	if bound {
		slot := i/7*8 + i%7 // seven pods per node
		node := gpuNodeName(slot / 8 % nodes)
		w.RunningOn(node, epoch.Add(time.Hour))
		if rng.IntN(10) > 0 {
			w.Assignment(tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container, UUIDs: []string{apitest.GPUUUID(node, slot%8)}}}})
		}
	} else {
		w.Phase(corev1.PodPending)
	}
	return w
}

func meta(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(epoch)}
}

func apitestSelector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}
