package capi_test

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale/idlereclaim"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// idleWorkloads are workloads of every kind idle reclaim suspends, in their own Queue
// (spec.idleReclaim, not a dry run), each with one running pod on a 16-GPU node "idle"
// that no ScaleDownPolicy selects. sample writes the next GPUNode sample, a minute of
// idle GPUs after the last; suspended reports the workloads not suspended yet.
type idleWorkloads struct {
	h     *harness
	gn    *tesserav1.GPUNode
	at    time.Time
	objs  []*unstructured.Unstructured
	gpu   int
	queue string
}

// workloadDocs are the workloads, with the path of the field that suspends them
// (nil: spec.replicas goes to 0). A Job, a JobSet through its child Job, a RayJob
// through its RayCluster, a RayCluster, an MPIJob, a PyTorchJob, a Deployment through
// its ReplicaSet, a StatefulSet, a LeaderWorkerSet through its StatefulSet.
var workloadDocs = []struct {
	doc     string
	suspend []string
	through string // the kind of the object between the workload and its pod
}{
	{`{apiVersion: batch/v1, kind: Job, metadata: {name: job}, spec: {template: {spec: {restartPolicy: Never, containers: [{name: main, image: trainer}]}}}}`,
		[]string{"spec", "suspend"}, ""},
	{`{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: jobset}, spec: {replicatedJobs: [{name: w, replicas: 1, template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: main, image: trainer}]}}}}}]}}`,
		[]string{"spec", "suspend"}, "Job"},
	{`{apiVersion: ray.io/v1, kind: RayJob, metadata: {name: rayjob}, spec: {entrypoint: python train.py}}`,
		[]string{"spec", "suspend"}, "RayCluster"},
	{`{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: raycluster}, spec: {headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: head, image: ray}]}}}}}`,
		[]string{"spec", "suspend"}, ""},
	{`{apiVersion: kubeflow.org/v2beta1, kind: MPIJob, metadata: {name: mpijob}, spec: {mpiReplicaSpecs: {Worker: {replicas: 1, template: {spec: {containers: [{name: main, image: trainer}]}}}}}}`,
		[]string{"spec", "runPolicy", "suspend"}, ""},
	{`{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pytorchjob}, spec: {pytorchReplicaSpecs: {Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: trainer}]}}}}}}`,
		[]string{"spec", "runPolicy", "suspend"}, ""},
	{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: deployment}, spec: {replicas: 2, selector: {matchLabels: {app: deployment}}, template: {metadata: {labels: {app: deployment}}, spec: {containers: [{name: main, image: server}]}}}}`,
		nil, "ReplicaSet"},
	{`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: statefulset}, spec: {replicas: 2, selector: {matchLabels: {app: statefulset}}, template: {metadata: {labels: {app: statefulset}}, spec: {containers: [{name: main, image: server}]}}}}`,
		nil, ""},
	{`{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: lws}, spec: {replicas: 2, leaderWorkerTemplate: {size: 1, workerTemplate: {spec: {containers: [{name: main, image: server}]}}}}}`,
		nil, "StatefulSet"},
}

func newIdleWorkloads(h *harness) *idleWorkloads {
	h.t.Helper()
	w := &idleWorkloads{h: h, at: time.Now(), queue: h.name("idle")}
	q := apitest.MakeQueue(w.queue).Label("test", h.ns).Obj()
	q.Spec.IdleReclaim = &tesserav1.IdleReclaim{IdleFor: &metav1.Duration{Duration: 5 * time.Minute}, GracePeriod: &metav1.Duration{Duration: 5 * time.Minute}, DryRun: ptr.To(false)}
	h.create(q)
	name := h.name("idle")
	node := apitest.MakeNode(name).GPUs(16, "A100-80GB", 81920).Allocatable(corev1.ResourceCPU, "64").
		Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110").Ready().Obj()
	h.nodes = append(h.nodes, name)
	if err := testenv.CreateNode(h.ctx, h.c, node); err != nil {
		h.t.Fatal(err)
	}
	gn := apitest.MakeGPUNode(name)
	for i := range 16 {
		gn.Device(tesserav1.GPUDevice{Index: int32(i), UUID: w.uuid(i), Model: "A100-80GB", MemoryMiB: 81920, Healthy: true})
	}
	w.gn = gn.Obj()
	status := w.gn.Status
	h.create(w.gn)
	w.gn.Status = status
	for _, d := range workloadDocs {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d.doc), &o.Object); err != nil {
			h.t.Fatal(err)
		}
		o.SetNamespace(h.ns)
		o.SetLabels(map[string]string{tesserav1.LabelQueue: w.queue})
		h.create(o)
		w.objs = append(w.objs, o)
		owner := client.Object(o)
		switch d.through {
		case "Job":
			j := apitest.MakeJob(o.GetName()+"-w-0", h.ns).Queue(w.queue).Obj()
			j.OwnerReferences = []metav1.OwnerReference{controllerRef(o)}
			h.create(j)
			owner = j
		case "RayCluster":
			rc := unstructuredOf(`{apiVersion: ray.io/v1, kind: RayCluster, metadata: {name: rayjob-raycluster}, spec: {headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: head, image: ray}]}}}}}`)
			rc.SetNamespace(h.ns)
			rc.SetOwnerReferences([]metav1.OwnerReference{controllerRef(o)})
			h.create(rc)
			owner = rc
		case "ReplicaSet", "StatefulSet":
			labels := map[string]string{"app": o.GetName()}
			tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "server"}}}}
			meta := metav1.ObjectMeta{Name: o.GetName() + "-x", Namespace: h.ns, OwnerReferences: []metav1.OwnerReference{controllerRef(o)}}
			sel := &metav1.LabelSelector{MatchLabels: labels}
			if d.through == "ReplicaSet" {
				owner = &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}
			} else {
				owner = &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl}}
			}
			h.create(owner)
		}
		w.pod(o.GetName()+"-0", owner)
	}
	w.pod("notebook", nil)
	return w
}

func unstructuredOf(doc string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
		panic(err)
	}
	return o
}

// controllerRef is a controller reference to o, of a kind the test's scheme knows or
// unstructured.
func controllerRef(o client.Object) metav1.OwnerReference {
	gvk, err := apiutil.GVKForObject(o, env.Scheme)
	if err != nil {
		panic(err)
	}
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(true)}
}

func (w *idleWorkloads) uuid(i int) string { return fmt.Sprintf("GPU-1d1e%04x-%04x", len(w.h.ns), i) }

// pod creates a running pod of the queue with one GPU, controlled by owner (nil: none).
func (w *idleWorkloads) pod(name string, owner client.Object) {
	h := w.h
	h.t.Helper()
	a := tesserav1.GPUAssignment{Node: h.name("idle"), Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container, UUIDs: []string{w.uuid(w.gpu)}}}}
	w.gpu++
	pw := apitest.MakePod(name, h.ns).Queue(w.queue).SchedulerName(tesserav1.SchedulerName).GPU(1).Assignment(a).NodeName(h.name("idle"))
	if owner != nil {
		pw.OwnerReference(controllerRef(owner))
	}
	p := pw.Obj()
	h.create(p)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := h.c.Status().Update(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
}

// sample reports the GPUs idle a minute after the last sample.
func (w *idleWorkloads) sample() {
	w.at = w.at.Add(time.Minute)
	w.gn.Status.ObservedTime = &metav1.Time{Time: w.at}
	if err := w.h.c.Status().Update(w.h.ctx, w.gn); err != nil {
		w.h.t.Fatal(err)
	}
}

// left lists the workloads not suspended yet, and the bare pod while it is not evicted.
func (w *idleWorkloads) left() []string {
	var out []string
	for i, o := range w.objs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		if err := w.h.c.Get(w.h.ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			out = append(out, o.GetKind()+": "+err.Error())
			continue
		}
		if f := workloadDocs[i].suspend; f != nil {
			if s, _, _ := unstructured.NestedBool(cur.Object, f...); !s {
				out = append(out, o.GetKind())
			}
			continue
		}
		n, _, _ := unstructured.NestedInt64(cur.Object, "spec", "replicas")
		if n != 0 || cur.GetAnnotations()[idlereclaim.AnnotationReplicas] != "2" {
			out = append(out, o.GetKind())
		}
	}
	var nb corev1.Pod
	if err := w.h.c.Get(w.h.ctx, client.ObjectKey{Namespace: w.h.ns, Name: "notebook"}, &nb); err == nil && nb.DeletionTimestamp == nil {
		out = append(out, "bare pod")
	}
	return out
}
