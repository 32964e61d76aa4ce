package trace

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/volcano"
)

// isVolcano reports whether apiVersion and kind name one of Volcano's objects that
// tessera convert volcano turns into Tessera's.
func isVolcano(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false
	}
	switch gv.Group {
	case "scheduling.volcano.sh":
		return kind == "Queue" || kind == "PodGroup"
	case "batch.volcano.sh":
		return kind == "Job"
	}
	return false
}

// AddVolcano adds Volcano objects (Queues, PodGroups, Volcano Jobs) read elsewhere,
// such as from a live cluster; Complete converts them.
func (m *Manifests) AddVolcano(objs ...*unstructured.Unstructured) {
	m.volcano = append(m.volcano, objs...)
}

// Complete makes of objects added one by one what ReadManifests makes of a dump:
// Volcano objects converted, Jobs' missing pods made.
func (m *Manifests) Complete() error {
	if err := m.convertVolcano(); err != nil {
		return err
	}
	return m.ExpandJobs()
}

// convertVolcano turns the Volcano objects added (AddVolcano) into Tessera's Queues,
// PodGroups and batch/v1 Jobs, as tessera convert volcano does, and keeps its notes.
func (m *Manifests) convertVolcano() error {
	if len(m.volcano) == 0 {
		return nil
	}
	objs, notes, err := volcano.Convert(m.volcano, volcano.Options{})
	if err != nil {
		return err
	}
	m.volcano = nil
	for _, n := range notes {
		m.Notes = append(m.Notes, n.String())
	}
	return m.addConverted(objs)
}

// addConverted adds what Volcano's objects converted into; Jobs and PodGroups without
// a namespace get "default". A converted object whose name another object of the
// input already takes is an error.
func (m *Manifests) addConverted(objs []runtime.Object) error {
	queues := names(m.Queues, func(q tesserav1.Queue) string { return q.Name })
	groups := names(m.PodGroups, func(pg tesserav1.PodGroup) string { return pg.Namespace + "/" + pg.Name })
	jobs := names(m.Jobs, func(j batchv1.Job) string { return j.Namespace + "/" + j.Name })
	for _, o := range objs {
		switch o := o.(type) {
		case *tesserav1.Queue:
			if err := claim(queues, "Queue", o.Name); err != nil {
				return err
			}
			m.Queues = append(m.Queues, *o)
		case *tesserav1.PodGroup:
			if o.Namespace == "" {
				o.Namespace = metav1.NamespaceDefault
			}
			if err := claim(groups, "PodGroup", o.Namespace+"/"+o.Name); err != nil {
				return err
			}
			m.PodGroups = append(m.PodGroups, *o)
		case *batchv1.Job:
			if o.Namespace == "" {
				o.Namespace = metav1.NamespaceDefault
			}
			if err := claim(jobs, "Job", o.Namespace+"/"+o.Name); err != nil {
				return err
			}
			defaultRequests(&o.Spec.Template.Spec)
			m.Jobs = append(m.Jobs, *o)
		default:
			return fmt.Errorf("converting Volcano objects gave a %T, which the simulator does not read", o)
		}
	}
	return nil
}

// volcanoScheduled reports whether a batch/v1 Job is Volcano's to schedule, as tessera
// convert volcano decides: Volcano's scheduler, queue or group annotation.
func volcanoScheduled(j *batchv1.Job) bool {
	t := &j.Spec.Template
	return t.Spec.SchedulerName == "volcano" || j.Annotations[tesserav1.VolcanoQueueName] != "" ||
		t.Annotations[tesserav1.VolcanoQueueName] != "" || t.Annotations[tesserav1.VolcanoGroupName] != ""
}

// names is the set of keys of list's items.
func names[T any](list []T, key func(T) string) map[string]bool {
	set := make(map[string]bool, len(list))
	for _, o := range list {
		set[key(o)] = true
	}
	return set
}

// claim adds key to set, or says that a converted Volcano object collides with an
// object of the same kind and name.
func claim(set map[string]bool, kind, key string) error {
	if set[key] {
		return fmt.Errorf("the Volcano objects convert to %s %s, which the input already defines; keep one of the two", kind, key)
	}
	set[key] = true
	return nil
}
