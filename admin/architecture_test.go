package admin

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/natterchat/natter/"

// TestImportsMatchArchitecture reads the package table of docs/architecture.md and checks that
// its imports column is exactly what the code imports: for every top-level package (its
// sub-packages included, test files left out), the other top-level packages it imports.
func TestImportsMatchArchitecture(t *testing.T) {
	t.Parallel()
	documented := documentedImports(t)
	actual := map[string][]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel("..", path)
		if err != nil {
			return err
		}
		from := topLevel(filepath.ToSlash(filepath.Dir(rel)))
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := actual[from]; !ok {
			actual[from] = nil
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(p, module); ok {
				if to := topLevel(rest); to != from && !slices.Contains(actual[from], to) {
					actual[from] = append(actual[from], to)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	for pkg := range actual {
		slices.Sort(actual[pkg])
	}
	require.Equal(t, documented, actual, "docs/architecture.md's package table and the imports disagree")
}

// topLevel names the top-level package a directory belongs to; cmd/natter is one.
func topLevel(dir string) string {
	if dir == "cmd/natter" || strings.HasPrefix(dir, "cmd/natter/") {
		return "cmd/natter"
	}
	top, _, _ := strings.Cut(dir, "/")
	return top
}

// documentedImports parses the rows "| `pkg` | … | a, b |" of the package table.
func documentedImports(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/architecture.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z/]+)` \\|.*\\| ([a-z/, —]+) \\|$")
	out := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		var imports []string
		if m[2] != "—" {
			for _, p := range strings.Split(m[2], ",") {
				imports = append(imports, strings.TrimSpace(p))
			}
		}
		slices.Sort(imports)
		out[m[1]] = imports
	}
	require.NotEmpty(t, out, "the package table was not found")
	return out
}
