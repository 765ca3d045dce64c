package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestRouteTable walks the real router: every route must come from routeTable (so it carries a
// requirement) and be described in the OpenAPI document with the same method.
func TestRouteTable(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Store: persisttest.NewStore(t)})
	require.NoError(t, err)

	declared := map[string]bool{}
	for _, rt := range s.routeTable() {
		require.NotZero(t, rt.access.audience, "%s %s has no requirement", rt.method, rt.pattern)
		if rt.access.audience == audienceBot {
			require.NotEmpty(t, rt.access.scopes, "%s %s: bot-only routes name a scope", rt.method, rt.pattern)
		}
		key := rt.method + " " + rt.pattern
		require.False(t, declared[key], "%s is declared twice", key)
		declared[key] = true
	}

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPIDocument, &doc))

	walked := 0
	err = chi.Walk(s.router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		walked++
		require.True(t, declared[method+" "+pattern], "%s %s is routed but not in routeTable", method, pattern)
		ops, ok := doc.Paths[pattern]
		require.True(t, ok, "%s is missing from openapi.json", pattern)
		_, ok = ops[strings.ToLower(method)]
		require.True(t, ok, "%s %s is missing from openapi.json", method, pattern)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(declared), walked)

	// And the document describes nothing that is not routed.
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			require.True(t, declared[strings.ToUpper(method)+" "+path], "openapi.json documents %s %s, which is not routed", method, path)
		}
	}
}

func TestMergeOpenAPIRefusesDuplicates(t *testing.T) {
	t.Parallel()
	base := &fstest.MapFile{Data: []byte(`{"openapi":"3.1.0","components":{"schemas":{"Error":{}}},"paths":{}}`)}
	_, err := mergeOpenAPI(fstest.MapFS{
		"openapi/base.json": base,
		"openapi/a.json":    {Data: []byte(`{"paths":{"/x":{"get":{}}}}`)},
		"openapi/b.json":    {Data: []byte(`{"paths":{"/x":{"get":{}}}}`)},
	})
	require.ErrorContains(t, err, "documented twice")
	_, err = mergeOpenAPI(fstest.MapFS{
		"openapi/base.json": base,
		"openapi/a.json":    {Data: []byte(`{"components":{"schemas":{"Error":{}}}}`)},
	})
	require.ErrorContains(t, err, "defined twice")
}
