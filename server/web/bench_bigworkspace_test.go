package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist"
)

// BenchmarkClientBigWorkspace measures the client in a large team's workspace (issue 24 item 6:
// 1,000 channels, 20,000 members, 50 direct conversations) beside a small one (20 channels,
// 100 members) in the same run, the same person in both: the return visit's first paint, the
// sidebar's DOM, and the longest task (and slowest keystroke, from Event Timing) while typing
// in the composer, in the quick switcher, in `@` completion, opening the member directory and
// in its search, and through ten jumps to the next unread channel; then the JS heap. Run it once:
// go test ./server/web -run '^$' -bench ClientBigWorkspace -benchtime 1x
func BenchmarkClientBigWorkspace(b *testing.B) {
	e := newEnv(b)
	ana := e.person(b, "Ana Lima")
	small := e.workspace(b, ana, "Small")
	big := e.workspace(b, ana, "Big")
	seeded := map[string]bigWorkspace{
		"small": seedBigWorkspace(b, e, ana.user, small.ID, 20, 100, "x"),
		"big":   seedBigWorkspace(b, e, ana.user, big.ID, 1000, 20000, ""),
	}
	for _, w := range seeded {
		seedActivity(b, e, ana.user, w)
	}
	br := newBrowser(b, e)
	for b.Loop() {
		for _, size := range []struct {
			name string
			ws   workspaceRef
		}{{"small", small}, {"big", big}} {
			measureWorkspace(b, br, e, ana, size.ws, seeded[size.name], "-"+size.name)
		}
	}
}

// seedActivity gives a seeded workspace what a person opening it meets: 100 messages in
// c-0000, one unread message in every 20th channel, and 50 direct conversations (20 in the
// small one).
func seedActivity(b *testing.B, e *env, owner persist.User, w bigWorkspace) {
	for i := range 100 {
		w.post(b, e, w.people[i%len(w.people)], w.channels[0].ID, fmt.Sprintf("Message %d with a little **markdown** and a link https://example.com/%d", i, i))
	}
	for i := 1; i < len(w.channels); i += 20 {
		w.post(b, e, w.people[i%len(w.people)], w.channels[i].ID, fmt.Sprintf("news in c-%04d", i))
	}
	err := e.store.WithTx(context.Background(), func(tx *persist.Tx) error {
		for i := range min(50, len(w.people)/5) {
			if _, _, err := tx.DMCreate(context.Background(), persist.ActorFor(owner), w.id, []string{w.people[i*5].ID}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed direct conversations: %v", err)
	}
}

// watchTasks starts recording the page's long tasks and slow input events; tasksSince reports
// what was recorded since then as <what>-ms-longest-task, -long-tasks and -ms-slowest-keystroke.
const watchTasks = `(() => {
	window.benchTasks = []; window.benchEvents = [];
	if (!window.benchObserving) {
		window.benchObserving = true;
		new PerformanceObserver(l => benchTasks.push(...l.getEntries().map(e => e.duration))).observe({type: 'longtask'});
		new PerformanceObserver(l => benchEvents.push(...l.getEntries().filter(e => /^key|^input/.test(e.name)).map(e => e.duration)))
			.observe({type: 'event', durationThreshold: 16});
	}
	return true;
})()`

func tasksSince(b *testing.B, tab context.Context, what, suffix string) {
	b.ReportMetric(eval[float64](b, tab, `Math.max(0, ...benchTasks)`), what+"-ms-longest-task"+suffix)
	b.ReportMetric(eval[float64](b, tab, `benchTasks.length`), what+"-long-tasks"+suffix)
	b.ReportMetric(eval[float64](b, tab, `Math.max(0, ...benchEvents)`), what+"-ms-slowest-keystroke"+suffix)
}

func measureWorkspace(b *testing.B, br *browser, e *env, ana person, ws workspaceRef, w bigWorkspace, suffix string) {
	url := e.URL + "/" + ws.RouteID + "/" + w.channels[0].RouteID
	// The return visit: the first load in a fresh context, then a reload (three times, median).
	var returns []float64
	var tab context.Context
	for range 3 {
		tab = br.tab(b, ana)
		do(b, tab, "open c-0000", chromedp.Navigate(url))
		waitFor(b, tab, "painted", `performance.getEntriesByName('natter-channel-painted').length`)
		do(b, tab, "reload", chromedp.Reload())
		waitFor(b, tab, "painted again", `performance.getEntriesByName('natter-channel-painted').length`)
		returns = append(returns, eval[float64](b, tab, `performance.getEntriesByName('natter-channel-painted')[0].startTime`))
	}
	b.ReportMetric(median(returns), "ms-return-visit-painted"+suffix)
	waitFor(b, tab, "live", `document.querySelector('.me .dot.online')`)
	b.ReportMetric(eval[float64](b, tab, `document.querySelector('.sidebar').getElementsByTagName('*').length`), "sidebar-dom-nodes"+suffix)
	b.ReportMetric(eval[float64](b, tab, `document.querySelectorAll('.sidebar .place').length`), "sidebar-rows"+suffix)

	// Typing in the composer.
	eval[bool](b, tab, watchTasks)
	do(b, tab, "type in the composer", chromedp.SendKeys("form.composer .compose-box", "Typing a message of some length, as people do, with a few more words"))
	tasksSince(b, tab, "composer", suffix)
	eval[bool](b, tab, `(b => (b.value = '', true))(document.querySelector('form.composer .compose-box'))`)

	// `@` completion: the directory is asked, the menu offers people.
	eval[bool](b, tab, watchTasks)
	do(b, tab, "type @ada", chromedp.SendKeys("form.composer .compose-box", "hello @ada"+w.tag))
	waitFor(b, tab, "the completion menu", `document.querySelector('.complete-menu .complete-item')`)
	do(b, tab, "type 1", chromedp.SendKeys("form.composer .compose-box", "1"))
	tasksSince(b, tab, "complete", suffix)
	do(b, tab, "Esc", key(kb.Escape))
	eval[bool](b, tab, `(b => (b.value = '', true))(document.querySelector('form.composer .compose-box'))`)

	// The quick switcher.
	eval[bool](b, tab, watchTasks)
	do(b, tab, "Ctrl+K", key("k", chromedp.ModifierCtrl))
	waitFor(b, tab, "the switcher", `document.querySelector('.qs-input')`)
	do(b, tab, "type in the switcher", chromedp.SendKeys(".qs-input", "c-001"))
	waitFor(b, tab, "a match", `document.querySelector('.qs-list .qs-item')`)
	do(b, tab, "type more", chromedp.SendKeys(".qs-input", "5"))
	tasksSince(b, tab, "switcher", suffix)
	do(b, tab, "close the switcher", key(kb.Escape))

	// The unread jump, ten times.
	eval[bool](b, tab, watchTasks)
	for range 10 {
		do(b, tab, "Alt+Shift+↓", key(kb.ArrowDown, chromedp.ModifierAlt, chromedp.ModifierShift))
	}
	tasksSince(b, tab, "unread-jump", suffix)

	// The member directory: opening it (a page of 100 people), then its search.
	eval[bool](b, tab, watchTasks)
	openMenu(b, tab, "Members and moderation")
	waitFor(b, tab, "the directory's rows", `document.querySelectorAll('.mod-list li.mod-member').length >= 2`)
	tasksSince(b, tab, "directory-open", suffix)
	b.ReportMetric(eval[float64](b, tab, `document.querySelector('.panel').getElementsByTagName('*').length`), "directory-dom-nodes"+suffix)
	eval[bool](b, tab, watchTasks)
	do(b, tab, "search the directory", chromedp.SendKeys(".panel input[type=search]", "ben"+w.tag+"1"+kb.Enter))
	waitFor(b, tab, "people found", `(rows => rows.length > 0 && rows.every(li => li.textContent.toLowerCase().includes('@ben')))([...document.querySelectorAll('.mod-list li.mod-member')])`)
	tasksSince(b, tab, "directory", suffix)

	b.ReportMetric(jsHeapMB(b, tab), "MB-js-heap"+suffix)
	b.ReportMetric(eval[float64](b, tab, `document.getElementsByTagName('*').length`), "dom-elements"+suffix)
}
