package webhooks

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// Operation is one RFC 6902 JSON patch operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Mutation keys the patcher understands; policies may set any of them.
const (
	MutateQueue             = "queue"
	MutateSchedulerName     = "schedulerName"
	MutatePriorityClassName = "priorityClassName"
	MutateMinAvailable      = "minAvailable"
	MutateGPURewrite        = "gpuRewrite"
)

type fieldKind int

const (
	asString fieldKind = iota
	asInt
)

type target struct {
	path []string
	kind fieldKind
}

// fields maps a mutation key to where it lands, per workload kind.
var fields = map[string]map[string][]target{
	KindPod: {
		MutateQueue:             {{[]string{"metadata", "labels", tesserav1.LabelQueue}, asString}},
		MutateSchedulerName:     {{[]string{"spec", "schedulerName"}, asString}},
		MutatePriorityClassName: {{[]string{"spec", "priorityClassName"}, asString}},
		MutateMinAvailable:      {{[]string{"metadata", "annotations", tesserav1.AnnotationMinAvailable}, asString}},
	},
	KindJob: {
		MutateQueue: {
			{[]string{"metadata", "labels", tesserav1.LabelQueue}, asString},
			{[]string{"spec", "template", "metadata", "labels", tesserav1.LabelQueue}, asString},
		},
		MutateSchedulerName:     {{[]string{"spec", "template", "spec", "schedulerName"}, asString}},
		MutatePriorityClassName: {{[]string{"spec", "template", "spec", "priorityClassName"}, asString}},
		MutateMinAvailable:      {{[]string{"metadata", "annotations", tesserav1.AnnotationMinAvailable}, asString}},
	},
	KindPodGroup: {
		MutateQueue:             {{[]string{"spec", "queue"}, asString}},
		MutatePriorityClassName: {{[]string{"spec", "priorityClassName"}, asString}},
		MutateMinAvailable:      {{[]string{"spec", "minMember"}, asInt}},
	},
}

// podSpecPath is where each kind keeps its pod spec.
var podSpecPath = map[string][]string{
	KindPod: {"spec"},
	KindJob: {"spec", "template", "spec"},
}

// BuildPatch turns a decision's mutations into JSON patch operations against the raw
// object. Only fields whose value differs are written, so applying the patch and
// deciding again yields no operations. Keys the kind has no place for are returned
// in ignored. classes, when it knows the new priorityClassName, also sets a Pod's
// spec.priority to match (the Priority admission plugin ran before the webhook).
func BuildPatch(kind string, raw []byte, mutations map[string]any, classes map[string]int32) (ops []Operation, ignored []string, err error) {
	if len(mutations) == 0 {
		return nil, nil, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, fmt.Errorf("decode %s for patching: %w", kind, err)
	}
	keys := make([]string, 0, len(mutations))
	for k := range mutations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p := &patcher{obj: obj}
	for _, key := range keys {
		value := mutations[key]
		if key == MutateGPURewrite {
			if b, _ := value.(bool); b && podSpecPath[kind] != nil {
				p.rewriteGPUs(podSpecPath[kind])
			} else if b {
				ignored = append(ignored, key)
			}
			continue
		}
		targets, ok := fields[kind][key]
		if !ok {
			ignored = append(ignored, key)
			continue
		}
		for _, t := range targets {
			v, err := convert(value, t.kind)
			if err != nil {
				return nil, nil, fmt.Errorf("policy mutation %s: %w", key, err)
			}
			p.set(t.path, v)
		}
		if kind == KindPod && key == MutatePriorityClassName {
			if name, ok := value.(string); ok {
				if prio, known := classes[name]; known {
					p.set([]string{"spec", "priority"}, int64(prio))
				}
			}
		}
	}
	return p.ops, ignored, nil
}

func convert(v any, kind fieldKind) (any, error) {
	switch kind {
	case asInt:
		switch n := v.(type) {
		case json.Number:
			return n.Int64()
		case int64:
			return n, nil
		case float64:
			return int64(n), nil
		case string:
			return strconv.ParseInt(n, 10, 64)
		}
	case asString:
		switch s := v.(type) {
		case string:
			if s == "" {
				return nil, fmt.Errorf("empty value")
			}
			return s, nil
		case json.Number:
			return s.String(), nil
		case int64:
			return strconv.FormatInt(s, 10), nil
		}
	}
	return nil, fmt.Errorf("value %v (%T) has the wrong type", v, v)
}

type patcher struct {
	obj map[string]any
	ops []Operation
}

// set writes v at path, creating missing parents with one "add" of the nested rest.
// It also updates the in-memory object so later operations see the change.
func (p *patcher) set(path []string, v any) {
	var cur any = p.obj
	for i, seg := range path[:len(path)-1] {
		next, ok := child(cur, seg)
		if !ok {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return // an array index that does not exist: nothing to patch
			}
			nested := v
			for j := len(path) - 1; j > i; j-- {
				nested = map[string]any{path[j]: nested}
			}
			m[seg] = nested
			p.ops = append(p.ops, Operation{Op: "add", Path: pointer(path[:i+1]), Value: nested})
			return
		}
		cur = next
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return
	}
	leaf := path[len(path)-1]
	if old, ok := m[leaf]; ok && equalJSON(old, v) {
		return
	}
	m[leaf] = v
	p.ops = append(p.ops, Operation{Op: "add", Path: pointer(path), Value: v})
}

func (p *patcher) remove(path []string) {
	var cur any = p.obj
	for _, seg := range path[:len(path)-1] {
		next, ok := child(cur, seg)
		if !ok {
			return
		}
		cur = next
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return
	}
	if _, ok := m[path[len(path)-1]]; ok {
		delete(m, path[len(path)-1])
		p.ops = append(p.ops, Operation{Op: "remove", Path: pointer(path)})
	}
}

// child steps into a map member or an array element; a nil member counts as missing.
func child(cur any, seg string) (any, bool) {
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[seg]
		if !ok || v == nil {
			return nil, false
		}
		switch v.(type) {
		case map[string]any, []any:
			return v, true
		}
		return nil, false
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(c) {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

// rewriteGPUs moves nvidia.com/gpu requests and limits to tessera.dev/gpu.
func (p *patcher) rewriteGPUs(specPath []string) {
	spec := p.lookup(specPath)
	from, to := string(tesserav1.ResourceNvidiaGPU), string(tesserav1.ResourceGPU)
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			res, _ := cm["resources"].(map[string]any)
			for _, kind := range []string{"requests", "limits"} {
				l, _ := res[kind].(map[string]any)
				n, ok := l[from]
				if !ok {
					continue
				}
				base := append(append([]string{}, specPath...), list, strconv.Itoa(i), "resources", kind)
				p.remove(append(append([]string{}, base...), from))
				if _, exists := l[to]; !exists {
					p.set(append(base, to), n)
				}
			}
		}
	}
}

func (p *patcher) lookup(path []string) map[string]any {
	var cur any = p.obj
	for _, seg := range path {
		next, ok := child(cur, seg)
		if !ok {
			return nil
		}
		cur = next
	}
	m, _ := cur.(map[string]any)
	return m
}

func pointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func equalJSON(a, b any) bool {
	if a == b {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
