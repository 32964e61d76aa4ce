package docs

// docs/workloads.md is checked against the code: its manifests decode strictly (the
// built-in kinds into their Go types, the workload controllers' kinds against their CRDs
// as hack/workload-crds.sh copies them, unknown fields included), the gang sizes its
// "You should see" lines claim are what the scheduler's workloads package computes for
// them, and its table of gang rules has one row per kind that package knows.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/deploy/crds"
	"github.com/tessera-gpu/tessera/scheduler/snapshot/workloads"
)

const workloadsPage = "../../docs/workloads.md"

// noSchema are the kinds of the page that no CRD here describes: checked for
// apiVersion, kind and name only.
var noSchema = map[string]bool{"trainer.kubeflow.org/v1alpha1, Kind=TrainJob": true}

// manifest is one object of a YAML block of the page.
type manifest struct {
	line int // the block's first line
	raw  []byte
	obj  *unstructured.Unstructured
}

// gangClaim is a "<!-- gang: NAME SIZE -->" marker: the workload of the YAML block
// before it forms the gang NAME of SIZE pods.
type gangClaim struct {
	line  int
	name  string
	size  int
	block []manifest
}

var gangMarker = regexp.MustCompile(`^<!-- gang: (\S+) (\d+) -->$`)

// readWorkloadsPage returns docs/workloads.md, its YAML blocks' objects block by block,
// and its gang markers.
func readWorkloadsPage(t *testing.T) (string, [][]manifest, []gangClaim) {
	t.Helper()
	return readPage(t, workloadsPage)
}

// readPage returns the page, its YAML blocks' objects block by block, and its gang
// markers.
func readPage(t *testing.T, page string) (string, [][]manifest, []gangClaim) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks [][]manifest
		claims []gangClaim
		body   bytes.Buffer
		start  int
		fence  string // the open fence's info string; "" outside a block
	)
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && strings.HasPrefix(trimmed, "```"):
			fence, start = strings.TrimPrefix(trimmed, "```"), n
			if fence == "" {
				fence = "text"
			}
			body.Reset()
		case fence != "" && trimmed == "```":
			if fence == "yaml" {
				blocks = append(blocks, decodeBlock(t, page, start, body.Bytes()))
			}
			fence = ""
		case fence != "":
			body.WriteString(line + "\n")
		default:
			if m := gangMarker.FindStringSubmatch(trimmed); m != nil {
				if len(blocks) == 0 {
					t.Fatalf("%s:%d: a gang marker before any YAML block", page, n)
				}
				size, _ := strconv.Atoi(m[2])
				claims = append(claims, gangClaim{line: n, name: m[1], size: size, block: blocks[len(blocks)-1]})
			}
		}
	}
	if fence != "" {
		t.Fatalf("%s:%d: the block is not closed", page, start)
	}
	return string(b), blocks, claims
}

func decodeBlock(t *testing.T, page string, line int, body []byte) []manifest {
	t.Helper()
	var out []manifest
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(body)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", page, line, err)
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &o.Object); err != nil {
			t.Fatalf("%s:%d: the YAML block does not parse: %v", page, line, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		out = append(out, manifest{line: line, raw: doc, obj: o})
	}
	if len(out) == 0 {
		t.Fatalf("%s:%d: a YAML block without an object", page, line)
	}
	return out
}

// TestWorkloadsPageManifests: every object of the page's YAML blocks is whole (apiVersion,
// kind, name) and is what the API server would take as it is.
func TestWorkloadsPageManifests(t *testing.T) {
	_, blocks, _ := readWorkloadsPage(t)
	var custom []manifest
	for _, block := range blocks {
		for _, m := range block {
			o := m.obj
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
				t.Errorf("%s:%d: every object needs apiVersion, kind and metadata.name", workloadsPage, m.line)
				continue
			}
			gvk := o.GroupVersionKind().String()
			var typed any
			switch o.GroupVersionKind() {
			case corev1.SchemeGroupVersion.WithKind("Pod"):
				typed = &corev1.Pod{}
			case batchv1.SchemeGroupVersion.WithKind("Job"):
				typed = &batchv1.Job{}
			case schedulingv1alpha3.SchemeGroupVersion.WithKind("PodGroup"):
				typed = &schedulingv1alpha3.PodGroup{}
			}
			switch {
			case typed != nil:
				if err := yaml.UnmarshalStrict(m.raw, typed); err != nil {
					t.Errorf("%s:%d: %s %s: %v", workloadsPage, m.line, o.GetKind(), o.GetName(), err)
				}
			case crds.Known(o.GetAPIVersion(), o.GetKind()):
				if errs := crds.DefaultAndValidate(t.Context(), o.GetAPIVersion(), o.GetKind(), o.DeepCopy().Object); len(errs) > 0 {
					t.Errorf("%s:%d: %s %s: %v", workloadsPage, m.line, o.GetKind(), o.GetName(), errs.ToAggregate())
				}
			case noSchema[gvk]:
			default:
				custom = append(custom, m)
			}
		}
	}
	if len(custom) == 0 {
		return
	}
	schemas := workloadCRDs(t)
	for _, m := range custom {
		o := m.obj
		s := schemas[o.GroupVersionKind().String()]
		if s == nil {
			t.Errorf("%s:%d: no CRD of hack/workload-crds.sh defines %s: use a version it serves, or list the kind in noSchema", workloadsPage, m.line, o.GroupVersionKind())
			continue
		}
		obj := o.DeepCopy().Object
		if errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator); len(errs) > 0 {
			t.Errorf("%s:%d: %s %s: %v", workloadsPage, m.line, o.GetKind(), o.GetName(), errs.ToAggregate())
		}
		// The API server drops fields its schema does not know: the page must have none.
		if dropped := pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(dropped) > 0 {
			t.Errorf("%s:%d: %s %s: fields the CRD does not know, which the API server would drop: %s", workloadsPage, m.line, o.GetKind(), o.GetName(), strings.Join(dropped, ", "))
		}
	}
}

type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

// workloadCRDs reads the CRDs hack/workload-crds.sh copies (from its cache, or the Go
// module proxy), by group/version, Kind=kind. Without them the test is skipped, unless
// TESSERA_REQUIRE_K8S=1.
func workloadCRDs(t *testing.T) map[string]*crdSchema {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "workload-crds.sh")).Output()
	if err != nil {
		msg := fmt.Sprintf("the workload CRDs (hack/workload-crds.sh): %v", err)
		if os.Getenv("TESSERA_REQUIRE_K8S") == "1" {
			t.Fatal(msg)
		}
		t.Skip("skipping: " + msg)
	}
	dir := strings.TrimSpace(string(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (%v)", dir, err)
	}
	schemas := map[string]*crdSchema{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			ss, err := structuralschema.NewStructural(&internal)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			schemas[gvk.String()] = &crdSchema{structural: ss, validator: validator}
		}
	}
	return schemas
}

// TestWorkloadsPageGangSizes: the gang each "You should see" claims is the one the
// scheduler's workloads package forms from the example: a pod shaped as its controller
// makes it is in the gang named, of the size given.
func TestWorkloadsPageGangSizes(t *testing.T) {
	_, _, claims := readWorkloadsPage(t)
	if len(claims) < 7 {
		t.Fatalf("%s: %d gang markers; every example with a gang has one (<!-- gang: NAME SIZE --> after its YAML block)", workloadsPage, len(claims))
	}
	for _, c := range claims {
		pod, sizer, err := controllerPod(c.block)
		if err != nil {
			t.Errorf("%s:%d: %v", workloadsPage, c.line, err)
			continue
		}
		r, ok := workloads.Of(pod)
		if !ok {
			t.Errorf("%s:%d: a pod of the example is in no workload gang", workloadsPage, c.line)
			continue
		}
		if r.Gang != c.name {
			t.Errorf("%s:%d: the gang is %q, the page says %q", workloadsPage, c.line, r.Gang, c.name)
		}
		if sizer == nil { // the pod names the object that sizes it (the Workload API)
			for _, m := range c.block {
				if k, ok := workloads.KindOf(m.obj.GroupVersionKind()); ok && k == r.Kind && m.obj.GetName() == r.Object {
					sizer = m.obj
				}
			}
		}
		size, err := r.Size(pod.Namespace, workloads.Input{Object: sizer, WorkersMade: true})
		if err != nil || size.Waiting != "" {
			t.Errorf("%s:%d: the gang %s has no size: %v %s", workloadsPage, c.line, r.Key(), err, size.Waiting)
			continue
		}
		if size.MinMember != c.size {
			t.Errorf("%s:%d: the gang %s is %d pods, the page says %d", workloadsPage, c.line, r.Key(), size.MinMember, c.size)
		}
	}
}

// controllerPod is a pod of the block's workload labelled as its controller labels the
// pods it makes, and the object that sizes its gang (nil: the pod names it).
func controllerPod(block []manifest) (*corev1.Pod, *unstructured.Unstructured, error) {
	o := block[len(block)-1].obj // a workload after the objects it needs
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: o.GetName() + "-0", Namespace: o.GetNamespace(), Labels: map[string]string{}, Annotations: map[string]string{}}}
	controlled := func(kind string) {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: kind, Name: o.GetName(), Controller: &yes}}
	}
	name := o.GetName()
	switch o.GetKind() {
	case "JobSet":
		pod.Labels[workloads.LabelJobSetName] = name
		pod.Labels[workloads.LabelJobSetAttempt] = "0"
	case "RayCluster":
		pod.Labels[workloads.LabelRayCluster] = name
		controlled("RayCluster")
	case "RayJob": // KubeRay makes a RayCluster of spec.rayClusterSpec (its name: the RayJob's, suffixed)
		spec, _, _ := unstructured.NestedMap(o.Object, "spec", "rayClusterSpec")
		rc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster",
			"metadata": map[string]any{"name": name, "namespace": o.GetNamespace()}, "spec": spec}}
		pod.Labels[workloads.LabelRayCluster] = name
		controlled("RayCluster")
		return pod, rc, nil
	case "LeaderWorkerSet":
		size := 1.0 // LeaderWorkerSet's default; decoded YAML numbers are float64
		if v, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "leaderWorkerTemplate", "size"); ok {
			size, _ = v.(float64)
		}
		pod.Labels[workloads.LabelLWSName] = name
		pod.Labels[workloads.LabelLWSGroupIndex] = "0"
		pod.Labels[workloads.LabelLWSWorkerIndex] = "0"
		pod.Annotations[workloads.AnnotationLWSSize] = strconv.Itoa(int(size))
	case "PyTorchJob", "MPIJob":
		operator := map[string]string{"PyTorchJob": "pytorchjob-controller", "MPIJob": "mpi-operator"}[o.GetKind()]
		pod.Labels[workloads.LabelKubeflowJobName] = name
		pod.Labels[workloads.LabelKubeflowOperator] = operator
	case "Job": // its pods are made from its template
		var job batchv1.Job
		if err := runtimeConvert(o, &job); err != nil {
			return nil, nil, err
		}
		pod.Labels, pod.Spec = job.Spec.Template.Labels, job.Spec.Template.Spec
		return pod, nil, nil
	default:
		return nil, nil, fmt.Errorf("no gang to check for a %s", o.GetKind())
	}
	return pod, o, nil
}

func runtimeConvert(o *unstructured.Unstructured, out any) error {
	b, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
}

// TestWorkloadsPageGangTable: the table of gang rules has one row per workload kind of
// scheduler/snapshot/workloads, each naming its object's apiVersion and kind, and the
// labels and annotations it names are those the package reads.
func TestWorkloadsPageGangTable(t *testing.T) {
	page, _, _ := readWorkloadsPage(t)
	kinds, names := workloadsConstants(t)
	// podSized are the kinds without an object: the row names the label that finds the gang.
	podSized := map[workloads.Kind]string{workloads.KueuePodGroup: workloads.LabelKueuePodGroup}
	section := page[strings.Index(page, "\n## Gang rules\n")+1:]
	if end := strings.Index(section[1:], "\n## "); end > 0 {
		section = section[:end+1]
	}
	rowKind := regexp.MustCompile("`(\\w+)` \\(`([^`]+)`\\)")
	code := regexp.MustCompile("`([^`]+)`")
	seen := map[workloads.Kind]int{}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| kind ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Errorf("%s: a row of %d cells, want 4: %s", workloadsPage, len(cells), line)
			continue
		}
		rows++
		var k workloads.Kind
		if m := rowKind.FindStringSubmatch(cells[0]); m != nil {
			gv, err := schema.ParseGroupVersion(m[2])
			if err != nil {
				t.Errorf("%s: %s: %v", workloadsPage, cells[0], err)
				continue
			}
			var ok bool
			if k, ok = workloads.KindOf(gv.WithKind(m[1])); !ok {
				t.Errorf("%s: the table names %s %s, whose gangs the scheduler does not form", workloadsPage, m[2], m[1])
				continue
			}
		} else {
			for pk, label := range podSized {
				if strings.Contains(cells[1], "`"+label+"`") {
					k = pk
				}
			}
			if k == "" {
				t.Errorf("%s: a row that names no workload kind: %s", workloadsPage, line)
				continue
			}
		}
		seen[k]++
		// The labels that put a pod in the gang, and the names its size is read from.
		for _, cell := range []string{cells[1], cells[3]} {
			for _, m := range code.FindAllStringSubmatch(cell, -1) {
				key, _, _ := strings.Cut(m[1], ":")
				if !strings.Contains(key, "/") || strings.Contains(key, " ") {
					continue
				}
				if !names[key] && key != tesserav1.AnnotationMinAvailable {
					t.Errorf("%s: the table names %s, which scheduler/snapshot/workloads does not read", workloadsPage, key)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatalf("%s: no table under \"## Gang rules\"", workloadsPage)
	}
	for _, k := range kinds {
		if _, ok := k.GVK(); !ok && podSized[k] == "" {
			t.Errorf("workloads.Kind %s has no object: add its row and its label to podSized", k)
		}
		if seen[k] != 1 {
			t.Errorf("%s: %d rows for the workload kind %s, want 1", workloadsPage, seen[k], k)
		}
	}
}

// workloadsConstants reads scheduler/snapshot/workloads/workloads.go: its Kind
// constants, and every string constant (the labels and annotations it reads).
func workloadsConstants(t *testing.T) ([]workloads.Kind, map[string]bool) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../scheduler/snapshot/workloads/workloads.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []workloads.Kind
	names := map[string]bool{}
	for _, c := range stringConsts(f) {
		if id, ok := c.spec.Type.(*ast.Ident); ok && id.Name == "Kind" {
			kinds = append(kinds, workloads.Kind(c.value))
		} else {
			names[c.value] = true
		}
	}
	// Names the package takes from api/v1alpha1 (tesserav1.X) count as read too.
	api := map[string]string{}
	for _, file := range []string{"../../api/v1alpha1/names.go"} {
		af, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range stringConsts(af) {
			api[c.name.Name] = c.value
		}
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if sel, ok := v.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "tesserav1" && api[sel.Sel.Name] != "" {
						names[api[sel.Sel.Name]] = true
					}
				}
			}
		}
	}
	if len(kinds) == 0 {
		t.Fatal("no Kind constants in scheduler/snapshot/workloads/workloads.go")
	}
	return kinds, names
}

// TestWorkloadsPageLinks: the page's relative links name files that exist, and headings
// that exist in them (GitHub's anchors: lower case, punctuation dropped, spaces as dashes).
func TestWorkloadsPageLinks(t *testing.T) {
	page, _, _ := readWorkloadsPage(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, m := range link.FindAllStringSubmatch(page, -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		path := workloadsPage
		if file != "" {
			path = filepath.Join(filepath.Dir(workloadsPage), file)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: the link %s: %v", workloadsPage, target, err)
			continue
		}
		if anchor == "" || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !hasAnchor(string(b), anchor) {
			t.Errorf("%s: the link %s: %s has no such heading", workloadsPage, target, path)
		}
	}
}

var anchorDrop = regexp.MustCompile(`[^\p{L}\p{N} _-]`)

func hasAnchor(doc, anchor string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if strings.ReplaceAll(anchorDrop.ReplaceAllString(h, ""), " ", "-") == anchor {
			return true
		}
	}
	return false
}
