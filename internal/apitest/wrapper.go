package apitest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// wrapper is what every XWrapper embeds: the object T it builds, Obj, and the metadata
// setters, which return the XWrapper W so that calls chain.
type wrapper[W, T any] struct {
	self W
	obj  T
}

// init starts w from obj and returns self, the XWrapper that embeds w.
func (w *wrapper[W, T]) init(self W, obj T) W {
	w.self, w.obj = self, obj
	return self
}

// Obj returns the object (the wrapper's own: setters called later still change it).
func (w *wrapper[W, T]) Obj() *T { return &w.obj }

func (w *wrapper[W, T]) meta() *metav1.ObjectMeta {
	return any(&w.obj).(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

// Label sets label k to v.
func (w *wrapper[W, T]) Label(k, v string) W {
	m := w.meta()
	m.Labels = with(m.Labels, k, v)
	return w.self
}

// Annotation sets annotation k to v.
func (w *wrapper[W, T]) Annotation(k, v string) W {
	m := w.meta()
	m.Annotations = with(m.Annotations, k, v)
	return w.self
}

// GenerateName sets metadata.generateName: the API server names the object prefix + a suffix.
func (w *wrapper[W, T]) GenerateName(prefix string) W { w.meta().GenerateName = prefix; return w.self }

// UID sets metadata.uid.
func (w *wrapper[W, T]) UID(uid string) W { w.meta().UID = types.UID(uid); return w.self }

// Created sets metadata.creationTimestamp.
func (w *wrapper[W, T]) Created(t time.Time) W {
	w.meta().CreationTimestamp = metav1.NewTime(t)
	return w.self
}

// Deleting sets metadata.deletionTimestamp: the object is being deleted since t.
func (w *wrapper[W, T]) Deleting(t time.Time) W {
	w.meta().DeletionTimestamp = &metav1.Time{Time: t}
	return w.self
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// setQuantity sets l[name] to q, making l when it is nil.
func setQuantity(l *corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if *l == nil {
		*l = corev1.ResourceList{}
	}
	(*l)[name] = q
}

func count(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// Resources is a resource list of name, quantity pairs: Resources("cpu", "2", "memory", "4Gi").
func Resources(kv ...string) corev1.ResourceList {
	if len(kv)%2 != 0 {
		panic("apitest.Resources: odd number of arguments")
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}
