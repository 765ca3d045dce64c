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
	for code, status := range map[persist.Code]int{"invalid_request": 400, "unauthenticated": 401, "forbidden": 403,
		"missing_scope": 403, "not_found": 404, "conflict": 409, "resync_required": 410, "rate_limited": 429,
		"internal": 500, "not_implemented": 501, "provider_failed": 502, "unavailable": 503} {
		require.Equal(t, status, statusFor(code), "%s", code)
	}
	require.Equal(t, 500, statusFor("no_such_code"))
}
