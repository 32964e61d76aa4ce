package docs

import (
	"go/ast"
	"go/token"
	"strconv"
)

// stringConst is a constant of a Go file whose value is a string literal.
type stringConst struct {
	value string
	name  *ast.Ident     // the constant's name
	spec  *ast.ValueSpec // the spec that declares it
	decl  *ast.GenDecl   // the const block that holds spec
}

// stringConsts lists f's constants whose values are string literals, in file order.
func stringConsts(f *ast.File) []stringConst {
	var consts []stringConst
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				consts = append(consts, stringConst{value: s, name: vs.Names[i], spec: vs, decl: gd})
			}
		}
	}
	return consts
}
