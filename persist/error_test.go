package persist

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrorCodes checks that every Code constant in error.go is unique (server's
// TestErrorCodeStatuses checks that each has a status).
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "error.go", nil, 0)
	require.NoError(t, err)
	seen := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s must be a string literal", name.Name)
				v, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				require.NotContains(t, seen, v, "%s repeats the code of %s", name.Name, seen[v])
				seen[v] = name.Name
			}
		}
	}
}
