package docs

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/internal/golden"
)

// labelsReference is docs/reference/labels-annotations.md, generated from the code.
const labelsReference = "../../docs/reference/labels-annotations.md"

// key is one tessera.dev/* name: where the code declares or reads it, and what it says.
type key struct {
	name    string
	kinds   []string // label, annotation, taint, resource, name
	symbols []string // package.Constant, or the Rego file that reads it
	doc     string
}

// TestLabelsReference keeps docs/reference/labels-annotations.md equal to the
// tessera.dev/* labels, annotations, taints and resources the code declares as Go
// constants (with their doc comments) and the default Rego policies read. Regenerate it
// with `make generate` (TESSERA_UPDATE_REFERENCE=1).
func TestLabelsReference(t *testing.T) {
	keys, err := collectKeys("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tessera.dev/queue", "tessera.dev/gpu-assignment", "tessera.dev/gpu-slice", "tessera.dev/rewrite-nvidia-gpu"} {
		if _, ok := keys[want]; !ok {
			t.Errorf("%s not found in the code", want)
		}
	}
	golden.Check(t, labelsReference, renderKeys(keys))
}

// regoKey is a tessera.dev/* string in a Rego policy.
var regoKey = regexp.MustCompile(`"(tessera\.dev/[a-z0-9.-]+)"`)

// collectKeys reads the non-test Go files and the default Rego policies under root.
func collectKeys(root string) (map[string]*key, error) {
	keys := map[string]*key{}
	add := func(name, kind, symbol, doc string) {
		if strings.HasPrefix(name, "tessera.dev/v") { // the API group/version
			return
		}
		k := keys[name]
		if k == nil {
			k = &key{name: name}
			keys[name] = k
		}
		if !slices.Contains(k.kinds, kind) {
			k.kinds = append(k.kinds, kind)
		}
		if !slices.Contains(k.symbols, symbol) {
			k.symbols = append(k.symbols, symbol)
		}
		if k.doc == "" {
			k.doc = doc
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "test") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			pkg := filepath.ToSlash(filepath.Dir(rel))
			for _, c := range stringConsts(f) {
				if strings.HasPrefix(c.value, "tessera.dev/") {
					add(c.value, kindOf(c.name.Name), pkg+"."+c.name.Name, docOf(c.spec, c.decl))
				}
			}
		case strings.HasPrefix(filepath.ToSlash(rel), "rego/policies/") && strings.HasSuffix(path, ".rego") && !strings.HasSuffix(path, "_test.rego"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range regoKey.FindAllSubmatch(b, -1) {
				add(string(m[1]), "", filepath.ToSlash(rel), "")
			}
		}
		return nil
	})
	return keys, err
}

// kindOf tells a constant's kind by its name.
func kindOf(name string) string {
	for _, p := range []string{"Label", "Annotation", "Taint", "Resource"} {
		if strings.HasPrefix(name, p) {
			return strings.ToLower(p)
		}
	}
	return ""
}

// docOf is a constant's own comment, else its group's, on one line.
func docOf(vs *ast.ValueSpec, gd *ast.GenDecl) string {
	for _, c := range []*ast.CommentGroup{vs.Doc, vs.Comment, gd.Doc} {
		if c != nil {
			return strings.Join(strings.Fields(c.Text()), " ")
		}
	}
	return ""
}

func renderKeys(keys map[string]*key) []byte {
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# Labels, annotations, taints and resources\n\n" +
		"<!-- Generated from the code by `make generate`; do not edit. -->\n\n" +
		"Every `tessera.dev/*` name that Tessera declares in its Go code or reads in its default Rego\n" +
		"policies, with the constant that holds it and what its comment says. Names of other\n" +
		"systems that Tessera reads (Volcano's, Kueue's, Cluster Autoscaler's, Karpenter's) are\n" +
		"listed in [../design.md](../design.md); who may write which: [../security.md](../security.md).\n\n" +
		"| name | kind | declared in | meaning |\n|---|---|---|---|\n")
	for _, n := range names {
		k := keys[n]
		kinds := slices.DeleteFunc(slices.Clone(k.kinds), func(s string) bool { return s == "" })
		sort.Strings(kinds)
		sort.Strings(k.symbols)
		doc := k.doc
		if doc == "" {
			doc = "read by the default policies"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", n, strings.Join(kinds, ", "),
			"`"+strings.Join(k.symbols, "`, `")+"`", strings.ReplaceAll(doc, "|", `\|`))
	}
	return b.Bytes()
}
