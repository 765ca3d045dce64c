package persist

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestErrorCodes checks that every Code constant in error.go is unique and has a status.
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
				require.Contains(t, statusOf, Code(v), "%s has no status", name.Name)
			}
		}
	}
	require.Len(t, statusOf, len(seen))
}

// TestUnreachable: connection failures are outages (the edge answers 503); statement failures
// and a cancelled request are not.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"ConnectRefused", fmt.Errorf("acquire: %w", &pgconn.ConnectError{}), true},
		{"ConnectionException", &pgconn.PgError{Code: "08006"}, true},
		{"AdminShutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"CannotConnectNow", &pgconn.PgError{Code: "57P03"}, true},
		{"TooManyConnections", &pgconn.PgError{Code: "53300"}, true},
		{"DroppedConnection", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true},
		{"NetworkError", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"UniqueViolation", &pgconn.PgError{Code: "23505"}, false},
		{"BadText", &pgconn.PgError{Code: "22021"}, false},
		{"Cancelled", fmt.Errorf("query: %w", context.Canceled), false},
		{"NoRows", pgx.ErrNoRows, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Unreachable(tc.err))
		})
	}
}

// TestTranslateBadText: SQLSTATE 22021 (a NUL byte or invalid UTF-8 reached Postgres) is a 400
// invalid_request, the backstop behind the edge's own checks.
func TestTranslateBadText(t *testing.T) {
	t.Parallel()
	e, ok := ErrorOf(translate(fmt.Errorf("insert: %w", &pgconn.PgError{Code: "22021"})))
	require.True(t, ok)
	require.Equal(t, 400, e.Status)
	require.Equal(t, CodeInvalidRequest, e.Code)
}

// TestIsRefusal: an outage's 503 is no verdict; the store's other errors are.
func TestIsRefusal(t *testing.T) {
	t.Parallel()
	require.False(t, IsRefusal(translate(fmt.Errorf("acquire: %w", &pgconn.ConnectError{}))))
	require.False(t, IsRefusal(errors.New("plain")))
	require.True(t, IsRefusal(Forbidden("no")))
	require.True(t, IsRefusal(translate(&pgconn.PgError{Code: "23505"})))
}
