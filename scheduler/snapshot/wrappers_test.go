package snapshot

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// epoch is the reference creation time of test objects.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// nodeW builds a corev1.Node.
type nodeW struct{ n corev1.Node }

func makeNode(name string) *nodeW {
	return &nodeW{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}}
}

// gpus advertises count GPUs of model with memMiB each through allocatable resources.
func (w *nodeW) gpus(count int, model string, memMiB int64) *nodeW {
	w.n.Status.Allocatable[tesserav1.ResourceGPU] = *resource.NewQuantity(int64(count), resource.DecimalSI)
	w.n.Status.Allocatable[tesserav1.ResourceGPUMemory] = *resource.NewQuantity(int64(count)*memMiB, resource.DecimalSI)
	w.n.Labels[tesserav1.LabelGPUModel] = model
	return w
}
func (w *nodeW) alloc(name corev1.ResourceName, q string) *nodeW {
	w.n.Status.Allocatable[name] = resource.MustParse(q)
	return w
}
func (w *nodeW) label(k, v string) *nodeW { w.n.Labels[k] = v; return w }
func (w *nodeW) taint(k string) *nodeW {
	w.n.Spec.Taints = append(w.n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
	return w
}
func (w *nodeW) unschedulable() *nodeW { w.n.Spec.Unschedulable = true; return w }
func (w *nodeW) obj() *corev1.Node     { return &w.n }

// gpuNode publishes count healthy GPUs for node name, two NVLink islands, listed in reverse.
func gpuNode(name string, count int) *tesserav1.GPUNode {
	g := &tesserav1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i := count - 1; i >= 0; i-- {
		g.Status.Devices = append(g.Status.Devices, tesserav1.GPUDevice{Index: int32(i), UUID: uuid(name, i), Model: "NVIDIA H100 80GB HBM3",
			MemoryMiB: 81559, NUMANode: int32(i * 2 / count), Island: int32(i / 4), Healthy: true})
	}
	return g
}

func uuid(node string, i int) string { return "GPU-" + node + "-" + string(rune('0'+i)) }

// podW builds a corev1.Pod that Tessera schedules.
type podW struct{ p corev1.Pod }

func makePod(ns, name string) *podW {
	return &podW{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(epoch)},
		Spec: corev1.PodSpec{SchedulerName: "tessera", Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (w *podW) req(name corev1.ResourceName, q string) *podW {
	w.p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	return w
}
func (w *podW) gpu(n string) *podW         { return w.req(tesserav1.ResourceGPU, n) }
func (w *podW) gpuMemory(mib string) *podW { return w.req(tesserav1.ResourceGPUMemory, mib) }
func (w *podW) label(k, v string) *podW    { w.p.Labels = set(w.p.Labels, k, v); return w }
func (w *podW) annotate(k, v string) *podW { w.p.Annotations = set(w.p.Annotations, k, v); return w }
func (w *podW) queue(q string) *podW       { return w.label(tesserav1.LabelQueue, q) }
func (w *podW) group(g string) *podW       { return w.label(tesserav1.LabelPodGroup, g) }
func (w *podW) scheduler(s string) *podW   { w.p.Spec.SchedulerName = s; return w }
func (w *podW) created(d time.Duration) *podW {
	w.p.CreationTimestamp = metav1.NewTime(epoch.Add(d))
	return w
}
func (w *podW) priority(p int32) *podW { w.p.Spec.Priority = &p; return w }
func (w *podW) phase(ph corev1.PodPhase) *podW {
	w.p.Status.Phase = ph
	return w
}

// on binds the pod to node and marks it running since start.
func (w *podW) on(node string, start time.Time) *podW {
	w.p.Spec.NodeName = node
	w.p.Status.Phase = corev1.PodRunning
	w.p.Status.StartTime = &metav1.Time{Time: start}
	return w
}
func (w *podW) ownedByJob(name string) *podW {
	w.p.OwnerReferences = append(w.p.OwnerReferences, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID("uid-" + name)})
	return w
}
func (w *podW) assign(node string, uuids ...string) *podW {
	return w.annotate(tesserav1.AnnotationGPUAssign, tesserav1.GPUAssignment{Node: node,
		Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: uuids}}}.Encode())
}
func (w *podW) obj() *corev1.Pod { return &w.p }

func set(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func makeQueue(name string) *tesserav1.Queue {
	return &tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func makePodGroup(ns, name, queue string, min int32) *tesserav1.PodGroup {
	return &tesserav1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-pg-" + name), CreationTimestamp: metav1.NewTime(epoch)},
		Spec: tesserav1.PodGroupSpec{MinMember: min, Queue: queue}}
}

func makeJob(ns, name string, parallelism int32) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(epoch)},
		Spec: batchv1.JobSpec{Parallelism: &parallelism}}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}
