package crds

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// ruleNode evaluates the CEL rules (x-kubernetes-validations) of one schema node and
// of the nodes below it on an object being created, to tell quickly that every rule
// holds. The API server's validator (cel.Validator) wraps a schema node anew for every
// field a rule reads (model.Structural.Properties copies all of the node's properties
// each time), about 60 KB of garbage for a Queue; a ruleNode wraps each node once.
//
// It visits the same nodes in the same way as cel.Validator on create: the rules of a
// node, then those of the properties, additionalProperties or items the object has,
// sharing one cost budget. It only answers "every rule holds"; when one does not, or
// fails to evaluate, or runs over budget, DefaultAndValidate asks cel.Validator, whose
// errors are the API server's. Kinds with rules it does not mirror (transition rules
// on oldSelf, rules under allOf) are validated by cel.Validator alone.
type ruleNode struct {
	schema     common.Schema // what self is read through, built once
	rules      []cel.CompilationResult
	properties map[string]*ruleNode
	additional *ruleNode
	items      *ruleNode
}

// errNotMirrored: the schema has rules ruleNode leaves to cel.Validator.
var errNotMirrored = errors.New("rules not mirrored")

// newRuleNode builds the ruleNode of s as cel.NewValidator builds its Validator: nil
// when no rule is at or below s.
func newRuleNode(s *structuralschema.Structural, isResourceRoot bool, declType *apiservercel.DeclType) (*ruleNode, error) {
	if !hasRules(s) {
		return nil, nil
	}
	if allOfRules(s) {
		return nil, errNotMirrored
	}
	n := &ruleNode{}
	if len(s.XValidations) > 0 {
		rules, err := cel.Compile(s, declType, celconfig.PerCallLimit, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.StoredExpressionsEnvLoader())
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			if r.Error != nil || r.UsesOldSelf {
				return nil, errNotMirrored
			}
		}
		n.rules = rules
		self := s
		if isResourceRoot {
			self = model.WithTypeAndObjectMeta(s)
		}
		n.schema = wrap(self)
	}
	var elemType *apiservercel.DeclType
	if declType != nil {
		elemType = declType.ElemType
	}
	var err error
	if s.Items != nil {
		if n.items, err = newRuleNode(s.Items, s.Items.XEmbeddedResource, elemType); err != nil {
			return nil, err
		}
	}
	for k, prop := range s.Properties {
		var fieldType *apiservercel.DeclType
		if escaped, ok := apiservercel.Escape(k); ok {
			if declType == nil {
				continue
			}
			f, ok := declType.Fields[escaped]
			if !ok {
				continue // as cel.Validator: fields of unknown type have no rules run
			}
			fieldType = f.Type
		} else if fieldType = model.SchemaDeclType(&prop, prop.XEmbeddedResource); fieldType == nil {
			continue
		}
		p, err := newRuleNode(&prop, prop.XEmbeddedResource, fieldType)
		if err != nil {
			return nil, err
		}
		if p != nil {
			if n.properties == nil {
				n.properties = map[string]*ruleNode{}
			}
			n.properties[k] = p
		}
	}
	if a := s.AdditionalProperties; a != nil && a.Structural != nil {
		if n.additional, err = newRuleNode(a.Structural, a.Structural.XEmbeddedResource, elemType); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func hasRules(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if len(s.XValidations) > 0 || hasRules(s.Items) || (s.AdditionalProperties != nil && hasRules(s.AdditionalProperties.Structural)) {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(&p) {
			return true
		}
	}
	return false
}

// allOfRules reports whether a rule sits under an allOf at or below s.
func allOfRules(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if v := s.ValueValidation; v != nil {
		for i := range v.AllOf {
			if nestedRules(&v.AllOf[i]) {
				return true
			}
		}
	}
	if allOfRules(s.Items) || (s.AdditionalProperties != nil && allOfRules(s.AdditionalProperties.Structural)) {
		return true
	}
	for _, p := range s.Properties {
		if allOfRules(&p) {
			return true
		}
	}
	return false
}

func nestedRules(n *structuralschema.NestedValueValidation) bool {
	if n == nil {
		return false
	}
	if len(n.XValidations) > 0 || nestedRules(n.Items) || nestedRules(n.AdditionalProperties) {
		return true
	}
	for _, p := range n.Properties {
		if nestedRules(&p) {
			return true
		}
	}
	return false
}

// holds reports whether every rule at and below n holds on obj, spending budget (the
// cost units left, as cel.Validator counts them).
func (n *ruleNode) holds(ctx context.Context, obj any, budget *int64) bool {
	if n == nil || obj == nil {
		return true
	}
	if len(n.rules) > 0 {
		vars := map[string]any{cel.ScopedVarName: common.UnstructuredToVal(obj, n.schema)}
		for i := range n.rules {
			r := &n.rules[i]
			if r.Program == nil {
				continue // an empty rule
			}
			v, details, err := r.Program.ContextEval(ctx, vars)
			if err != nil || details == nil {
				return false
			}
			cost := details.ActualCost()
			if cost == nil || *cost > uint64(max(*budget, 0)) {
				return false
			}
			*budget -= int64(*cost)
			if ok, _ := v.Value().(bool); !ok {
				return false
			}
		}
	}
	switch o := obj.(type) {
	case map[string]any:
		if n.additional != nil {
			for _, v := range o {
				if !n.additional.holds(ctx, v, budget) {
					return false
				}
			}
		}
		if n.properties != nil {
			for k, v := range o {
				if !n.properties[k].holds(ctx, v, budget) {
					return false
				}
			}
		}
	case []any:
		for _, v := range o {
			if !n.items.holds(ctx, v, budget) {
				return false
			}
		}
	}
	return true
}

// cachedSchema is model.Structural with the nodes below built once.
type cachedSchema struct {
	*model.Structural
	properties map[string]common.Schema
	items      common.Schema
	additional common.SchemaOrBool
	metaOnce   sync.Once
	meta       common.Schema
}

var _ common.Schema = (*cachedSchema)(nil)

func wrap(s *structuralschema.Structural) *cachedSchema {
	c := &cachedSchema{Structural: &model.Structural{Structural: s}}
	if s.Properties != nil {
		c.properties = make(map[string]common.Schema, len(s.Properties))
		for k, p := range s.Properties {
			c.properties[k] = wrap(&p)
		}
	}
	if s.Items != nil {
		c.items = wrap(s.Items)
	}
	if a := s.AdditionalProperties; a != nil {
		sb := &schemaOrBool{allows: a.Bool}
		if a.Structural != nil {
			sb.schema = wrap(a.Structural)
		}
		c.additional = sb
	}
	return c
}

func (c *cachedSchema) Properties() map[string]common.Schema { return c.properties }
func (c *cachedSchema) Items() common.Schema                 { return c.items }
func (c *cachedSchema) AdditionalProperties() common.SchemaOrBool {
	return c.additional
}

func (c *cachedSchema) WithTypeAndObjectMeta() common.Schema {
	c.metaOnce.Do(func() { c.meta = wrap(model.WithTypeAndObjectMeta(c.Structural.Structural)) })
	return c.meta
}

type schemaOrBool struct {
	schema common.Schema
	allows bool
}

func (s *schemaOrBool) Schema() common.Schema { return s.schema }
func (s *schemaOrBool) Allows() bool          { return s.allows }

// openAPIValidator is the API server's OpenAPI schema validator of a kind (what
// validation.NewSchemaValidator makes) with its validators for fields and list items
// built once. The API server builds a validator for every field of every object it
// validates (validate.NewSchemaValidator, half the time spent on a Queue);
// kube-openapi's validators keep no state between calls, so one validator per schema
// node gives the same results.
type openAPIValidator struct {
	root *openAPINode
}

var _ apiservervalidation.SchemaCreateValidator = openAPIValidator{}

func newOpenAPIValidator(schema *spec.Schema) openAPIValidator {
	return openAPIValidator{root: newOpenAPINode(schema, nil, "", strfmt.Default)}
}

func (v openAPIValidator) Validate(obj any, _ ...apiservervalidation.ValidationOption) *validate.Result {
	return v.root.validator.Validate(obj)
}

// maxChildren bounds the validators one node keeps: a map's values are validated at
// a path per key, and keys are the input's.
const maxChildren = 256

// openAPINode is the validator of a schema node at a path, and those of the fields
// and items below it, by path.
type openAPINode struct {
	validator *validate.SchemaValidator
	children  sync.Map // path -> *openAPINode
	count     atomic.Int32
}

func newOpenAPINode(schema *spec.Schema, root any, path string, formats strfmt.Registry) *openAPINode {
	n := &openAPINode{}
	n.validator = validate.NewSchemaValidator(schema, root, path, formats, func(o *validate.SchemaValidatorOptions) {
		o.NewValidatorForField = func(_ string, schema *spec.Schema, root any, path string, formats strfmt.Registry, _ ...validate.Option) validate.ValueValidator {
			return n.child(schema, root, path, formats)
		}
		o.NewValidatorForIndex = func(_ int, schema *spec.Schema, root any, path string, formats strfmt.Registry, _ ...validate.Option) validate.ValueValidator {
			return n.child(schema, root, path, formats)
		}
	})
	return n
}

// child is the validator at path below n. In a structural schema a path below a node
// has one schema: properties and additionalProperties exclude each other, and there
// are no patternProperties.
func (n *openAPINode) child(schema *spec.Schema, root any, path string, formats strfmt.Registry) *validate.SchemaValidator {
	if c, ok := n.children.Load(path); ok {
		return c.(*openAPINode).validator
	}
	c := newOpenAPINode(schema, root, path, formats)
	if n.count.Load() < maxChildren {
		if prev, loaded := n.children.LoadOrStore(path, c); loaded {
			return prev.(*openAPINode).validator
		}
		n.count.Add(1)
	}
	return c.validator
}
