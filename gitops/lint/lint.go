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
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/deploy/crds"
	"github.com/tessera-gpu/tessera/internal/yamlerr"
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
// for input that cannot be checked at all: no kustomization, a kustomization cycle,
// unreadable files, a limit exceeded (MaxDepth, MaxObjects, yamlerr.MaxFileBytes,
// yamlerr.MaxAliasNodes); a negative Options.ClusterGPUs.
func Lint(ctx context.Context, dir string, opts Options) ([]Finding, error) {
	if opts.ClusterGPUs < 0 {
		return nil, fmt.Errorf("cluster GPUs %d: give the cluster's GPU count, or 0 not to check it", opts.ClusterGPUs)
	}
	r := newReader(dir)
	roots, err := r.roots(dir)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, root := range roots {
		l := &linter{ctx: ctx, opts: opts, queues: map[string]*object{}, classes: map[string]bool{}, ids: map[string]*object{}, parents: map[string]int{}}
		k, err := r.read(root)
		if err != nil {
			return nil, err
		}
		l.plain = true
		files := l.resourceFiles(r, k, map[string]*kustomization{})
		if len(l.findings) == 0 && !l.plain { // a missing resource is named above, with its line
			// A kustomization with only id-preserving fields builds to its files'
			// objects, which the checks below read; the others are built by kustomize.
			if _, err := Build(root); err != nil {
				if errors.Is(err, yamlerr.ErrLimit) {
					return nil, err
				}
				l.add(k.file, 1, "kustomize build: %s", kustomizeMessage(err))
			}
		}
		var docs []*document
		size := 0
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b, err := yamlerr.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if size += len(b); size > MaxBytes {
				return nil, fmt.Errorf("%s: its files hold more than %d MiB, the most gitops lint reads in one kustomization; split it into several", k.file, MaxBytes>>20)
			}
			docs = append(docs, split(f, b)...)
		}
		if len(docs) > MaxObjects {
			return nil, fmt.Errorf("%s: more than %d objects, the most gitops lint reads in one kustomization; split it into several", k.file, MaxObjects)
		}
		if err := l.check(docs); err != nil {
			if errors.Is(err, errTooMany) {
				return nil, fmt.Errorf("%s: more than %d objects, the most gitops lint reads in one kustomization; split it into several", k.file, MaxObjects)
			}
			return nil, err
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

// resourceFiles are the manifest files k includes, directly or through the
// kustomizations it includes (seen: those already walked for this root, by resolved
// directory). A resource that does not exist, lies outside the kustomization's
// directory (a file) or the repository (a directory), is remote, or is included twice
// is a finding; the graph has no cycle and is no deeper than MaxDepth (checkGraph).
func (l *linter) resourceFiles(r *reader, k *kustomization, seen map[string]*kustomization) []string {
	seen[k.key] = k
	l.plain = l.plain && k.plain
	for _, r := range k.remote {
		l.add(k.file, r.line, "%s names %s, a remote location: gitops lint checks only the repository's files, and the build would fetch it unchecked; vendor it into the repository", r.field, r.value)
	}
	var out []string
	for _, res := range k.resources {
		if remote(res) {
			l.add(k.file, k.line(res), "resource %s is remote: gitops lint checks only the repository's files, and the build would fetch it unchecked; vendor it into the repository", res)
			continue
		}
		p := filepath.Join(k.dir, res)
		st, err := os.Stat(p)
		if err != nil {
			l.add(k.file, k.line(res), "resource %s: %v", res, errors.Unwrap(err))
			continue
		}
		if !st.IsDir() {
			if !st.Mode().IsRegular() { // a device or a pipe would block or never end
				l.add(k.file, k.line(res), "resource %s is not a regular file", res)
				continue
			}
			if !within(resolve(p), k.key) {
				l.add(k.file, k.line(res), "resource %s is not in or below %s; kustomize refuses files outside the kustomization's directory: move the file in, or list a kustomization directory that holds it", res, k.dir)
				continue
			}
			out = append(out, p)
			continue
		}
		if r.repo != "" && !within(resolve(p), r.repo) {
			l.add(k.file, k.line(res), "resource %s is outside the repository %s; Flux and Argo CD see only the repository's files", res, r.repo)
			continue
		}
		if kustomizationFile(p) == "" {
			l.add(k.file, k.line(res), "resource %s is a directory without a kustomization file (%s)", res, strings.Join(kustomizationNames, ", "))
			continue
		}
		sub, err := r.read(p)
		if err != nil { // read by checkGraph already
			l.add(k.file, k.line(res), "resource %s: %v", res, err)
			continue
		}
		if prev, dup := seen[sub.key]; dup {
			l.add(k.file, k.line(res), "resource %s is included twice (%s is already part of this build); kustomize fails on the objects it would add again", res, prev.file)
			continue
		}
		out = append(out, l.resourceFiles(r, sub, seen)...)
	}
	return out
}

// object is one document of a manifest file.
type object struct {
	file     string
	node     *yaml.Node
	inList   bool
	obj      map[string]any // nil: the document is not an object
	findings []Finding      // of the object alone (prepare)
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
	// plain: every kustomization of the build has only id-preserving fields, so the
	// linter checks what kustomize would (objects with the same identity) instead of
	// running kustomize, whose duplicate check is quadratic in the objects.
	plain bool
	// ids are the objects by apiVersion, kind, namespace and name (plain builds).
	ids map[string]*object
	// parents: 1 while a queue's parents are being followed, 2 once done (cycle).
	parents map[string]int
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

// document is one YAML document of a manifest file, as text.
type document struct {
	file string
	text []byte
	line int // of its first line in the file, from 1
	objs []*object
	// err is the finding of a document that is not YAML.
	err *Finding
}

// split cuts a manifest file into its documents at the "---" lines, as the API
// machinery's YAML reader does, so that they can be parsed in parallel; a document
// marker with content on its line stays inside a document, whose parser handles it.
func split(file string, b []byte) []*document {
	var out []*document
	start, startLine, line := 0, 1, 1
	for i := 0; i < len(b); {
		end := bytes.IndexByte(b[i:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += i
		}
		if l := b[i:end]; bytes.HasPrefix(l, []byte("---")) {
			if rest := bytes.TrimSpace(l[3:]); len(rest) == 0 || rest[0] == '#' {
				if i > start {
					out = append(out, &document{file: file, text: b[start:i], line: startLine})
				}
				start, startLine = min(end+1, len(b)), line+1
			}
		}
		i = end + 1
		line++
	}
	if start < len(b) {
		out = append(out, &document{file: file, text: b[start:], line: startLine})
	}
	return out
}

// parse reads the objects of d. Empty documents (a trailing "---", a document of
// comments) have none, as kustomize and kubectl skip them; a v1 List's items are
// objects of their own. Text that is not YAML is a finding.
func (d *document) parse() {
	dec := yaml.NewDecoder(bytes.NewReader(d.text))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			line := d.line - 1 + yamlLine(err)
			msg := yamlErrLine.ReplaceAllString(err.Error(), fmt.Sprintf("line %d", line))
			d.err = &Finding{File: d.file, Line: line, Message: "not YAML: " + msg}
			return
		}
		if len(doc.Content) == 0 || empty(doc.Content[0]) {
			continue
		}
		n := doc.Content[0]
		shift(n, d.line-1)
		if items := listItems(n); items != nil {
			for _, item := range items.Content {
				d.objs = append(d.objs, &object{file: d.file, node: item, inList: true})
			}
			continue
		}
		d.objs = append(d.objs, &object{file: d.file, node: n})
	}
}

// shift moves the lines of n and the nodes under it by delta.
func shift(n *yaml.Node, delta int) {
	if delta == 0 {
		return
	}
	n.Line += delta
	for _, c := range n.Content {
		shift(c, delta)
	}
}

// listItems are the items of a v1 List (kubectl get -o yaml), which kustomize reads
// as objects; nil for any other document.
func listItems(n *yaml.Node) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var kind, apiVersion string
	var items *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k, v := n.Content[i].Value, n.Content[i+1]; k {
		case "kind":
			kind = v.Value
		case "apiVersion":
			apiVersion = v.Value
		case "items":
			items = v
		}
	}
	if kind != "List" || apiVersion != "v1" || items == nil || items.Kind != yaml.SequenceNode {
		return nil
	}
	return items
}

// empty reports whether a document holds nothing: only comments, or a bare "---".
func empty(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// yamlLine is the line a YAML error names ("yaml: line 7: ..."), else 1.
func yamlLine(err error) int {
	if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return max(n, 1)
	}
	return 1
}

var yamlErrLine = regexp.MustCompile(`line (\d+)`)

// errTooMany: more than MaxObjects objects.
var errTooMany = errors.New("too many objects")

// check parses the documents and runs the checks that need no other object (the CRD's
// schema and CEL rules, an AdmissionPolicy's compilation and tests) on all cores, then
// records each object in order; findings come out as if checked one by one.
func (l *linter) check(docs []*document) error {
	work := make(chan *document)
	var wg sync.WaitGroup
	var objects atomic.Int64
	for range min(goruntime.GOMAXPROCS(0), max(len(docs), 1)) {
		wg.Go(func() {
			for d := range work {
				if d.parse(); objects.Add(int64(len(d.objs))) > MaxObjects {
					continue // reported below
				}
				for _, o := range d.objs {
					l.prepare(o)
				}
			}
		})
	}
	var err error
	for _, d := range docs {
		if err = l.ctx.Err(); err != nil || objects.Load() > MaxObjects {
			break
		}
		work <- d
	}
	close(work)
	wg.Wait()
	switch {
	case err != nil:
		return err
	case objects.Load() > MaxObjects:
		return errTooMany
	}
	for _, d := range docs {
		if d.err != nil {
			l.findings = append(l.findings, *d.err)
		}
		for _, o := range d.objs {
			l.object(o)
		}
	}
	return nil
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

// finding records a finding of o alone.
func (o *object) finding(line int, format string, args ...any) {
	o.findings = append(o.findings, Finding{File: o.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// prepare decodes o and runs the checks on o alone; it touches nothing but o, so
// objects are prepared in parallel.
func (l *linter) prepare(o *object) {
	if err := o.node.Decode(&o.obj); err != nil || o.obj == nil {
		o.obj = nil
		return
	}
	apiVersion, kind, name := str(o.obj, "apiVersion"), str(o.obj, "kind"), str(o.obj, "metadata", "name")
	if apiVersion == "" || kind == "" || name == "" {
		return // object says so
	}
	if crds.Known(apiVersion, kind) {
		for _, e := range crds.DefaultAndValidate(l.ctx, apiVersion, kind, o.obj) {
			o.finding(o.line(e.Field), "%s %s: %s", kind, name, e.Error())
		}
	}
	if kind == "Queue" {
		prepareQueue(o, name)
		return
	}
	if kind != "AdmissionPolicy" {
		return
	}
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
		o.finding(line, "AdmissionPolicy %s: %v", name, err)
	}
}

// object records a prepared object: its own findings, and what other objects may
// refer to or must not repeat.
func (l *linter) object(o *object) {
	if o.obj == nil {
		what := "a document"
		if o.inList {
			what = "a List item"
		}
		l.add(o.file, o.node.Line, "%s that is not an object", what)
		return
	}
	apiVersion, kind, name := str(o.obj, "apiVersion"), str(o.obj, "kind"), str(o.obj, "metadata", "name")
	if apiVersion == "" || kind == "" {
		l.add(o.file, o.node.Line, "apiVersion and kind are required")
		return
	}
	if name == "" {
		l.add(o.file, o.line("metadata"), "%s: metadata.name is required", kind)
		return
	}
	l.findings = append(l.findings, o.findings...)
	if l.plain && kind != "Queue" { // Queues: "defined twice" below
		ns := str(o.obj, "metadata", "namespace")
		if ns == "" {
			ns = "default"
		}
		id := apiVersion + "/" + kind + "/" + ns + "/" + name
		if prev, dup := l.ids[id]; dup {
			l.add(o.file, o.line("metadata.name"), "%s %s is defined twice (also at %s:%d); kustomize fails on two objects of the same kind, namespace and name", kind, name, prev.file, prev.node.Line)
		} else {
			l.ids[id] = o
		}
	}
	switch kind {
	case "Queue":
		if prev, dup := l.queues[name]; dup {
			l.add(o.file, o.line("metadata.name"), "Queue %s is defined twice (also at %s:%d)", name, prev.file, prev.node.Line)
			break
		}
		l.queues[name] = o
		if p := str(o.obj, "spec", "parent"); p != "" {
			l.refs = append(l.refs, ref{o, "spec.parent", "Queue", p})
		}
		for i, c := range allowedClasses(o) {
			l.refs = append(l.refs, ref{o, fmt.Sprintf("spec.allowedPriorityClasses[%d]", i), "PriorityClass", c})
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
	}
}

// prepareQueue checks who may use the queue (the schema checked the types and the CEL
// rules): spec.namespaceSelector is a valid label selector (keys and values as labels
// spell them), and the queue's default class, annotation tessera.dev/priority-class,
// is one of spec.allowedPriorityClasses. The admission webhook lets no namespace use a
// queue whose selector is invalid.
func prepareQueue(o *object, name string) {
	var q tesserav1.Queue
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.obj, &q); err != nil {
		return // the schema check reported it
	}
	if sel := q.Spec.NamespaceSelector; sel != nil {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			o.finding(o.line("spec.namespaceSelector"), "Queue %s: spec.namespaceSelector is not a valid label selector: %v; no namespace could use the queue", name, err)
		}
	}
	allowed := q.Spec.AllowedPriorityClasses
	seen := map[string]bool{}
	for _, c := range allowed {
		if seen[c] {
			o.finding(o.line("spec.allowedPriorityClasses"), "Queue %s: spec.allowedPriorityClasses lists %q twice", name, c)
		}
		seen[c] = true
	}
	key := webhooks.AnnotationPriorityClass
	if c := q.Annotations[key]; c != "" && len(allowed) > 0 && !seen[c] {
		o.finding(o.line("metadata.annotations["+key+"]"), "Queue %s: its default priority class %q (annotation %s) is not in spec.allowedPriorityClasses [%s]; add it there or pick one of them",
			name, c, key, strings.Join(allowed, ", "))
	}
}

// allowedClasses is a Queue's spec.allowedPriorityClasses, as far as they are strings.
func allowedClasses(o *object) []string {
	spec, _ := o.obj["spec"].(map[string]any)
	list, _ := spec["allowedPriorityClasses"].([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
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
		for _, field := range []string{"deserved", "capability", "guarantee"} {
			rl := l.resources(o, field)
			for _, res := range slices.Sorted(maps.Keys(rl)) {
				if q := rl[res]; q.Sign() < 0 {
					l.add(o.file, o.line("spec."+field+"["+string(res)+"]"), "Queue %s: spec.%s[%s] is %s; a queue cannot %s less than nothing", name, field, res, q.String(), map[string]string{"deserved": "deserve", "capability": "be capped at", "guarantee": "be guaranteed"}[field])
				}
			}
		}
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

// cycle reports a queue whose parents lead back to it, once per cycle; each queue's
// parents are followed once over all queues (linear in the queues).
func (l *linter) cycle(name string) {
	const (
		following = 1
		done      = 2
	)
	var path []string
	for q := name; q != "" && l.queues[q] != nil; q = str(l.queues[q].obj, "spec", "parent") {
		switch l.parents[q] {
		case done:
			q = ""
		case following:
			// q's ancestors lead back to q; the CEL rule names a queue that is its
			// own parent.
			if i := slices.Index(path, q); i >= 0 && len(path)-i > 1 {
				o := l.queues[q]
				l.add(o.file, o.line("spec.parent"), "Queue %s is its own ancestor through spec.parent (%s → %s); queues must form a tree", q, strings.Join(path[i:], " → "), q)
			}
			q = ""
		}
		if q == "" {
			break
		}
		l.parents[q] = following
		path = append(path, q)
	}
	for _, q := range path {
		l.parents[q] = done
	}
}
