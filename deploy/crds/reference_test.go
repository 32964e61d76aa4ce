package crds

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/internal/golden"
)

// crdReference is docs/reference/crds.md, generated from the CRDs (themselves
// generated from the Go types).
const crdReference = "../../docs/reference/crds.md"

// TestCRDReference keeps docs/reference/crds.md equal to the CRDs: every field of
// every kind with its type, default, validation and documentation. Regenerate it with
// `make generate` (TESSERA_UPDATE_REFERENCE=1).
func TestCRDReference(t *testing.T) {
	names, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("# Custom resources reference\n\n<!-- Generated from the CRDs (deploy/crds, from the Go types in api/v1alpha1) by `make generate`; do not edit. -->\n\n" +
		"Every field of Tessera's kinds, group `tessera.dev`, version `v1alpha1`. A field is written as its path from the object's root.\n")
	for _, e := range names {
		raw, err := files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, v := range crd.Spec.Versions {
			fmt.Fprintf(&b, "\n## %s (%s, %s)\n\n", crd.Spec.Names.Kind, v.Name, strings.ToLower(string(crd.Spec.Scope)))
			s := v.Schema.OpenAPIV3Schema
			if s.Description != "" {
				fmt.Fprintf(&b, "%s\n\n", oneLine(s.Description))
			}
			b.WriteString("| field | type | default | validation | meaning |\n|---|---|---|---|---|\n")
			for _, top := range []string{"spec", "status"} {
				if p, ok := s.Properties[top]; ok {
					writeFields(&b, top, p)
				}
			}
		}
	}
	golden.Check(t, crdReference, b.Bytes())

}

// writeFields writes a row for the field at path and its children, in name order.
func writeFields(b *bytes.Buffer, path string, s apiextensionsv1.JSONSchemaProps) {
	typ := s.Type
	if typ == "array" && s.Items != nil && s.Items.Schema != nil {
		typ = "array of " + s.Items.Schema.Type
	}
	if s.XIntOrString {
		typ = "int or string"
	}
	def := ""
	if s.Default != nil {
		def = "`" + string(s.Default.Raw) + "`"
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", path, typ, def, validation(s), oneLine(s.Description))
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		writeFields(b, path+"."+name, s.Properties[name])
	}
	if s.Items != nil && s.Items.Schema != nil && len(s.Items.Schema.Properties) > 0 {
		for _, name := range slices.Sorted(maps.Keys(s.Items.Schema.Properties)) {
			writeFields(b, path+"[]."+name, s.Items.Schema.Properties[name])
		}
	}
}

// validation lists the schema's constraints.
func validation(s apiextensionsv1.JSONSchemaProps) string {
	var v []string
	if s.Minimum != nil {
		v = append(v, fmt.Sprintf("≥ %g", *s.Minimum))
	}
	if s.Maximum != nil {
		v = append(v, fmt.Sprintf("≤ %g", *s.Maximum))
	}
	if s.MaxLength != nil {
		v = append(v, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.MaxItems != nil {
		v = append(v, fmt.Sprintf("at most %d items", *s.MaxItems))
	}
	if s.Pattern != "" {
		v = append(v, "pattern `"+strings.ReplaceAll(s.Pattern, "|", `\|`)+"`")
	}
	for _, e := range s.Enum {
		v = append(v, "`"+string(e.Raw)+"`")
	}
	for _, r := range s.XValidations {
		v = append(v, oneLine(r.Message))
	}
	return strings.Join(v, "; ")
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}
