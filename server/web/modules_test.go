package web

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientGraph is every embedded module and what it imports statically, read as New reads the
// preload list (importsOf), lazy modules included.
func clientGraph(t *testing.T) (map[string][]string, *Handler) {
	t.Helper()
	h, err := New(Config{})
	require.NoError(t, err)
	graph := map[string][]string{}
	for p, a := range h.assets {
		if strings.HasSuffix(p, ".js") {
			graph[p] = importsOf(p, a.body)
		}
	}
	require.Greater(t, len(graph), 40, "the client's modules were found")
	return graph, h
}

// importCycles returns each cycle of graph once it is reached, as the modules along it with the
// first repeated at the end; none for an acyclic graph. Modules are visited in name order, so
// the answer is stable.
func importCycles(graph map[string][]string) [][]string {
	const (
		unseen = iota
		open
		done
	)
	mark := map[string]int{}
	var stack []string
	var cycles [][]string
	var visit func(string)
	visit = func(m string) {
		mark[m] = open
		stack = append(stack, m)
		for _, dep := range graph[m] {
			switch mark[dep] {
			case open:
				i := len(stack) - 1
				for stack[i] != dep {
					i--
				}
				cycles = append(cycles, append(append([]string{}, stack[i:]...), dep))
			case unseen:
				visit(dep)
			}
		}
		stack = stack[:len(stack)-1]
		mark[m] = done
	}
	names := make([]string, 0, len(graph))
	for m := range graph {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		if mark[m] == unseen {
			visit(m)
		}
	}
	return cycles
}

// TestClientImportsHaveNoCycle: no module of the client imports itself through others. A cycle
// makes the evaluation order depend on which module is reached first (a binding read before its
// module ran throws), and it hides which of the two is the lower layer.
func TestClientImportsHaveNoCycle(t *testing.T) {
	t.Parallel()
	graph, _ := clientGraph(t)
	require.Empty(t, importCycles(graph), "import cycles among the client's modules")

	// The check itself finds a cycle, a long one and a self-import, and passes a diamond.
	require.Equal(t, [][]string{{"/a.js", "/b.js", "/a.js"}},
		importCycles(map[string][]string{"/a.js": {"/b.js"}, "/b.js": {"/a.js"}}))
	require.Equal(t, [][]string{{"/b.js", "/c.js", "/d.js", "/b.js"}, {"/e.js", "/e.js"}},
		importCycles(map[string][]string{"/a.js": {"/b.js"}, "/b.js": {"/c.js"}, "/c.js": {"/d.js"}, "/d.js": {"/b.js"}, "/e.js": {"/e.js"}}))
	require.Empty(t, importCycles(map[string][]string{"/a.js": {"/b.js", "/c.js"}, "/b.js": {"/d.js"}, "/c.js": {"/d.js"}}))
	// And it reads imports as the preload list does: static imports and re-exports, not import().
	require.Equal(t, []string{"/assets/js/store.js", "/assets/js/views/registry.js", "/assets/js/live.js"},
		importsOf("/assets/js/views/x.js", []byte("import { a } from '../store.js';\nexport * from './registry.js';\n"+
			"import '../live.js';\nconst m = import('../lazy/y.js');\n")))
}

// viewWrite matches a view assigning to the store's state or changing one of its maps in place;
// views change state through the functions store.js and the action modules export.
var viewWrite = regexp.MustCompile(`\bstate\.[\w.]+\s*(?:[-+*/|&]?=[^=]|\+\+|--)|\bstate\.\w+\.(?:set|delete|clear)\(|\b(?:conv|thread)\([^)]*\)\.\w+\s*=[^=]`)

// stateAlias matches a name bound to a part of the state (const c = conv(id), const ch =
// state.channels.get(id)); aliasWrite(name) matches a write through it.
var stateAlias = regexp.MustCompile(`(?:const|let)\s+(\w+)\s*=\s*(?:conv\(|thread\(|state\.)`)

func aliasWrite(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^.\w$])` + name + `(?:\.\w+)*(?:\.\w+\s*(?:[-+*/|&]?=[^=>]|\+\+|--)|\.(?:set|delete|clear|push|pop|shift|unshift|splice|sort|reverse)\()`)
}

// viewWrites lists the lines of a module that write the store's state, directly or through a
// name bound to a part of it.
func viewWrites(src string) []string {
	var writes []string
	var aliases []*regexp.Regexp
	for _, m := range stateAlias.FindAllStringSubmatch(src, -1) {
		aliases = append(aliases, aliasWrite(m[1]))
	}
	for i, line := range strings.Split(src, "\n") {
		bad := viewWrite.MatchString(line)
		for _, a := range aliases {
			bad = bad || a.MatchString(line)
		}
		if bad {
			writes = append(writes, fmt.Sprintf("%d: %s", i+1, strings.TrimSpace(line)))
		}
	}
	return writes
}

// TestClientViewsChangeStateThroughFunctions: no module under views/ or lazy/ writes the state
// itself, so every change to it is made by a function that says which topics it changes.
func TestClientViewsChangeStateThroughFunctions(t *testing.T) {
	t.Parallel()
	_, h := clientGraph(t)
	views := 0
	for p, a := range h.assets {
		if !strings.HasSuffix(p, ".js") || !(strings.HasPrefix(p, "/assets/js/views/") || strings.HasPrefix(p, "/assets/js/lazy/")) {
			continue
		}
		views++
		require.Empty(t, viewWrites(string(a.body)), "%s writes the store's state", p)
	}
	require.Greater(t, views, 30)
	for _, bad := range []string{"state.quote = m;", "state.me = null", "state.mentions.delete(id);", "conv(id).focus = null;", "state.memberCount += 1;",
		"const c = conv(id);\nc.focus = null;", "const ch = state.channels.get(id);\nif (ch) ch.unread_count = 0;",
		"let t = thread(id);\nt.ids.push(m.id);", "const me = state.me;\nme.name = 'x';"} {
		require.NotEmpty(t, viewWrites(bad), bad)
	}
	for _, fine := range []string{"if (state.me === null) x = 1;", "const c = state.channels.get(id);\nconst n = c.unread_count;",
		"state.view && state.view.id !== id", "const c = conv(id);\nif (c.focus == null) draw(c.ids.map((id) => id));", "const wsId = state.wsId;\nwsId.length;", "const quote = state.quote;\nthis.quote.hidden = true;"} {
		require.Empty(t, viewWrites(fine), fine)
	}
}

// TestClientModulesAreChecked: every module opens with "// @ts-check", so the checker in .ci/run
// (tsc over server/web/static) reads it whatever its configuration; the line is not served.
func TestClientModulesAreChecked(t *testing.T) {
	t.Parallel()
	_, h := clientGraph(t)
	for p, a := range h.assets {
		if !strings.HasSuffix(p, ".js") {
			continue
		}
		src, err := static.ReadFile("static" + p)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(src), "// @ts-check\n"), "%s does not open with // @ts-check", p)
		require.Equal(t, string(src[len("// @ts-check\n"):]), string(a.body), "%s is served as written, less its first line", p)
	}
}
