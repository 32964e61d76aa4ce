package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/deploy/crds"
	"github.com/tessera-gpu/tessera/internal/yamlerr"
)

// Manifests are the objects of a user's cluster description in YAML mode.
type Manifests struct {
	Nodes             []corev1.Node
	Namespaces        []corev1.Namespace
	Pods              []corev1.Pod
	Jobs              []batchv1.Job
	Queues            []tesserav1.Queue
	PodGroups         []tesserav1.PodGroup
	AdmissionPolicies []tesserav1.AdmissionPolicy
	PriorityClasses   []schedulingv1.PriorityClass
	// Notes say what reading changed or could not carry over: pods made from a Job's
	// template, fields of Volcano objects without a Tessera equivalent.
	Notes []string
	// volcano are the Volcano objects read, converted once the whole input is read.
	volcano []*unstructured.Unstructured
}

// ReadManifests reads a multi-document YAML file of Node, Namespace and Pod (apiVersion
// v1), Job (batch/v1), PriorityClass (scheduling.k8s.io/v1), Queue, PodGroup and
// AdmissionPolicy (apiVersion tessera.dev/v1alpha1) objects, and Volcano's Queue,
// PodGroup (scheduling.volcano.sh/v1beta1) and Job (batch.volcano.sh/v1alpha1), which
// become Tessera's objects. Jobs whose pods are not all listed get the pods the Job
// controller would create (ExpandJobs).
func ReadManifests(path string) (*Manifests, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeManifests(f, path)
}

// DecodeManifests reads multi-document YAML from r; name is used in messages. A
// document may also be a v1 List of such objects (kubectl get -o yaml output); its
// items are located as "doc N item I".
//
// Decoding is strict: an unknown or duplicated field, an unknown kind, a wrong
// apiVersion, a missing name or two objects of the same kind and name are errors,
// reported as "name:doc N (kind/name): reason" with N counting the non-empty
// documents from 1. A file without objects is an error. Pods, Jobs and PodGroups
// without a namespace get "default".
func DecodeManifests(r io.Reader, name string) (*Manifests, error) {
	m := &Manifests{}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	seen := map[string]string{}
	doc := 0
	for {
		raw, err := yr.Read()
		if err == io.EOF {
			if doc == 0 {
				return nil, fmt.Errorf("%s: %w", name, errNoObjects)
			}
			if err := m.convertVolcano(); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if err := m.ExpandJobs(); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:doc %d: %w", name, doc+1, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s:doc %d: %w", name, doc+1, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue // empty document: only comments or a separator
		}
		doc++
		if err := m.decodeOne(raw, name, fmt.Sprintf("doc %d", doc), seen); err != nil {
			return nil, err
		}
	}
}

// header is the part of an object read before its kind is known.
type header struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// list is a v1 List, as `kubectl get -o yaml` writes several objects.
type list struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ListMeta   `json:"metadata"`
	Items           []json.RawMessage `json:"items"`
}

// decodeOne decodes one document (or one item of a List) found in file at loc
// ("doc N" or "doc N item I").
func (m *Manifests) decodeOne(raw []byte, file, loc string, seen map[string]string) error {
	var h header
	if err := yaml.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("%s:%s: %w", file, loc, err)
	}
	if h.Kind == "List" && h.APIVersion == "v1" {
		var l list
		if err := yaml.UnmarshalStrict(raw, &l); err != nil {
			return fmt.Errorf("%s:%s (List): %w", file, loc, yamlerr.Clean(err))
		}
		for i, item := range l.Items {
			if err := m.decodeOne(item, file, fmt.Sprintf("%s item %d", loc, i+1), seen); err != nil {
				return err
			}
		}
		return nil
	}
	kind := h.Kind
	if kind == "" {
		kind = "?"
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s:%s (%s/%s): %s", file, loc, kind, h.Metadata.Name, fmt.Sprintf(format, args...))
	}
	if isVolcano(h.APIVersion, h.Kind) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return errf("%v", err)
		}
		m.volcano = append(m.volcano, u)
		return nil
	}
	var want string
	switch h.Kind {
	case "Node", "Namespace", "Pod":
		want = "v1"
	case "Job":
		want = batchv1.SchemeGroupVersion.String()
	case "PriorityClass":
		want = schedulingv1.SchemeGroupVersion.String()
	case "Queue", "PodGroup", "AdmissionPolicy":
		want = tesserav1.GroupVersion.String()
	case "":
		return errf("missing kind; use one of %s", knownKinds)
	default:
		return errf("unknown kind %q; use one of %s", h.Kind, knownKinds)
	}
	if h.APIVersion != want {
		return errf("apiVersion %q; %s needs apiVersion %s", h.APIVersion, h.Kind, want)
	}
	if h.Metadata.Name == "" {
		return errf("missing metadata.name")
	}
	if crds.Known(h.APIVersion, h.Kind) {
		// Default and validate as the API server would, with the CRD's own schema and
		// CEL rules; the typed decoding below then sees the defaulted object.
		var err error
		if raw, err = defaultAndValidate(raw, h.APIVersion, h.Kind); err != nil {
			return errf("%v", err)
		}
	}
	var obj metav1.Object
	var err error
	switch h.Kind {
	case "Node":
		obj, err = decodeInto(raw, &m.Nodes)
	case "Namespace":
		obj, err = decodeInto(raw, &m.Namespaces)
	case "Pod":
		var p *corev1.Pod
		if p, err = decodeInto(raw, &m.Pods); err == nil {
			defaultRequests(&p.Spec)
		}
		obj = p
	case "Job":
		var j *batchv1.Job
		if j, err = decodeInto(raw, &m.Jobs); err == nil {
			defaultRequests(&j.Spec.Template.Spec)
		}
		obj = j
	case "Queue":
		obj, err = decodeInto(raw, &m.Queues)
	case "PodGroup":
		obj, err = decodeInto(raw, &m.PodGroups)
	case "AdmissionPolicy":
		obj, err = decodeInto(raw, &m.AdmissionPolicies)
	case "PriorityClass":
		obj, err = decodeInto(raw, &m.PriorityClasses)
	}
	if err != nil {
		return errf("%v", err)
	}
	key := h.Kind + "/" + h.Metadata.Name
	if namespaced[h.Kind] {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		key = h.Kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
	}
	if first, dup := seen[key]; dup {
		return errf("duplicate %s (first in %s)", key, first)
	}
	seen[key] = loc
	return nil
}

// defaultAndValidate applies a custom resource's CRD defaults and validation, and
// returns the defaulted object as JSON.
func defaultAndValidate(raw []byte, apiVersion, kind string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if errs := crds.DefaultAndValidate(context.Background(), apiVersion, kind, obj); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return json.Marshal(obj)
}

// namespaced are the kinds that live in a namespace ("default" when none is given).
var namespaced = map[string]bool{"Pod": true, "Job": true, "PodGroup": true}

// decodeInto decodes raw strictly as a T, appends it to list and returns the element.
func decodeInto[T any, P interface {
	*T
	metav1.Object
}](raw []byte, list *[]T) (P, error) {
	var o T
	if err := yaml.UnmarshalStrict(raw, &o); err != nil {
		return nil, yamlerr.Clean(err)
	}
	*list = append(*list, o)
	return P(&(*list)[len(*list)-1]), nil
}

// defaultRequests sets each container's missing requests to its limits, as the API
// server's defaulting does before admission and scheduling see a pod.
func defaultRequests(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}

// knownKinds lists the kinds a manifests file may hold, with their apiVersions.
var knownKinds = "Node, Namespace, Pod, List (v1), Job (batch/v1), PriorityClass (scheduling.k8s.io/v1), Queue, PodGroup, AdmissionPolicy (" +
	tesserav1.GroupVersion.String() + "), Volcano's Queue, PodGroup (scheduling.volcano.sh/v1beta1) and Job (batch.volcano.sh/v1alpha1)"

var errNoObjects = errors.New("no objects; use " + knownKinds)
