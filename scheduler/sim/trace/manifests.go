package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Manifests are the objects of a user's cluster description in YAML mode.
type Manifests struct {
	Nodes     []corev1.Node
	Pods      []corev1.Pod
	Queues    []tesserav1.Queue
	PodGroups []tesserav1.PodGroup
}

// ReadManifests reads a multi-document YAML file of Node and Pod (apiVersion v1) and
// Queue and PodGroup (apiVersion tessera.dev/v1alpha1) objects.
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
// documents from 1. A file without objects is an error. Pods and PodGroups without a namespace get "default".
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
			return fmt.Errorf("%s:%s (List): %w", file, loc, err)
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
	var want string
	switch h.Kind {
	case "Node", "Pod":
		want = "v1"
	case "Queue", "PodGroup":
		want = tesserav1.GroupVersion.String()
	case "":
		return errf("missing kind; use one of Node, Pod, Queue, PodGroup")
	default:
		return errf("unknown kind %q; use one of Node, Pod, List (v1), Queue, PodGroup (%s)", h.Kind, tesserav1.GroupVersion)
	}
	if h.APIVersion != want {
		return errf("apiVersion %q; %s needs apiVersion %s", h.APIVersion, h.Kind, want)
	}
	if h.Metadata.Name == "" {
		return errf("missing metadata.name")
	}
	strict := func(obj any) error {
		if err := yaml.UnmarshalStrict(raw, obj); err != nil {
			return errf("%v", err)
		}
		return nil
	}
	key := h.Kind + "/" + h.Metadata.Name
	switch h.Kind {
	case "Node":
		var o corev1.Node
		if err := strict(&o); err != nil {
			return err
		}
		m.Nodes = append(m.Nodes, o)
	case "Pod":
		var o corev1.Pod
		if err := strict(&o); err != nil {
			return err
		}
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
		key = h.Kind + "/" + o.Namespace + "/" + o.Name
		m.Pods = append(m.Pods, o)
	case "Queue":
		var o tesserav1.Queue
		if err := strict(&o); err != nil {
			return err
		}
		m.Queues = append(m.Queues, o)
	case "PodGroup":
		var o tesserav1.PodGroup
		if err := strict(&o); err != nil {
			return err
		}
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
		key = h.Kind + "/" + o.Namespace + "/" + o.Name
		m.PodGroups = append(m.PodGroups, o)
	}
	if first, dup := seen[key]; dup {
		return errf("duplicate %s (first in %s)", key, first)
	}
	seen[key] = loc
	return nil
}

var errNoObjects = errors.New("no Node, Pod, Queue or PodGroup objects")
