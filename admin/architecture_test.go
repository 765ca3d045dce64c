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
// sub-packages included, the …test support packages among them; _test.go files left out), the
// other top-level packages it imports.
func TestImportsMatchArchitecture(t *testing.T) {
	t.Parallel()
	documented := documentedImports(t)
	imports := packageImports(t)
	actual := map[string][]string{}
	for dir, deps := range imports {
		from := topLevel(dir)
		if _, ok := actual[from]; !ok {
			actual[from] = nil
		}
		for _, dep := range deps {
			if to := topLevel(dep); to != from && !slices.Contains(actual[from], to) {
				actual[from] = append(actual[from], to)
			}
		}
	}
	for pkg := range actual {
		slices.Sort(actual[pkg])
	}
	require.Equal(t, documented, actual, "docs/architecture.md's package table and the imports disagree")
}

// TestServerIsHTTPOnly: no package under server/ imports NATS or streams; consumers of the
// streams live in realtime, and the harness that starts the whole system is admin/servertest.
func TestServerIsHTTPOnly(t *testing.T) {
	t.Parallel()
	for dir, deps := range packageImports(t) {
		if topLevel(dir) != "server" {
			continue
		}
		for _, dep := range deps {
			require.NotEqual(t, "streams", topLevel(dep), "%s imports %s", dir, dep)
		}
	}
	for dir, ext := range externalImports(t) {
		if topLevel(dir) != "server" {
			continue
		}
		for _, p := range ext {
			require.False(t, strings.HasPrefix(p, "github.com/nats-io/"), "%s imports %s", dir, p)
		}
	}
}

// packageImports maps every package directory of the module (test files left out) to the
// project packages it imports.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	walkImports(t, func(dir, path string) {
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		if rest, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out[dir], rest) {
			out[dir] = append(out[dir], rest)
		}
	})
	return out
}

// externalImports maps every package directory to the imports from outside the project.
func externalImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	walkImports(t, func(dir, path string) {
		if !strings.HasPrefix(path, module) {
			out[dir] = append(out[dir], path)
		}
	})
	return out
}

func walkImports(t *testing.T, fn func(dir, path string)) {
	t.Helper()
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
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			fn(dir, strings.Trim(imp.Path.Value, `"`))
		}
		return nil
	})
	require.NoError(t, err)
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
