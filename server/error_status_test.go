package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
)

// TestErrorCodeStatuses checks that every Code constant persist defines has a status here, and
// that the table names no code persist does not define.
func TestErrorCodeStatuses(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "../persist/error.go", nil, 0)
	require.NoError(t, err)
	codes := 0
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
				require.Contains(t, statusOf, persist.Code(v), "%s has no status", name.Name)
				codes++
			}
		}
	}
	require.Len(t, statusOf, codes)
}
