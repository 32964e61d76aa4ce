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
	"path/filepath"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/deploy/crds"
	"github.com/tessera-gpu/tessera/internal/yamlerr"
	"github.com/tessera-gpu/tessera/volcano"
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
	ScaleDownPolicies []tesserav1.ScaleDownPolicy
	// Notes say what reading changed or could not carry over: pods made from a Job's
	// template, fields of Volcano objects without a Tessera equivalent.
	Notes []string
	// volcano are the Volcano objects read, converted once the whole input is read.
	volcano []*unstructured.Unstructured
}

// ReadManifests reads the multi-document YAML files at paths (a directory stands for
// its .yaml, .yml and .json files, in name order) as one cluster: Node, Namespace and
// Pod (apiVersion v1), Job (batch/v1), PriorityClass (scheduling.k8s.io/v1), Queue,
// PodGroup, AdmissionPolicy and ScaleDownPolicy (apiVersion tessera.dev/v1alpha1)
// objects, and
// Volcano's Queue, PodGroup (scheduling.volcano.sh/v1beta1) and Job
// (batch.volcano.sh/v1alpha1), which become Tessera's objects as tessera convert
// volcano makes them, as do batch/v1 Jobs scheduled by Volcano. Jobs whose pods are
// not all listed get the pods the Job controller would create (ExpandJobs). Each file
// named, and each directory, must hold objects; an object may not repeat one of
// another file.
func ReadManifests(paths ...string) (*Manifests, error) {
	files, err := manifestFiles(paths)
	if err != nil {
		return nil, err
	}
	d := newManifestsDecoder()
	for _, f := range files {
		if err := d.readFile(f.path, f.named); err != nil {
			return nil, err
		}
	}
	return d.finish(strings.Join(paths, ", "))
}

// manifestFile is a file ReadManifests reads; named is false for a file found in a
// directory.
type manifestFile struct {
	path  string
	named bool
}

// manifestFiles expands paths: a directory gives its manifest files.
func manifestFiles(paths []string) ([]manifestFile, error) {
	if len(paths) == 0 {
		return nil, errors.New("no manifests files given")
	}
	var out []manifestFile
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, manifestFile{p, true})
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				out = append(out, manifestFile{filepath.Join(p, e.Name()), false})
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: a directory without .yaml, .yml or .json files", p)
		}
	}
	return out, nil
}

// DecodeManifests reads multi-document YAML from r; name is used in messages. A
// document may also be a v1 List of such objects (kubectl get -o yaml output); its
// items are located as "doc N item I".
//
// Decoding is strict: an unknown or duplicated field, an unknown kind, a wrong
// apiVersion, a missing name, two objects of the same kind and name, and what the
// API server refuses of the fields the simulator reads (a Pod or Job without
// containers, a negative parallelism, completions or backoffLimit, a negative
// resource quantity, a request above its limit) are errors, reported as
// "name:doc N (kind/name): reason" with N counting the non-empty documents from 1. A
// file without objects is an error. Pods, Jobs and PodGroups without a namespace get
// "default".
func DecodeManifests(r io.Reader, name string) (*Manifests, error) {
	d := newManifestsDecoder()
	if err := d.read(r, name, true); err != nil {
		return nil, err
	}
	return d.finish(name)
}

// manifestsDecoder reads one or more files into one Manifests.
type manifestsDecoder struct {
	m    *Manifests
	seen map[string]string // kind/namespace/name -> where it was first read
	// converted are the objects Volcano's convert into, claimed once all is read.
	converted []runtime.Object
}

func newManifestsDecoder() *manifestsDecoder {
	return &manifestsDecoder{m: &Manifests{}, seen: map[string]string{}}
}

// readFile reads the file at path; named says it was given by name, so that it must
// hold objects.
func (d *manifestsDecoder) readFile(path string, named bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return d.read(f, path, named)
}

// read reads the documents of one file.
func (d *manifestsDecoder) read(r io.Reader, name string, named bool) error {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	doc := 0
	for {
		raw, err := yr.Read()
		if err == io.EOF {
			if doc == 0 && named {
				return fmt.Errorf("%s: %w", name, errNoObjects)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:doc %d: %w", name, doc+1, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("%s:doc %d: %w", name, doc+1, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue // empty document: only comments or a separator
		}
		doc++
		if err := d.decodeOne(raw, name, fmt.Sprintf("doc %d", doc)); err != nil {
			return err
		}
	}
}

// finish converts what is left of Volcano's objects, makes the Jobs' missing pods, and
// returns the cluster; name names the input in messages.
func (d *manifestsDecoder) finish(name string) (*Manifests, error) {
	m := d.m
	if len(d.seen) == 0 && len(d.converted) == 0 {
		return nil, fmt.Errorf("%s: %w", name, errNoObjects)
	}
	if err := m.addConverted(d.converted); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := m.ExpandJobs(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
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
func (d *manifestsDecoder) decodeOne(raw []byte, file, loc string) error {
	m := d.m
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
			if err := d.decodeOne(item, file, fmt.Sprintf("%s item %d", loc, i+1)); err != nil {
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
		return d.convert(raw, errf)
	}
	var want string
	switch h.Kind {
	case "Node", "Namespace", "Pod":
		want = "v1"
	case "Job":
		want = batchv1.SchemeGroupVersion.String()
	case "PriorityClass":
		want = schedulingv1.SchemeGroupVersion.String()
	case "Queue", "PodGroup", "AdmissionPolicy", "ScaleDownPolicy":
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
			err = checkPodSpec(&p.Spec, "spec")
		}
		obj = p
	case "Job":
		var j batchv1.Job
		if err := yaml.UnmarshalStrict(raw, &j); err != nil {
			return errf("%v", yamlerr.Clean(err))
		}
		if err := checkJob(&j); err != nil {
			return errf("%v", err)
		}
		if volcanoScheduled(&j) {
			return d.convert(raw, errf)
		}
		defaultRequests(&j.Spec.Template.Spec)
		if err := checkPodSpec(&j.Spec.Template.Spec, "spec.template.spec"); err != nil {
			return errf("%v", err)
		}
		m.Jobs = append(m.Jobs, j)
		obj = &m.Jobs[len(m.Jobs)-1]
	case "Queue":
		obj, err = decodeInto(raw, &m.Queues)
	case "PodGroup":
		obj, err = decodeInto(raw, &m.PodGroups)
	case "AdmissionPolicy":
		obj, err = decodeInto(raw, &m.AdmissionPolicies)
	case "ScaleDownPolicy":
		obj, err = decodeInto(raw, &m.ScaleDownPolicies)
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
	if first, dup := d.seen[key]; dup {
		if f, l, _ := strings.Cut(first, "\x00"); f == file {
			first = l
		} else {
			first = f + ":" + l
		}
		return errf("duplicate %s (first in %s)", key, first)
	}
	d.seen[key] = file + "\x00" + loc
	return nil
}

// convert converts a Volcano object, or a batch/v1 Job scheduled by Volcano, as
// tessera convert volcano does; the objects it becomes join the input once all is
// read (finish). errf names the document.
func (d *manifestsDecoder) convert(raw []byte, errf func(string, ...any) error) error {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		return errf("%v", err)
	}
	objs, notes, err := volcano.Convert([]*unstructured.Unstructured{u}, volcano.Options{})
	if err != nil {
		// Convert names the object; the location names it too.
		_, reason, _ := strings.Cut(err.Error(), ": ")
		return errf("%s", reason)
	}
	for _, n := range notes {
		d.m.Notes = append(d.m.Notes, n.String())
	}
	d.converted = append(d.converted, objs...)
	return nil
}

// defaultAndValidate applies a custom resource's CRD defaults and validation, and
// returns the defaulted object as JSON.
func defaultAndValidate(raw []byte, apiVersion, kind string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if _, ok := obj["spec"]; !ok && kind == "PodGroup" {
		// A PodGroup without spec is a gang of one, as the scheduler reads it; the
		// CRD's defaults, which apply inside a spec, say so in the object.
		obj["spec"] = map[string]any{}
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
var knownKinds = "Node, Namespace, Pod, List (v1), Job (batch/v1), PriorityClass (scheduling.k8s.io/v1), Queue, PodGroup, AdmissionPolicy, ScaleDownPolicy (" +
	tesserav1.GroupVersion.String() + "), Volcano's Queue, PodGroup (scheduling.volcano.sh/v1beta1) and Job (batch.volcano.sh/v1alpha1)"

var errNoObjects = errors.New("no objects; use " + knownKinds)
