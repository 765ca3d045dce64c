package web_test

import (
	"fmt"
	"testing"

	"github.com/natterchat/natter/persist"
)

// BenchmarkClientFirstVisit is the first-paint part of BenchmarkClient alone (general with 100
// messages, five fresh browser contexts, medians), quick enough to compare a change before and
// after on a shared machine: go test ./server/web -run '^$' -bench ClientFirstVisit -benchtime 1x
func BenchmarkClientFirstVisit(b *testing.B) {
	e := newEnv(b)
	ana := e.person(b, "Ana Lima")
	var ws struct{ Workspace persist.Workspace }
	e.api(b, ana, "POST", "/api/workspaces", map[string]string{"name": "Bench"}, &ws)
	var general struct{ Channel persist.Channel }
	e.api(b, ana, "POST", "/api/workspaces/"+ws.Workspace.ID+"/channels", map[string]string{"name": "general"}, &general)
	for i := range 100 {
		e.post(b, ana, general.Channel.ID, fmt.Sprintf("Message %d with a little **markdown** and a link https://example.com/%d", i, i))
	}
	br := newBrowser(b, e)
	for b.Loop() {
		measurePaint(b, br, e, ana, "")
	}
}
