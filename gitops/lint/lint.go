package lint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/deploy/crds"
	"github.com/tessera-gpu/tessera/webhooks"
)

// Finding is one problem, at a file and line.
type Finding struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message) }

// Options tune the checks.
type Options struct {
	// ClusterGPUs, when positive, bounds the sum of the top-level queues' deserved GPUs.
	ClusterGPUs int64
}

// regoRow finds the first row the Rego compiler names in a policy's source.
var regoRow = regexp.MustCompile(`\.rego:(\d+)`)

// builtinPriorityClasses exist in every cluster.
var builtinPriorityClasses = []string{"system-cluster-critical", "system-node-critical"}

// Lint checks every kustomization under dir that no other one includes. The error is
// for input that cannot be checked at all (no kustomization, unreadable files).
func Lint(ctx context.Context, dir string, opts Options) ([]Finding, error) {
	roots, err := roots(dir)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, root := range roots {
		l := &linter{ctx: ctx, opts: opts, queues: map[string]*object{}, classes: map[string]bool{}}
		files, err := l.resourceFiles(root)
		if err != nil {
			return nil, err
		}
		if len(l.findings) == 0 { // a missing resource is named above, with its line
			if _, err := Build(root); err != nil {
				l.add(filepath.Join(root, "kustomization.yaml"), 1, "kustomize build: %v", err)
			}
		}
		for _, f := range files {
			if err := l.file(f); err != nil {
				return nil, err
			}
		}
		l.crossObject()
		out = append(out, l.findings...)
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return out, nil
}

// kustomization is the part of a kustomization.yaml the linter follows: its resources,
// with the line each is listed on.
type kustomization struct {
	Resources []string
	lines     map[string]int
}

func (k kustomization) line(resource string) int { return max(k.lines[resource], 1) }

func readKustomization(dir string) (kustomization, error) {
	k := kustomization{lines: map[string]int{}}
	path := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return k, err
	}
	var doc struct {
		Resources yaml.Node `yaml:"resources"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return k, fmt.Errorf("%s: %w", path, err)
	}
	for _, n := range doc.Resources.Content {
		k.Resources = append(k.Resources, n.Value)
		k.lines[n.Value] = n.Line
	}
	return k, nil
}

// roots are the kustomization directories under dir that no other one includes.
func roots(dir string) ([]string, error) {
	var all []string
	included := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		kdir := filepath.Dir(path)
		all = append(all, kdir)
		k, err := readKustomization(kdir)
		if err != nil {
			return err
		}
		for _, r := range k.Resources {
			included[filepath.Clean(filepath.Join(kdir, r))] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range all {
		if !included[filepath.Clean(d)] {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no kustomization.yaml found; point gitops lint at a repository of kustomizations (for example gitops/clusters)", dir)
	}
	return out, nil
}

// resourceFiles are the manifest files a kustomization includes, directly or through
// the kustomizations it includes; a resource that does not exist is a finding.
func (l *linter) resourceFiles(dir string) ([]string, error) {
	k, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			l.add(filepath.Join(dir, "kustomization.yaml"), k.line(r), "resource %s: %v", r, errors.Unwrap(err))
			continue
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		if _, err := os.Stat(filepath.Join(p, "kustomization.yaml")); err != nil {
			l.add(filepath.Join(dir, "kustomization.yaml"), k.line(r), "resource %s is a directory without kustomization.yaml", r)
			continue
		}
		sub, err := l.resourceFiles(p)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// object is one document of a manifest file.
type object struct {
	file string
	node *yaml.Node
	obj  map[string]any
}

// line is the line of a field path ("spec.deserved", "metadata.annotations[tessera.dev/queue]"),
// or the document's when the field is absent.
func (o *object) line(path string) int {
	n := o.node
	for _, part := range splitPath(path) {
		if n.Kind != yaml.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				n, found = n.Content[i+1], true
				if n.Kind != yaml.MappingNode {
					return n.Line
				}
				break
			}
		}
		if !found {
			break
		}
	}
	if n.Kind == yaml.MappingNode && n != o.node && len(n.Content) > 0 {
		return n.Content[0].Line - 1
	}
	return n.Line
}

func splitPath(path string) []string {
	var out []string
	for path != "" {
		i := strings.IndexAny(path, ".[")
		switch {
		case i < 0:
			return append(out, path)
		case path[i] == '.':
			out = append(out, path[:i])
			path = path[i+1:]
		default:
			if i > 0 {
				out = append(out, path[:i])
			}
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(out, path[i+1:])
			}
			out = append(out, path[i+1:end])
			path = strings.TrimPrefix(path[end+1:], ".")
		}
	}
	return out
}

type linter struct {
	ctx      context.Context
	opts     Options
	findings []Finding
	queues   map[string]*object
	classes  map[string]bool
	refs     []ref
}

// ref is a name one object gives another by.
type ref struct {
	from       *object
	field      string
	kind, name string
}

func (l *linter) add(file string, line int, format string, args ...any) {
	l.findings = append(l.findings, Finding{File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// file checks each document of a manifest file.
func (l *linter) file(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			l.add(path, 1, "not YAML: %v", err)
			return nil
		}
		if len(doc.Content) == 0 {
			continue
		}
		o := &object{file: path, node: doc.Content[0]}
		if err := o.node.Decode(&o.obj); err != nil || o.obj == nil {
			l.add(path, o.node.Line, "a document that is not an object")
			continue
		}
		l.object(o)
	}
}

func str(m map[string]any, keys ...string) string {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

func (l *linter) object(o *object) {
	apiVersion, kind, name := str(o.obj, "apiVersion"), str(o.obj, "kind"), str(o.obj, "metadata", "name")
	if apiVersion == "" || kind == "" {
		l.add(o.file, o.node.Line, "apiVersion and kind are required")
		return
	}
	if crds.Known(apiVersion, kind) {
		for _, e := range crds.DefaultAndValidate(l.ctx, apiVersion, kind, o.obj) {
			l.add(o.file, o.line(e.Field), "%s %s: %s", kind, name, e.Error())
		}
	}
	switch kind {
	case "Queue":
		if _, dup := l.queues[name]; dup {
			l.add(o.file, o.line("metadata.name"), "Queue %s is defined twice", name)
		}
		l.queues[name] = o
		if p := str(o.obj, "spec", "parent"); p != "" {
			l.refs = append(l.refs, ref{o, "spec.parent", "Queue", p})
		}
	case "PriorityClass":
		l.classes[name] = true
	case "Namespace":
		l.refAnnotation(o, tesserav1.AnnotationQueue, "Queue")
		l.refAnnotation(o, webhooks.AnnotationPriorityClass, "PriorityClass")
	case "PodGroup":
		if q := str(o.obj, "spec", "queue"); q != "" {
			l.refs = append(l.refs, ref{o, "spec.queue", "Queue", q})
		}
		if c := str(o.obj, "spec", "priorityClassName"); c != "" {
			l.refs = append(l.refs, ref{o, "spec.priorityClassName", "PriorityClass", c})
		}
	case "AdmissionPolicy":
		var ap tesserav1.AdmissionPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.obj, &ap); err != nil {
			return // the schema check reported it
		}
		if _, err := webhooks.NewLocal(l.ctx, []tesserav1.AdmissionPolicy{ap}, nil); err != nil {
			// The compiler names rows of the Rego source, a block that starts on the
			// line after spec.rego's key.
			line := o.line("spec.rego")
			if m := regoRow.FindStringSubmatch(err.Error()); m != nil {
				row, _ := strconv.Atoi(m[1])
				line += row
			}
			l.add(o.file, line, "AdmissionPolicy %s: %v", name, err)
		}
	}
}

func (l *linter) refAnnotation(o *object, key, kind string) {
	if v := str(o.obj, "metadata", "annotations", key); v != "" {
		l.refs = append(l.refs, ref{o, "metadata.annotations[" + key + "]", kind, v})
	}
}

// crossObject checks what one object says of others.
func (l *linter) crossObject() {
	for _, r := range l.refs {
		exists := false
		switch r.kind {
		case "Queue":
			exists = l.queues[r.name] != nil
		case "PriorityClass":
			exists = l.classes[r.name] || slices.Contains(builtinPriorityClasses, r.name)
		}
		if !exists {
			l.add(r.from.file, r.from.line(r.field), "%s names %s %q, which this configuration does not define; add it or fix the name", r.field, r.kind, r.name)
		}
	}
	var deservedTop resource.Quantity
	for _, name := range slices.Sorted(maps.Keys(l.queues)) {
		o := l.queues[name]
		deserved, capability := l.resources(o, "deserved"), l.resources(o, "capability")
		for res, d := range deserved {
			if c, ok := capability[res]; ok && d.Cmp(c) > 0 {
				l.add(o.file, o.line("spec.deserved["+string(res)+"]"), "Queue %s deserves %s %s but its capability is %s; deserved must not exceed capability", name, d.String(), res, c.String())
			}
		}
		if str(o.obj, "spec", "parent") == "" {
			if g, ok := deserved[tesserav1.ResourceGPU]; ok {
				deservedTop.Add(g)
			}
		}
		l.cycle(name)
	}
	if l.opts.ClusterGPUs > 0 && deservedTop.Value() > l.opts.ClusterGPUs {
		for _, name := range slices.Sorted(maps.Keys(l.queues)) {
			o := l.queues[name]
			l.add(o.file, o.line("metadata.name"), "the top-level queues deserve %s GPUs together, more than the cluster's %d; lower their deserved shares", deservedTop.String(), l.opts.ClusterGPUs)
			break
		}
	}
}

// resources reads spec.<field> of a Queue; malformed quantities were reported by the
// schema check.
func (l *linter) resources(o *object, field string) corev1.ResourceList {
	m, _ := o.obj["spec"].(map[string]any)
	raw, _ := m[field].(map[string]any)
	out := corev1.ResourceList{}
	for k, v := range raw {
		if q, err := resource.ParseQuantity(fmt.Sprint(v)); err == nil {
			out[corev1.ResourceName(k)] = q
		}
	}
	return out
}

// cycle reports a queue whose parents lead back to it.
func (l *linter) cycle(name string) {
	seen := map[string]bool{name: true}
	for q := str(l.queues[name].obj, "spec", "parent"); q != ""; {
		if q == name {
			o := l.queues[name]
			l.add(o.file, o.line("spec.parent"), "Queue %s is its own ancestor through spec.parent; queues must form a tree", name)
			return
		}
		if seen[q] || l.queues[q] == nil {
			return
		}
		seen[q] = true
		q = str(l.queues[q].obj, "spec", "parent")
	}
}
