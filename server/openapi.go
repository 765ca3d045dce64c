package server

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
)

// The OpenAPI document is kept as one fragment per area (openapi/<area>.json, each with "paths"
// and optional "components") on top of openapi/base.json, so areas evolve without touching each
// other. TestRouteTable keeps it complete: every routed method and path is documented, and
// nothing else is.
//
//go:embed openapi/*.json
var openAPIFiles embed.FS

// openAPIDocument is the merged document, built once at start-up.
var openAPIDocument = mustMergeOpenAPI()

func mustMergeOpenAPI() []byte {
	doc, err := mergeOpenAPI(openAPIFiles)
	if err != nil {
		panic(err) // the fragments are embedded: a bad one is a build defect, caught by tests
	}
	return doc
}

type openAPIFragment struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

// mergeOpenAPI joins base.json and every fragment; a path method or component defined twice is
// an error.
func mergeOpenAPI(fsys fs.FS) ([]byte, error) {
	raw, err := fs.ReadFile(fsys, "openapi/base.json")
	if err != nil {
		return nil, err
	}
	var base map[string]json.RawMessage
	if err := json.Unmarshal(raw, &base); err != nil {
		return nil, fmt.Errorf("openapi/base.json: %w", err)
	}
	var merged openAPIFragment
	if err := json.Unmarshal(raw, &merged); err != nil {
		return nil, fmt.Errorf("openapi/base.json: %w", err)
	}
	if merged.Paths == nil {
		merged.Paths = map[string]map[string]json.RawMessage{}
	}
	names, err := fs.Glob(fsys, "openapi/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "openapi/base.json" {
			continue
		}
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var f openAPIFragment
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for path, ops := range f.Paths {
			if merged.Paths[path] == nil {
				merged.Paths[path] = map[string]json.RawMessage{}
			}
			for method, op := range ops {
				if _, dup := merged.Paths[path][method]; dup {
					return nil, fmt.Errorf("%s: %s %s is documented twice", name, method, path)
				}
				merged.Paths[path][method] = op
			}
		}
		for kind, items := range f.Components {
			if merged.Components[kind] == nil {
				merged.Components[kind] = map[string]json.RawMessage{}
			}
			for key, v := range items {
				if _, dup := merged.Components[kind][key]; dup {
					return nil, fmt.Errorf("%s: components.%s.%s is defined twice", name, kind, key)
				}
				merged.Components[kind][key] = v
			}
		}
	}
	paths, err := json.Marshal(merged.Paths)
	if err != nil {
		return nil, err
	}
	components, err := json.Marshal(merged.Components)
	if err != nil {
		return nil, err
	}
	base["paths"], base["components"] = paths, components
	return json.MarshalIndent(base, "", "  ")
}

// handleOpenAPI serves GET /api/openapi.json.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
}
