package web_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestBrowserBurstInOrder: while a bot posts 160 messages over four connections, the list (at
// 1280×800 and at 390×844, both pages watching the same burst) draws its rows over several
// frames when many arrive at once; at every frame the rows in the page are consecutive messages
// in order, none twice, and at the end the newest is on screen and scrolling back to the first
// keeps them so.
func TestBrowserBurstInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Acme")
	general := e.channel(t, ana, ws.ID, "general")
	_, bot := persisttest.Bot(t, e.store, ana.user, ws.ID, nil)
	b := newBrowser(t, e)
	// Each animation frame checks the rows in the page: seqs consecutive and ascending.
	const watch = `(window.broken = [], window.frames = 0, (function check() {
		const seqs = [...document.querySelectorAll('.list .msg')].map((m) => Number(m.dataset.seq));
		for (let i = 1; i < seqs.length; i++) if (seqs[i] !== seqs[i - 1] + 1) window.broken.push(seqs.slice(Math.max(0, i - 2), i + 2).join(','));
		window.frames++;
		requestAnimationFrame(check);
	})(), true)`
	var tabs []context.Context
	for _, size := range []struct{ w, h int64 }{{1280, 800}, {390, 844}} {
		tab := b.tab(t, ana)
		resize(t, tab, size.w, size.h)
		do(t, tab, "open general", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+general.RouteID))
		waitFor(t, tab, "live", `document.querySelector('.me .dot.online')`)
		eval[bool](t, tab, watch)
		tabs = append(tabs, tab)
	}
	const n = 160
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				e.api(t, person{token: bot.Token}, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": fmt.Sprintf("burst %d", i)}, nil)
			}
		})
	}
	wg.Wait()
	for i, tab := range tabs {
		waitFor(t, tab, "the newest message", fmt.Sprintf(`document.querySelector('.list .msg[data-seq="%d"]')`, n))
		if got := eval[string](t, tab, `window.broken.slice(0, 5).join(' | ')`); got != "" {
			t.Errorf("page %d: rows out of order or missing during the burst (seqs around): %s", i, got)
		}
		if eval[float64](t, tab, `window.frames`) < 2 {
			t.Errorf("page %d: the check never ran", i)
		}
		// The newest message on screen, then back to the first, the rows consecutive all along.
		waitFor(t, tab, "the newest on screen", fmt.Sprintf(`(l => { const r = l.querySelector('.msg[data-seq="%d"]').getBoundingClientRect(), v = l.getBoundingClientRect();
			return r.bottom <= v.bottom + 1 && r.top >= v.top - 1; })(document.querySelector('.list'))`, n))
		sctx, cancel := context.WithTimeout(tab, waitLimit)
		_, err := chromedp.Run(sctx, chromedp.Evaluate[bool](`(async () => {
			const list = document.querySelector('.list');
			while (!list.querySelector('.msg[data-seq="1"]')) { list.scrollTop = 0; await new Promise((r) => setTimeout(r, 20)); }
			return true;
		})()`, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			t.Fatalf("page %d: scroll back to the first message: %v", i, err)
		}
		if got := eval[string](t, tab, `window.broken.slice(0, 5).join(' | ')`); got != "" {
			t.Errorf("page %d: rows out of order or missing while scrolling back: %s", i, got)
		}
	}
}
