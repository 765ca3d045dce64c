package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

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
	// What a first visit waits for, in order: each request's start and end (ms from navigation).
	tab := br.tab(b, ana)
	do(b, tab, "open general", chromedp.Navigate(e.URL+"/"))
	waitFor(b, tab, "the channel painted", `performance.getEntriesByName('natter-channel-painted').length`)
	b.Logf("a first visit (name, start ms, end ms): %s", eval[string](b, tab, `JSON.stringify([
		...performance.getEntriesByType('navigation').map(r => ['page', 0, Math.round(r.responseEnd), 'dom interactive', Math.round(r.domInteractive),
			'DOMContentLoaded', Math.round(r.domContentLoadedEventStart), Math.round(r.domContentLoadedEventEnd)]),
		...performance.getEntriesByType('resource').map(r => [r.name.replace(location.origin, '').split('?')[0], Math.round(r.startTime), Math.round(r.responseEnd)]),
		...performance.getEntriesByType('paint').map(p => [p.name, Math.round(p.startTime)]),
		...performance.getEntriesByType('mark').map(p => [p.name, Math.round(p.startTime)]),
		['slowest flush', Math.round(natterStats.slowestFlush), 'flushes', natterStats.flushes]])`))
}
