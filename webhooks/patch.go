package webhooks

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

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

var (
	queueLabel             = target{[]string{"metadata", "labels", tesserav1.LabelQueue}, asString}
	minAvailableAnnotation = target{[]string{"metadata", "annotations", tesserav1.AnnotationMinAvailable}, asString}
)

// fields maps a mutation key to where it lands on the object itself, per kind; the
// keys of templateFields land in every pod template of the kind (podTemplates) as well.
var fields = map[string]map[string][]target{
	KindPod: {MutateMinAvailable: {minAvailableAnnotation}},
	KindJob: {MutateQueue: {queueLabel}, MutateMinAvailable: {minAvailableAnnotation}},
	KindPodGroup: {
		MutateQueue:             {{[]string{"spec", "queue"}, asString}},
		MutatePriorityClassName: {{[]string{"spec", "priorityClassName"}, asString}},
		MutateMinAvailable:      {{[]string{"spec", "minMember"}, asInt}},
	},
}

// customWorkloadFields are the fields of every kind of CustomWorkloads: its own labels
// carry its queue (its gang is the whole workload; no minAvailable is stamped).
var customWorkloadFields = map[string][]target{MutateQueue: {queueLabel}}

// templateFields maps a mutation key to where it lands in a pod template.
var templateFields = map[string][]target{
	MutateQueue:             {queueLabel},
	MutateSchedulerName:     {{[]string{"spec", "schedulerName"}, asString}},
	MutatePriorityClassName: {{[]string{"spec", "priorityClassName"}, asString}},
}

// targets are where key lands on an object of kind: on the object, then in each of
// its pod templates (paths relative to the template).
func targets(kind, key string) (own []target, inTemplates []target) {
	own = fields[kind][key]
	if isCustomWorkload[kind] {
		own = customWorkloadFields[key]
	}
	if podTemplates[kind] != nil {
		inTemplates = templateFields[key]
	}
	return own, inTemplates
}

// BuildPatch turns a decision's mutations into JSON patch operations against the raw
// object: it applies them to a copy and lets controller-runtime diff the two
// (admission.PatchResponseFromRaw), so only fields whose value differs are written and
// applying the patch and deciding again yields no operations. Keys the kind has no
// place for are returned in ignored. classes, when it knows the new priorityClassName,
// also sets a Pod's spec.priority to match (the Priority admission plugin ran before
// the webhook).
func BuildPatch(kind string, raw []byte, mutations map[string]any, classes map[string]int32) (ops []jsonpatch.Operation, ignored []string, err error) {
	return buildPatch(kind, raw, mutations, classes, nil)
}

// buildPatch is BuildPatch with edit, when not nil, applied to the object before the
// mutations (the right-sizing of a pod).
func buildPatch(kind string, raw []byte, mutations map[string]any, classes map[string]int32, edit func(obj map[string]any)) (ops []jsonpatch.Operation, ignored []string, err error) {
	asksSlice := podTemplates[kind] != nil && (edit != nil || bytes.Contains(raw, []byte(tesserav1.ResourceGPUMemory)))
	if len(mutations) == 0 && !asksSlice {
		return nil, nil, nil
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers the mutations leave alone stay as they were
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, nil, fmt.Errorf("decode %s for patching: not a JSON object (%v)", kind, err)
	}
	if edit != nil {
		edit(obj)
	}
	templates := templatesOf(kind, obj, false)
	keys := make([]string, 0, len(mutations))
	for k := range mutations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		value := mutations[key]
		if key == MutateGPURewrite {
			if b, _ := value.(bool); b && podTemplates[kind] != nil {
				eachResources(templates, rewriteGPUs)
			} else if b {
				ignored = append(ignored, key)
			}
			continue
		}
		own, inTemplates := targets(kind, key)
		if len(own) == 0 && len(inTemplates) == 0 {
			ignored = append(ignored, key)
			continue
		}
		place := func(m map[string]any, ts []target) error {
			for _, t := range ts {
				v, err := convert(value, t.kind)
				if err != nil {
					return fmt.Errorf("policy mutation %s: %w", key, err)
				}
				set(m, t.path, v)
			}
			return nil
		}
		if err := place(obj, own); err != nil {
			return nil, nil, err
		}
		for _, t := range templates {
			if err := place(t.tmpl, inTemplates); err != nil {
				return nil, nil, err
			}
		}
		if kind == KindPod && key == MutatePriorityClassName {
			if name, ok := value.(string); ok {
				if prio, known := classes[name]; known {
					set(obj, []string{"spec", "priority"}, int64(prio))
				}
			}
		}
	}
	if asksSlice {
		eachResources(templates, addSliceDevices)
	}
	mutated, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the mutated %s: %w", kind, err)
	}
	resp := admission.PatchResponseFromRaw(raw, mutated)
	if !resp.Allowed {
		return nil, nil, fmt.Errorf("patch of %s: %s", kind, resp.Result.Message)
	}
	// The diff walks maps in random order. The mutations never add or remove array
	// elements, so the operations touch distinct members and any order applies the
	// same: sorted by path, the same request always gets the same patch.
	slices.SortFunc(resp.Patches, func(a, b jsonpatch.Operation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Operation, b.Operation))
	})
	return resp.Patches, ignored, nil
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

// set writes v at path in obj, creating missing parents. A path through an array
// index that does not exist is left alone.
func set(obj map[string]any, path []string, v any) {
	var cur any = obj
	for _, seg := range path[:len(path)-1] {
		next, ok := child(cur, seg)
		if !ok {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return
			}
			next = map[string]any{}
			m[seg] = next
		}
		cur = next
	}
	if m, ok := cur.(map[string]any); ok {
		m[path[len(path)-1]] = v
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

// rewriteGPUs moves a container's nvidia.com/gpu requests and limits to tessera.dev/gpu.
func rewriteGPUs(res map[string]any) {
	from, to := string(tesserav1.ResourceNvidiaGPU), string(tesserav1.ResourceGPU)
	for _, kind := range []string{"requests", "limits"} {
		l, _ := res[kind].(map[string]any)
		n, ok := l[from]
		if !ok {
			continue
		}
		delete(l, from)
		if _, exists := l[to]; !exists {
			l[to] = n
		}
	}
}

// addSliceDevices asks one tessera.dev/gpu-slice, in requests and limits, of a container
// that asks a tessera.dev/gpu-memory slice: the kubelet hands node-status resources such
// as gpu-memory to no device plugin, so without the slice device the container would
// start without the GPU and the memory limit the node agent delivers. A container asks
// exactly one, whatever it wrote.
func addSliceDevices(res map[string]any) {
	mem, slice := string(tesserav1.ResourceGPUMemory), string(tesserav1.ResourceGPUSlice)
	req, _ := res["requests"].(map[string]any)
	lim, _ := res["limits"].(map[string]any)
	_, inReq := req[mem]
	_, inLim := lim[mem]
	if !inReq && !inLim {
		return
	}
	for _, kind := range []string{"requests", "limits"} {
		l, _ := res[kind].(map[string]any)
		if l == nil {
			l = map[string]any{}
			res[kind] = l
		}
		l[slice] = "1"
	}
}

// eachResources calls f with the resources of every container and init container, that
// has resources, of every pod template.
func eachResources(templates []placedTemplate, f func(res map[string]any)) {
	for _, t := range templates {
		spec, _ := t.tmpl["spec"].(map[string]any)
		for _, list := range []string{"initContainers", "containers"} {
			cs, _ := spec[list].([]any)
			for _, c := range cs {
				cm, _ := c.(map[string]any)
				if res, ok := cm["resources"].(map[string]any); ok {
					f(res)
				}
			}
		}
	}
}
