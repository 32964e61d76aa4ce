package crds

import (
	"bytes"
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// reference validates obj with the API server's validators as the API server builds
// them, without DefaultAndValidate's shortcuts (validators built once, CEL rules
// evaluated through ruleNode first).
func reference(ctx context.Context, apiVersion, kind string, obj map[string]any) field.ErrorList {
	loadOnce.Do(load)
	s := schemas[key(apiVersion, kind)]
	if s == nil {
		return nil
	}
	structuraldefaulting.Default(obj, s.structural)
	if errs := apiservervalidation.ValidateCustomResource(nil, obj, apiservervalidation.NewSchemaValidatorFromOpenAPI(s.openAPI)); len(errs) > 0 {
		return errs
	}
	errs, _ := s.celValidator().Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return errs
}

// seeds are valid and invalid objects of every kind: the objects the CRDs must
// reject (testdata/invalid.yaml), valid ones, and the example GitOps repository's.
func seeds(t testing.TB) []map[string]any {
	t.Helper()
	docs := []string{
		`{apiVersion: tessera.dev/v1alpha1, kind: Queue, metadata: {name: train-prod, annotations: {tessera.dev/priority-class: batch-normal}},
 spec: {weight: 2, parent: root-q, priority: 3, reclaimable: false, deserved: {tessera.dev/gpu: "15", cpu: 100}, capability: {tessera.dev/gpu: "20", cpu: "400", memory: 1Ti},
  guarantee: {tessera.dev/gpu: "4"}, allowedPriorityClasses: [batch-normal, production-high],
  namespaceSelector: {matchLabels: {team: prod}, matchExpressions: [{key: a, operator: NotIn, values: [x]}, {key: tier, operator: Exists}]}}}`,
		`{apiVersion: tessera.dev/v1alpha1, kind: PodGroup, metadata: {name: pretrain, namespace: default},
 spec: {minMember: 4, queue: train-prod, priorityClassName: production-high, minResources: {tessera.dev/gpu: "32"},
  topology: {required: tessera.dev/rack, preferred: topology.kubernetes.io/zone}, minRuntime: 10m}}`,
		`{apiVersion: tessera.dev/v1alpha1, kind: GPUNode, metadata: {name: gpu-node-1}}`,
		`{apiVersion: tessera.dev/v1alpha1, kind: ScaleDownPolicy, metadata: {name: idle-gpus},
 spec: {nodeSelector: {matchLabels: {tessera.dev/gpu-model: A100-80GB}}, idleAfter: 45m, gpuUtilizationThreshold: 3, maxParallel: 2, cooldown: 5m, minNodes: 1, pricePerGPUHour: "2.21", dryRun: true}}`,
		`{apiVersion: tessera.dev/v1alpha1, kind: AdmissionPolicy, metadata: {name: team-defaults},
 spec: {rego: "package tessera.custom\n", targets: [Pod, Job], enforcement: warn, order: 10}}`,
	}
	var out []map[string]any
	add := func(doc []byte) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		if Known(apiVersion, kind) {
			out = append(out, obj)
		}
	}
	for _, d := range docs {
		add([]byte(d))
	}
	b, err := os.ReadFile("testdata/invalid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../gitops/clusters/example/*/*.yaml")
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "kustomization") {
			continue
		}
		fb, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, "\n---\n"...), fb...)
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		add(doc)
	}
	return out
}

// values are what mutate puts into objects: every JSON type, numbers at and beyond
// the bounds of int32 and int64, quantities, strings the CRDs' patterns and enums
// accept and refuse, and the shapes of selectors and lists.
var values = []any{
	nil, true, false, int64(0), int64(1), int64(-1), int64(2), int64(100), int64(2147483647), int64(2147483648), int64(-2147483649),
	1.5, 0.0, -3.25, "", "x", "16", "8", "-1", "1Gi", "500m", "1e3", "0.5", "10m", "45m", "-5m", "abc", "A100", "tessera.dev/gpu",
	"In", "NotIn", "Exists", "DoesNotExist", "warn", "deny", "Pod", "Job", "2024-01-01T00:00:00Z", "root-q",
	[]any{}, []any{"a"}, []any{"a", "a"}, []any{int64(1)}, map[string]any{},
	map[string]any{"tessera.dev/gpu": "8"}, map[string]any{"tessera.dev/gpu": "16", "cpu": int64(4)},
	map[string]any{"key": "a", "operator": "In"}, map[string]any{"key": "a", "operator": "Exists", "values": []any{"x"}},
	[]any{map[string]any{"key": "a", "operator": "In", "values": []any{"b"}}},
}

// mutate changes one random place of obj: a value replaced, a key added or removed,
// a list item added; or the name made the parent's.
func mutate(r *rand.Rand, obj map[string]any) {
	type place struct {
		parent any // map[string]any or []any
		key    string
		index  int
	}
	var places []place
	var walk func(v any, root bool)
	walk = func(v any, root bool) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if root && (k == "apiVersion" || k == "kind") {
					continue // the kind stays
				}
				places = append(places, place{parent: v, key: k})
				walk(v[k], false)
			}
			places = append(places, place{parent: v, key: []string{"extra", "weight", "parent", "deserved", "capability", "guarantee", "minMember", "values", "operator", "name"}[r.IntN(10)]})
		case []any:
			for i := range v {
				places = append(places, place{parent: v, index: i})
				walk(v[i], false)
			}
		}
	}
	walk(obj, true)
	if r.IntN(10) == 0 {
		if spec, ok := obj["spec"].(map[string]any); ok {
			if meta, ok := obj["metadata"].(map[string]any); ok {
				spec["parent"] = meta["name"]
				return
			}
		}
	}
	p := places[r.IntN(len(places))]
	v := runtime.DeepCopyJSONValue(values[r.IntN(len(values))])
	switch parent := p.parent.(type) {
	case map[string]any:
		if r.IntN(5) == 0 {
			delete(parent, p.key)
			return
		}
		parent[p.key] = v
	case []any:
		parent[p.index] = v
	}
}

// TestShortcutsAgreeWithAPIServer: DefaultAndValidate gives the errors and defaults of
// the API server's validators, built as the API server builds them, on thousands of
// objects of every kind, valid and invalid, mutated at random; and its CEL shortcut
// (ruleNode) holds exactly when the API server's CEL validator finds nothing, so it
// never hides an error and is taken for every valid object.
func TestShortcutsAgreeWithAPIServer(t *testing.T) {
	ctx := t.Context()
	r := rand.New(rand.NewPCG(1, 2))
	n := 4000
	if testing.Short() {
		n = 500
	}
	objs := seeds(t)
	valid, invalid := 0, 0
	for i := range n {
		obj := runtime.DeepCopyJSON(objs[i%len(objs)])
		for range r.IntN(4) {
			mutate(r, obj)
		}
		check(t, ctx, obj)
		if len(reference(ctx, obj["apiVersion"].(string), obj["kind"].(string), runtime.DeepCopyJSON(obj))) == 0 {
			valid++
		} else {
			invalid++
		}
	}
	if valid < n/10 || invalid < n/10 {
		t.Errorf("%d valid and %d invalid objects; the mutations should give many of both", valid, invalid)
	}
}

// check compares DefaultAndValidate with reference on obj.
func check(t *testing.T, ctx context.Context, obj map[string]any) {
	t.Helper()
	apiVersion, kind := obj["apiVersion"].(string), obj["kind"].(string)
	fast, slow := runtime.DeepCopyJSON(obj), runtime.DeepCopyJSON(obj)
	got, want := DefaultAndValidate(ctx, apiVersion, kind, fast), reference(ctx, apiVersion, kind, slow)
	if g, w := errorStrings(got), errorStrings(want); !slices.Equal(g, w) {
		y, _ := yaml.Marshal(obj)
		t.Fatalf("%s\nDefaultAndValidate: %q\nthe API server's validators: %q", y, g, w)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("defaulted differently:\n%v\n%v", fast, slow)
	}
	s := schemas[key(apiVersion, kind)]
	if !s.mirrored {
		t.Fatalf("%s: the CEL rules are not mirrored", kind)
	}
	if len(apiservervalidation.ValidateCustomResource(nil, slow, s.validator)) > 0 {
		return // CEL rules run only on objects that pass the schema
	}
	budget := int64(celconfig.RuntimeCELCostBudget)
	celErrs, _ := s.celValidator().Validate(ctx, nil, s.structural, slow, nil, celconfig.RuntimeCELCostBudget)
	if holds := s.rules.holds(ctx, slow, &budget); holds != (len(celErrs) == 0) {
		y, _ := yaml.Marshal(obj)
		t.Fatalf("%s\nthe shortcut says every rule holds: %t; the API server's CEL validator: %v", y, holds, celErrs)
	}
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	slices.Sort(out)
	return out
}

// FuzzDefaultAndValidate: on any object, DefaultAndValidate and the API server's
// validators agree (errors, defaults), and the CEL shortcut holds exactly when the
// API server's CEL validator finds nothing.
func FuzzDefaultAndValidate(f *testing.F) {
	for _, obj := range seeds(f) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if len(data) > 1<<16 || yaml.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		if !Known(apiVersion, kind) {
			return
		}
		check(t, t.Context(), obj)
	})
}
