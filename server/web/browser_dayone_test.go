package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestBrowserDayOne covers the defects a team met on its first day (issue 30): a message over
// the length limit, the narrow window, the "New messages" line on coming back, going offline,
// and a display title hiding the channel's name. One server, one browser, Ana's page; Ben
// writes through the API.
func TestBrowserDayOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana, ben := e.person(t, "Ana Lima"), e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	e.addMember(t, ws.ID, ben.user.ID)
	general := e.channel(t, ana, ws.ID, "general")
	design := e.channel(t, ana, ws.ID, "design")
	e.api(t, ana, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": "Welcome to Acme"}, nil)
	e.api(t, ana, "PATCH", "/api/me", map[string]string{"handle": "ana"}, nil)

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "general open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	open := func(t *testing.T, name string) {
		t.Helper()
		eval[bool](t, tab, sidebarChannel(name)+`.click() ?? true`)
		waitFor(t, tab, name+" open", fmt.Sprintf(`document.querySelector('.conv-header h1')?.textContent === %q`, name))
	}

	t.Run("NameStaysInSidebar", func(t *testing.T) {
		e.api(t, ana, "PATCH", "/api/channels/"+design.ID, map[string]string{"display_title": "Launch planning"}, nil)
		waitFor(t, tab, "design by its name, the title beside it", sidebarChannel("design")+`?.title === 'Launch planning'`)
		open(t, "design")
		waitFor(t, tab, "the title in the header", `document.querySelector('.conv-header .topic')?.textContent === 'Launch planning'`)
		do(t, tab, "open the settings", mouseClick(`.conv-header button[aria-label="Channel settings"]`))
		waitFor(t, tab, "the display title field named for what it is", `document.querySelector('.panel input[name=display_title]')?.getAttribute('aria-label') === 'Display title'`)
		if n := eval[int](t, tab, `[...document.querySelectorAll('.panel label')].filter(l => l.textContent.startsWith('Topic')).length`); n != 0 {
			t.Fatalf("a field is still labelled Topic")
		}
		do(t, tab, "close the panel", mouseClick(`.panel-head button[aria-label="Close panel"]`))
		open(t, "general")
	})

	t.Run("NewMessagesLineOnReturn", func(t *testing.T) {
		rowOf := func(body string) string {
			return fmt.Sprintf(`[...document.querySelectorAll('.list .row')].find(r => r.querySelector('.body')?.textContent === %q)`, body)
		}
		for round, bodies := range [][]string{{"back 1", "back 2"}, {"again 1"}} {
			open(t, "design")
			for _, body := range bodies {
				e.api(t, ben, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": body}, nil)
			}
			waitFor(t, tab, "general unread", sidebarChannel("general")+`?.classList.contains('unread')`)
			open(t, "general")
			waitFor(t, tab, fmt.Sprintf("the line above %q (visit %d)", bodies[0], round+1), rowOf(bodies[0])+`?.querySelector('.new-line')`)
			if n := eval[int](t, tab, `document.querySelectorAll('.list .new-line').length`); n != 1 {
				t.Fatalf("%d new-message lines, want 1", n)
			}
		}
		// Off screen, the line is announced by a bar that jumps to it.
		open(t, "design")
		for i := range 60 {
			e.post(t, ben, general.ID, fmt.Sprintf("busy %d", i))
		}
		waitFor(t, tab, "60 unread in general", sidebarChannel("general")+`?.querySelector('.count')?.textContent === '60'`)
		open(t, "general")
		waitFor(t, tab, "the line above busy 0", rowOf("busy 0")+`?.querySelector('.new-line')`)
		eval[bool](t, tab, `(l => (l.scrollTop = l.scrollHeight, true))(document.querySelector('.list'))`)
		waitFor(t, tab, "the new-messages bar", `document.querySelector('.new-bar:not([hidden])')?.textContent.startsWith('60 new messages')`)
		do(t, tab, "jump to the line", mouseClick(".new-bar button"))
		waitFor(t, tab, "the line on screen", `(l => l && l.getBoundingClientRect().top >= document.querySelector('.list').getBoundingClientRect().top)(document.querySelector('.list .new-line'))
			&& document.querySelector('.new-bar').hidden`)
	})

	t.Run("LongMessage", func(t *testing.T) {
		box := "form.composer .compose-box"
		setBox := func(js string) {
			eval[bool](t, tab, `(b => (b.focus(), b.value = `+js+`, b.dispatchEvent(new Event('input', { bubbles: true })), true))(document.querySelector('`+box+`'))`)
		}
		// Near the limit, a counter; over it, a warning, and Enter sends nothing.
		setBox(`'x'.repeat(39950)`)
		waitFor(t, tab, "the counter", `document.querySelector('.compose-count:not([hidden])')?.textContent === '50 characters left'`)
		setBox(`'🎉'.repeat(40001)`) // characters, not UTF-16 units
		waitFor(t, tab, "the warning", `document.querySelector('.compose-count.over')?.textContent.startsWith('1 character over the limit')`)
		do(t, tab, "press Enter", mouseClick(box), enter())
		if n := eval[int](t, tab, `document.querySelectorAll('.list .msg.pending').length`); n != 0 {
			t.Fatalf("an over-long message was sent (%d pending rows)", n)
		}
		// "Send as a file" sends the text as an attachment.
		do(t, tab, "send as a file", mouseClick(".compose-count button"))
		waitFor(t, tab, "the text as a file", `[...document.querySelectorAll('.list .msg:not(.pending) a.file')].some(a => a.textContent.startsWith('message.txt') && a.textContent.endsWith('156 KB'))`)
		if got := eval[string](t, tab, `document.querySelector('`+box+`').value`); got != "" {
			t.Fatalf("the composer kept %d characters after sending them as a file", len(got))
		}

		// A message the server refuses can be edited or discarded, stays where it was written
		// (later messages go below it), and survives a reload.
		failed := `[...document.querySelectorAll('.list .msg.failed')]`
		setBox(`'refused\u0000one'`)
		do(t, tab, "send the refused one", enter())
		waitFor(t, tab, "the refusal", failed+`.some(m => m.querySelector('.send-state').textContent.startsWith('Not sent — field body must be valid UTF-8 text without NUL bytes'))`)
		setBox(`'refused\u0000two'`)
		do(t, tab, "send another refused one", enter())
		waitFor(t, tab, "two refused", failed+`.length === 2`)
		if n := eval[int](t, tab, failed+`.filter(m => [...m.querySelectorAll('button')].some(b => b.textContent === 'Retry')).length`); n != 0 {
			t.Fatalf("a refusal that cannot change offers Retry")
		}
		send(t, tab, box, "after the refusals")
		waitFor(t, tab, "the later message sent", hasBody("after the refusals"))
		order := `[...document.querySelectorAll('.list .msg .body')].map(b => b.textContent).slice(-3).join('|')`
		if got := eval[string](t, tab, order); got != "refused\x00one|refused\x00two|after the refusals" {
			t.Fatalf("order at the bottom = %q, want the refused ones above the later message", got)
		}
		do(t, tab, "reload", chromedp.Reload())
		waitFor(t, tab, "the refused ones after the reload", failed+`.length === 2`)
		clickIn := func(label string) {
			waitFor(t, tab, label, fmt.Sprintf(`(b => b && (b.click(), true))([...document.querySelectorAll('.list .msg.failed button')].find(b => b.textContent === %q))`, label))
		}
		clickIn("Discard")
		waitFor(t, tab, "one left", failed+`.length === 1`)
		clickIn("Edit")
		waitFor(t, tab, "its text back in the composer", `document.querySelector('`+box+`').value === 'refused\u0000two' && !document.querySelector('.list .msg.failed')`)
		setBox(`''`)
		do(t, tab, "reload", chromedp.Reload())
		waitFor(t, tab, "the channel again", hasBody("after the refusals"))
		if n := eval[int](t, tab, `document.querySelectorAll('.list .msg.pending').length`); n != 0 {
			t.Fatalf("%d discarded or edited messages came back after a reload", n)
		}
	})

	t.Run("OfflineAndBack", func(t *testing.T) {
		netState := func(offline bool) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
					return err
				}
				if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: offline,
					DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
					return err
				}
				_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
					MatchedNetworkConditions: []*network.Conditions{{Offline: offline, DownloadThroughput: -1, UploadThroughput: -1}}})
				return err
			})
		}
		do(t, tab, "go offline", netState(true))
		waitFor(t, tab, "the offline banner", `document.querySelector('.banner:not([hidden])')?.textContent.startsWith('You are offline')`)
		waitFor(t, tab, "the status dot", `document.querySelector('.me .dot.offline')`)
		send(t, tab, "form.composer .compose-box", "written offline")
		waitFor(t, tab, "waiting for the connection", `[...document.querySelectorAll('.list .msg.pending .send-state')].some(s => s.textContent.startsWith('Waiting for the connection…'))`)
		do(t, tab, "come back", netState(false))
		waitFor(t, tab, "sent by itself", hasBody("written offline")+` && ![...document.querySelectorAll('.list .msg.pending .body')].some(b => b.textContent === 'written offline')`)
		waitFor(t, tab, "the banner gone", `document.querySelector('.banner').hidden && document.querySelector('.me .dot.online')`)
		var out struct{ Messages []struct{ Body string } }
		e.api(t, ben, "GET", "/api/channels/"+general.ID+"/messages?mode=latest&limit=5", nil, &out)
		n := 0
		for _, m := range out.Messages {
			if m.Body == "written offline" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("the server holds %d copies of the offline message, want 1", n)
		}
	})

	t.Run("NarrowWindowDrawer", func(t *testing.T) {
		for _, size := range []struct{ w, h int64 }{{390, 844}, {800, 900}} {
			resize(t, tab, size.w, size.h)
			inView := `(el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.bottom <= innerHeight; })`
			waitFor(t, tab, "the sidebar closed", `document.querySelector('.sidebar').getBoundingClientRect().right <= 0 || getComputedStyle(document.querySelector('.sidebar')).visibility === 'hidden'`)
			if w := eval[int](t, tab, `document.scrollingElement.scrollWidth`); w > int(size.w) {
				t.Fatalf("the page is %d px wide in a %d px window", w, size.w)
			}
			overlap := eval[bool](t, tab, `(() => { const a = document.querySelector('.conv-header h1').getBoundingClientRect();
				return [...document.querySelectorAll('.conv-header button, .conv-header input')].filter(b => b.offsetParent).some(b => {
					const r = b.getBoundingClientRect(); return r.left < a.right && a.left < r.right && r.top < a.bottom && a.top < r.bottom; }); })()`)
			if overlap {
				t.Fatalf("at %d px a header control overlaps the channel name", size.w)
			}
			if size.w == 390 {
				shot(t, tab, "narrow-390")
			}
			do(t, tab, "open the drawer", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
			waitFor(t, tab, "the drawer open", inView+`(document.querySelector('.sidebar')) && `+inView+`(document.querySelector('.sidebar button[aria-label="Sign out"]'))
				&& `+inView+`(document.querySelector('.ws-head button[aria-haspopup]'))`)
			if size.w == 390 {
				shot(t, tab, "drawer-390")
				checkA11y(t, tab, "the drawer at 390 px")
			}
			do(t, tab, "pick design", mouseClick(`.places a.place[title="Launch planning"]`))
			waitFor(t, tab, "design open, the drawer closed", `document.querySelector('.conv-header h1')?.textContent === 'design'
				&& document.querySelector('.sidebar').getBoundingClientRect().right <= 0`)
			do(t, tab, "open the drawer again", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
			waitFor(t, tab, "the drawer open", inView+`(document.querySelector('.sidebar'))`)
			do(t, tab, "close it on the backdrop, beside the drawer", chromedp.MouseClickXY(float64(size.w-30), 400))
			waitFor(t, tab, "closed", `document.querySelector('.sidebar').getBoundingClientRect().right <= 0`)
			open(t, "general")
		}
		do(t, tab, "a desktop window again", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
			return err
		}))
		if eval[bool](t, tab, `!!document.querySelector('.conv-header button[aria-label="Channels and people"]')?.offsetParent`) {
			t.Fatalf("the drawer button shows on a wide window")
		}
	})

	// The day-one features, each at a desktop size and a phone's.
	f := dayOne{e: e, ana: ana, ben: ben, ws: ws.ID, design: design.ID, tab: tab}
	t.Run("Features1280x800", func(t *testing.T) { f.features(t, 1280, 800) })
	t.Run("Features390x844", func(t *testing.T) { f.features(t, 390, 844) })
}
