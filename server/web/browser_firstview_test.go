package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserFirstViewReads: the page's inline script (early.js) runs under the page's
// Content-Security-Policy (allowed by its hash; were it refused, boot.js would fetch it as a
// file) and starts the first view's reads, the place's messages included; the modules take its
// answers, so each read goes out once. A first visit opens #general; an address naming another
// channel opens that one, and only its messages are read. At 1280×800 and at 390×844.
func TestBrowserFirstViewReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	// With a time zone known the page sends none (a PATCH of /api/me the count below would see).
	e.api(t, ana, "PATCH", "/api/me", map[string]string{"time_zone": "Europe/Lisbon"}, nil)
	ws := e.workspace(t, ana, "Acme")
	general := e.channel(t, ana, ws.ID, "general")
	design := e.channel(t, ana, ws.ID, "design")
	e.post(t, ana, general.ID, "Hello from general")
	e.post(t, ana, design.ID, "Hello from design")
	b := newBrowser(t, e)
	reads := func(placeID string) string {
		return fmt.Sprintf(`(() => {
			const paths = performance.getEntriesByType('resource').map((r) => { const u = new URL(r.name); return u.pathname + u.search; });
			const n = (p) => paths.filter((x) => x === p).length;
			return JSON.stringify([paths.filter((p) => p.endsWith('/early.js')).length, n('/api/me'), n('/api/workspaces'),
				n('/api/realtime/events?workspace_id=%[1]s&include_tail=true&limit=1'), n('/api/workspaces/%[1]s/channels'),
				n('/api/dms?workspace_id=%[1]s'), n('/api/channels/%[2]s/messages?limit=100&mode=latest'),
				paths.filter((p) => p.includes('/messages')).length]);
		})()`, ws.ID, placeID)
	}
	const once = "[0,1,1,1,1,1,1,1]" // early.js never fetched as a file; each read once; no other page of messages
	for _, size := range []struct{ w, h int64 }{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			tab := b.tab(t, ana)
			resize(t, tab, size.w, size.h)
			do(t, tab, "a first visit", chromedp.Navigate(e.URL+"/"))
			waitFor(t, tab, "general's message", hasBody("Hello from general"))
			// A read shows among the resources once answered: all of them, then each once.
			waitFor(t, tab, "the first view's reads answered", `JSON.parse(`+reads(general.ID)+`).slice(1).every((n) => n > 0)`)
			if got := eval[string](t, tab, reads(general.ID)); got != once {
				t.Errorf("a first visit's reads (early.js fetched, me, workspaces, tail, channels, dms, general's messages, all messages) = %s, want %s", got, once)
			}

			deep := b.tab(t, ana)
			resize(t, deep, size.w, size.h)
			do(t, deep, "open design by its address", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+design.RouteID))
			waitFor(t, deep, "design's message", hasBody("Hello from design"))
			waitFor(t, deep, "the first view's reads answered", `JSON.parse(`+reads(design.ID)+`).slice(1).every((n) => n > 0)`)
			if got := eval[string](t, deep, reads(design.ID)); got != once {
				t.Errorf("design's address: reads = %s, want %s", got, once)
			}
		})
	}
}
