package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// kindSchema is what validating one kind needs.
type kindSchema struct {
	structural *structuralschema.Structural
	openAPI    *spec.Schema
	validator  apiservervalidation.SchemaCreateValidator
	// rules tells quickly that every CEL rule holds; mirrored is false for kinds
	// whose rules it leaves to the API server's validator.
	rules    *ruleNode
	mirrored bool
	celOnce  sync.Once
	cel      *cel.Validator // the API server's, built when first needed
}

// celValidator is the API server's validator of the kind's CEL rules.
func (s *kindSchema) celValidator() *cel.Validator {
	s.celOnce.Do(func() { s.cel = cel.NewValidator(s.structural, true, celconfig.PerCallLimit) })
	return s.cel
}

var (
	loadOnce sync.Once
	schemas  map[string]*kindSchema // by "group/version, Kind=kind"
	loadErr  error
)

func key(apiVersion, kind string) string { return apiVersion + ", Kind=" + kind }

func load() {
	schemas = map[string]*kindSchema{}
	loadErr = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			ss, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			_, openAPISchema, err := apiservervalidation.NewSchemaValidator(&internal)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			ks := &kindSchema{structural: ss, openAPI: openAPISchema, validator: newOpenAPIValidator(openAPISchema)}
			ks.rules, err = newRuleNode(ss, true, model.SchemaDeclType(ss, true))
			ks.mirrored = err == nil
			schemas[key(crd.Spec.Group+"/"+v.Name, crd.Spec.Names.Kind)] = ks
		}
		return nil
	})
}

// Known reports whether a CRD defines the kind at the apiVersion.
func Known(apiVersion, kind string) bool {
	loadOnce.Do(load)
	return schemas[key(apiVersion, kind)] != nil
}

// DefaultAndValidate applies the CRD's defaults to obj (a custom resource decoded from
// JSON) and validates it as the API server does on create: the OpenAPI schema, then
// the CEL rules. The errors read as the API server's ("spec.minMember: Invalid value:
// 0: spec.minMember in body should be greater than or equal to 1"). Kinds without a
// CRD here are left alone. Safe for concurrent use.
//
// It costs a fraction of the API server's way (a linter validates thousands of
// objects): the schema validators of the kind's fields are built once instead of per
// object, and the CEL rules are first evaluated with each schema node wrapped once
// (ruleNode); only when a rule does not hold does the API server's CEL validator run,
// for its errors. TestShortcutsAgreeWithAPIServer and FuzzDefaultAndValidate hold the
// two ways to the same errors and defaults.
func DefaultAndValidate(ctx context.Context, apiVersion, kind string, obj map[string]any) field.ErrorList {
	loadOnce.Do(load)
	if loadErr != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("embedded CRDs: %w", loadErr))}
	}
	s := schemas[key(apiVersion, kind)]
	if s == nil {
		return nil
	}
	structuraldefaulting.Default(obj, s.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
	if len(errs) > 0 {
		return errs // as the API server, CEL rules run on objects that pass the schema
	}
	budget := int64(celconfig.RuntimeCELCostBudget)
	if s.mirrored && s.rules.holds(ctx, obj, &budget) {
		return nil
	}
	celErrs, _ := s.celValidator().Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return celErrs
}
