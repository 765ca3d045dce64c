package web_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// BenchmarkClient measures the client's budgets in headless Chromium against a real server on
// loopback (docs/performance.md): JS and CSS transferred, the first paint of a channel, the
// longest task while a 1,000-message burst from bots arrives, and the JS heap after scrolling
// back through 100,000 messages. Run it once: go test ./server/web -run '^$' -bench Client -benchtime 1x
func BenchmarkClient(b *testing.B) {
	c := newClientBench(b)
	e, ana, br := c.e, c.ana, c.br

	for b.Loop() {
		// Transfer and first paint: a fresh browser context each time, so nothing is cached.
		measurePaint(b, br, e, ana, "")
		// The same with a channel of 100,000 messages this person has never read beside it: the
		// channel listing counts unread messages, and that count is not capped.
		seedHistory(b, e, c.workspace, c.long, ana.user.ID, 100_000)
		measurePaint(b, br, e, ana, "-beside-100k-unread")

		// A burst of 1,000 messages from a bot, posted by 4 connections at once.
		tab := measureBurst(b, br, e, ana, c.botToken, c.general)

		// Scroll back through 100,000 messages, then weigh the heap.
		do(b, tab, "open the long channel", chromedp.Navigate(e.URL+"/"))
		waitFor(b, tab, "the sidebar", `document.querySelector('.place')`)
		eval[bool](b, tab, `[...document.querySelectorAll('.place')].find(a => a.textContent.includes('long')).click() ?? true`)
		waitFor(b, tab, "the long channel", `document.querySelector('.list .msg[data-seq="100000"]')`)
		scrollStart := time.Now()
		sctx, cancel := context.WithTimeout(tab, 5*time.Minute)
		pages, err := chromedp.Run(sctx, chromedp.Evaluate[float64](`(async () => {
			const list = document.querySelector('.list');
			let n = 0;
			while (!document.querySelector('.list .msg[data-seq="1"]') && n < 100000) {
				list.scrollTop = 0;
				await new Promise(r => setTimeout(r, 10));
				n++;
			}
			return n;
		})()`, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			b.Fatalf("scroll back: %v", err)
		}
		b.ReportMetric(time.Since(scrollStart).Seconds(), "s-to-scroll-100k")
		b.ReportMetric(pages, "scroll-steps")
		b.ReportMetric(jsHeapMB(b, tab), "MB-js-heap-after-100k")
		b.ReportMetric(eval[float64](b, tab, `document.getElementsByTagName('*').length`), "dom-elements-after-100k")
	}
}

// clientBench is the client benchmarks' workspace: Ana's, with #general holding 100 messages,
// an empty #long, a bot of hers, and a browser.
type clientBench struct {
	e                        *env
	ana                      person
	workspace, general, long string
	botToken                 string
	br                       *browser
}

func newClientBench(b *testing.B) clientBench {
	e := newEnv(b)
	ana := e.person(b, "Ana Lima")
	var ws struct{ Workspace persist.Workspace }
	e.api(b, ana, "POST", "/api/workspaces", map[string]string{"name": "Bench"}, &ws)
	var general, long struct{ Channel persist.Channel }
	e.api(b, ana, "POST", "/api/workspaces/"+ws.Workspace.ID+"/channels", map[string]string{"name": "general"}, &general)
	e.api(b, ana, "POST", "/api/workspaces/"+ws.Workspace.ID+"/channels", map[string]string{"name": "long"}, &long)
	for i := range 100 {
		e.post(b, ana, general.Channel.ID, fmt.Sprintf("Message %d with a little **markdown** and a link https://example.com/%d", i, i))
	}
	_, bot := persisttest.Bot(b, e.store, ana.user, ws.Workspace.ID, nil)
	br := newBrowser(b, e)
	return clientBench{e: e, ana: ana, workspace: ws.Workspace.ID, general: general.Channel.ID, long: long.Channel.ID,
		botToken: bot.Token, br: br}
}

// measureBurst opens the channel, has a bot post 1,000 messages into it over 4 connections at
// once, and reports the long tasks while they arrive (PerformanceObserver 'longtask') and the
// store's flushes; it returns the tab, the channel open.
func measureBurst(b *testing.B, br *browser, e *env, ana person, botToken, channelID string) context.Context {
	tab := br.tab(b, ana)
	do(b, tab, "open general", chromedp.Navigate(e.URL+"/"))
	waitFor(b, tab, "live", `document.querySelector('.me .dot.online')`)
	eval[bool](b, tab, `(window.longTasks = [], new PerformanceObserver(l => window.longTasks.push(...l.getEntries().map(e => e.duration))).observe({type: 'longtask'}), true)`)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < 1000; i += 4 {
				e.api(b, person{token: botToken}, "POST", "/api/channels/"+channelID+"/messages",
					map[string]string{"body": fmt.Sprintf("burst %d: build finished, all checks green", i)}, nil)
			}
		})
	}
	wg.Wait()
	posted := time.Since(start)
	var latest struct{ Messages []persist.Message }
	e.api(b, ana, "GET", "/api/channels/"+channelID+"/messages?mode=latest&limit=1", nil, &latest)
	waitFor(b, tab, "the burst rendered", hasBody(latest.Messages[0].Body))
	b.ReportMetric(eval[float64](b, tab, `Math.max(0, ...window.longTasks)`), "ms-longest-task-in-burst")
	b.ReportMetric(eval[float64](b, tab, `natterStats.slowestFlush`), "ms-slowest-render-flush")
	b.ReportMetric(eval[float64](b, tab, `natterStats.flushes`), "render-flushes")
	b.ReportMetric(eval[float64](b, tab, `window.longTasks.length`), "long-tasks-in-burst")
	b.ReportMetric(posted.Seconds(), "s-to-post-burst")
	b.Logf("long tasks in the burst (ms): %s", eval[string](b, tab, `JSON.stringify(window.longTasks.map(Math.round))`))
	return tab
}

// BenchmarkClientBurst is the burst part of BenchmarkClient alone (the same workspace, without
// the 100,000-message channel), quick enough to compare a change before and after:
// go test ./server/web -run '^$' -bench ClientBurst -benchtime 1x
func BenchmarkClientBurst(b *testing.B) {
	c := newClientBench(b)
	for b.Loop() {
		measureBurst(b, c.br, c.e, c.ana, c.botToken, c.general)
	}
}

// jsHeapMB is the page's JS heap in MB after a garbage collection.
func jsHeapMB(b *testing.B, tab context.Context) float64 {
	do(b, tab, "collect garbage", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{})
		return err
	}))
	var used float64
	do(b, tab, "heap usage", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := chromedp.Call(ctx, runtime.GetHeapUsage, cdp.Empty{})
		used = res.UsedSize
		return err
	}))
	return used / (1 << 20)
}

// measurePaint opens general five times in fresh browser contexts and reports the median
// paint, and what the first load transferred.
func measurePaint(b *testing.B, br *browser, e *env, ana person, suffix string) {
	var paints, fcps, reloads []float64
	var transferred, encoded float64
	for range 5 {
		tab := br.tab(b, ana)
		do(b, tab, "open general", chromedp.Navigate(e.URL+"/"))
		waitFor(b, tab, "the channel painted", `performance.getEntriesByName('natter-channel-painted').length`)
		paints = append(paints, eval[float64](b, tab, `performance.getEntriesByName('natter-channel-painted')[0].startTime`))
		fcps = append(fcps, eval[float64](b, tab, `performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? 0`))
		transferred = eval[float64](b, tab, `performance.getEntriesByType('resource').filter(r => /\.(js|css)$/.test(r.name)).reduce((s, r) => s + r.transferSize, 0)`)
		encoded = eval[float64](b, tab, `performance.getEntriesByType('resource').filter(r => /\.(js|css)$/.test(r.name)).reduce((s, r) => s + r.encodedBodySize, 0)`)
		// A return visit: the browser revalidates the files and the client knows the workspace.
		do(b, tab, "reload", chromedp.Reload())
		waitFor(b, tab, "the channel painted again", `performance.getEntriesByName('natter-channel-painted').length`)
		reloads = append(reloads, eval[float64](b, tab, `performance.getEntriesByName('natter-channel-painted')[0].startTime`))
		if len(paints) == 5 {
			b.Logf("API calls of the last load%s (name, start ms, end ms): %s", suffix, eval[string](b, tab,
				`JSON.stringify(performance.getEntriesByType('resource').filter(r => r.name.includes('/api/')).map(r => [r.name.replace(location.origin, '').split('?')[0], Math.round(r.startTime), Math.round(r.responseEnd)]))`))
		}
		chromedp.Cancel(tab)
	}
	if suffix == "" {
		b.ReportMetric(transferred/1024, "KB-js+css-transferred")
		b.ReportMetric(encoded/1024, "KB-js+css-gzip-bodies")
	}
	b.ReportMetric(median(paints), "ms-channel-painted"+suffix)
	b.ReportMetric(median(reloads), "ms-channel-painted-return-visit"+suffix)
	b.ReportMetric(median(fcps), "ms-first-contentful-paint"+suffix)
}

// seedHistory writes n root messages into a channel in one statement, as an import would; the
// client reads them through the ordinary message endpoints.
func seedHistory(b *testing.B, e *env, wsID, channelID, authorID string, n int) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `WITH c AS (UPDATE channels SET last_seq = last_seq + $4 WHERE id = $1 RETURNING last_seq - $4 AS base)
		INSERT INTO messages (id, route_id, workspace_id, channel_id, author_id, thread_root_id, channel_seq, kind, body, created_at)
		SELECT 'msg_seed' || g, 'Mseed' || g, $2, $1, $3, 'msg_seed' || g, c.base + g, 'message',
			'Seeded message ' || g || ' of a long channel, with enough words to wrap on a narrow window now and then',
			now() - make_interval(secs => $4 - g)
		FROM c, generate_series(1, $4::int) g`, channelID, wsID, authorID, n)
	if err != nil {
		b.Fatalf("seed %d messages: %v", n, err)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
