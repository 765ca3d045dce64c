package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// msgSel finds the row of the message whose body is text.
func msgSel(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent === %q)`, text)
}

func editAndDelete(t *testing.T, aTab, bTab context.Context) {
	send(t, aTab, "form.composer .compose-box", "this has a tpyo")
	waitFor(t, bTab, "the message to edit", hasBody("this has a tpyo"))
	// ↑ in the empty composer edits the last own message.
	do(t, aTab, "press up", mouseClick("form.composer .compose-box"), chromedp.KeyEvent(kb.ArrowUp))
	waitFor(t, aTab, "the edit box", `document.querySelector('.list .edit-box')`)
	eval[bool](t, aTab, `(() => { const b = document.querySelector('.list .edit-box'); b.value = 'this had a typo'; b.dispatchEvent(new Event('input')); return true; })()`)
	do(t, aTab, "save", chromedp.Focus(".list .edit-box"), enter())
	waitFor(t, bTab, "the edit on Ben's page", msgSel("this had a typo")+`?.querySelector('.edited')`)
	clickAction(t, aTab, "this had a typo", "Delete")
	waitFor(t, aTab, "the confirmation, pressed", `(b => b && (b.click(), true))(document.querySelector('.list .actions .danger'))`)
	waitFor(t, bTab, "the tombstone on Ben's page", `[...document.querySelectorAll('.list .tombstone')].length === 1`)
	if eval[bool](t, bTab, msgSel("this had a typo")+` !== undefined`) {
		t.Fatal("the deleted body is still shown")
	}
}

func pins(t *testing.T, aTab, bTab context.Context) {
	clickAction(t, aTab, "Great, I will prepare the notes", "Pin or unpin")
	do(t, bTab, "open the pins", mouseClick(`.conv-header button[aria-label="Pinned messages"]`))
	waitFor(t, bTab, "the pinned message", `[...document.querySelectorAll('.panel .card .body')].some(b => b.textContent === 'Great, I will prepare the notes')`)
	shot(t, bTab, "pins")
	do(t, bTab, "close the pins", mouseClick(`.panel-head button[aria-label="Close panel"]`))
}

func unread(t *testing.T, e *env, ana person, wsID string, bTab context.Context) {
	var list struct{ Channels []persist.Channel }
	e.api(t, ana, "GET", "/api/workspaces/"+wsID+"/channels", nil, &list)
	var design string
	for _, c := range list.Channels {
		if c.Name == "design" {
			design = c.ID
		}
	}
	e.api(t, ana, "POST", "/api/channels/"+design+"/messages", map[string]string{"body": "New mockups are up"}, nil)
	e.api(t, ana, "POST", "/api/channels/"+design+"/messages", map[string]string{"body": "@here please review"}, nil)
	link := fmt.Sprintf(`document.querySelector('.place[data-place=%q]')`, design)
	waitFor(t, bTab, "design unread in Ben's sidebar", link+`?.classList.contains('unread')`)
	waitFor(t, bTab, "a mention badge", link+`?.querySelector('.badge')?.textContent === '1'`)
	eval[bool](t, bTab, link+`.click() ?? true`)
	waitFor(t, bTab, "the design channel", hasBody("New mockups are up"))
	waitFor(t, bTab, "the badge cleared", `!`+link+`.classList.contains('unread') && !`+link+`.querySelector('.badge, .count')`)
	// Read state reached the server: a reload shows no unread count.
	waitFor(t, bTab, "the read receipt sent", fmt.Sprintf(`performance.getEntriesByType('resource').some(r => r.name.endsWith('/api/channels/%s/read'))`, design))
	do(t, bTab, "reload", chromedp.Reload())
	waitFor(t, bTab, "the sidebar after reload", link)
	if eval[bool](t, bTab, link+`.classList.contains('unread')`) {
		t.Fatal("design is unread again after a reload")
	}
	eval[bool](t, bTab, `document.querySelector('.place:not([data-place=`+fmt.Sprintf("%q", design)+`])').click() ?? true`)
	waitFor(t, bTab, "general again", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
}

func directMessages(t *testing.T, aTab, bTab context.Context) {
	do(t, aTab, "open the people panel", mouseClick(".conv-header .members-count"))
	waitFor(t, aTab, "the directory", `document.querySelectorAll('.people li.person').length === 2`)
	clickWhen(t, aTab, "Message on Ben's row", `[...document.querySelectorAll('.people li.person')].find(li => li.textContent.includes('Ben Okafor'))?.querySelector('button')`)
	waitFor(t, aTab, "the conversation", `document.querySelector('.conv-header h1')?.textContent === 'Ben Okafor'`)
	send(t, aTab, "form.composer .compose-box", "psst, a private word")
	dm := `[...document.querySelectorAll('.place')].find(a => a.textContent.includes('Ana Lima'))`
	waitFor(t, bTab, "the conversation in Ben's sidebar with a badge", dm+`?.querySelector('.badge')`)
	eval[bool](t, bTab, dm+`.click() ?? true`)
	waitFor(t, bTab, "the private message", hasBody("psst, a private word"))
	shot(t, bTab, "direct-message")
	// Hide, then reopen from the directory: the history is still there.
	eval[bool](t, aTab, `document.querySelector('.place.active .hide-dm').click() ?? true`)
	waitFor(t, aTab, "the conversation hidden", `![...document.querySelectorAll('.place')].some(a => a.textContent.includes('Ben Okafor'))`)
	do(t, aTab, "open the people panel", mouseClick(".conv-header .members-count"))
	waitFor(t, aTab, "the directory", `document.querySelectorAll('.people li.person').length === 2`)
	clickWhen(t, aTab, "Message on Ben's row", `[...document.querySelectorAll('.people li.person')].find(li => li.textContent.includes('Ben Okafor'))?.querySelector('button')`)
	waitFor(t, aTab, "the reopened conversation", hasBody("psst, a private word"))
	waitFor(t, aTab, "it is back in the sidebar", `[...document.querySelectorAll('.place')].some(a => a.textContent.includes('Ben Okafor'))`)
	eval[bool](t, aTab, `[...document.querySelectorAll('.place')].find(a => a.textContent.includes('general')).click() ?? true`)
	do(t, aTab, "close the panel", mouseClick(`.panel-head button[aria-label="Close panel"]`))
}

// resync: while the page is away, the log is pruned past its cursor; the socket closes with
// 4001 and the page rebuilds the view from the message endpoints, without a reload.
func resync(t *testing.T, e *env, ana person, wsID, chID string, bTab context.Context) {
	eval[bool](t, bTab, `[...document.querySelectorAll('.place')].find(a => a.textContent.includes('general')).click() ?? true`)
	waitFor(t, bTab, "general", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	eval[bool](t, bTab, `(window.samePage = true)`)
	e.restart(t, func() {
		waitFor(t, bTab, "the reconnecting banner", `document.querySelector('.banner:not([hidden])')`)
		for i := 1; i <= 3; i++ {
			e.post(t, ana, chID, fmt.Sprintf("after the prune %d", i))
		}
		ctx := context.Background()
		if _, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
			return tx.EventPrune(ctx, wsID, persist.EventPruneParams{KeepLatest: new(int64(1))})
		}); err != nil {
			t.Fatalf("prune: %v", err)
		}
	})
	for i := 1; i <= 3; i++ {
		waitFor(t, bTab, "the messages read again", hasBody(fmt.Sprintf("after the prune %d", i)))
		requireCount(t, bTab, fmt.Sprintf("after the prune %d", i), 1)
	}
	if !eval[bool](t, bTab, `window.samePage === true`) {
		t.Fatal("the page reloaded instead of resyncing")
	}
	waitFor(t, bTab, "live again", `document.querySelector('.me .dot.online')`)
}

func magicLink(t *testing.T, e *env, b *browser, wsID string) {
	email := "cara@example.com"
	cara := persisttest.User(t, e.store, &persisttest.UserOpts{DisplayName: new("Cara Diaz"), Email: &email})
	e.addMember(t, wsID, cara.ID)
	tab := b.tab(t, person{})
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "the sign-in view", `document.querySelector('.signin-card')`)
	do(t, tab, "ask for a link", chromedp.SendKeys(`input[type=email]`, email), chromedp.SendKeys(`input[name=name]`, "Cara"))
	shot(t, tab, "sign-in")
	do(t, tab, "submit", mouseClick(`form.signin-block button[type=submit]`))
	waitFor(t, tab, "the development token", `document.querySelector('.token')?.textContent.startsWith('mgt_')`)
	do(t, tab, "sign in", mouseClick(`.token-box button`))
	waitFor(t, tab, "the workspace", `document.querySelector('.me-name')?.textContent === 'Cara Diaz'`)
	waitFor(t, tab, "the channel", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	// Signing out loads the page again: look only once the new page is there.
	do(t, tab, "sign out", mouseClick(`.me button[aria-label="Sign out"]`))
	waitAcrossLoad(t, tab, "the sign-in view again", `document.querySelector('.signin-card') && !document.querySelector('.shell')`)
	waitFor(t, tab, "the sign-in view again", `document.querySelector('.signin-card')`)
	do(t, tab, "reload", chromedp.Reload())
	waitFor(t, tab, "still signed out", `document.querySelector('.signin-card')`)
}

// waitAcrossLoad is waitFor for a page that is navigating: a poll cut off by the navigation is
// tried again on the new page, within the same 20 seconds.
func waitAcrossLoad(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	for {
		try, stop := context.WithTimeout(deadline, 2*time.Second)
		_, err := chromedp.Run(try, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
		stop()
		if err == nil {
			return
		}
		if deadline.Err() != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// lostAnswer: the server stores a message but its answer never reaches the browser. The client
// sends it again with the same nonce, and the server keeps one copy.
func lostAnswer(t *testing.T, e *env, ana person, chID string, aTab, bTab context.Context) {
	body := "sent once, answered twice"
	paused := chromedp.Events(aTab, fetch.RequestPaused)
	do(t, aTab, "intercept message answers", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*/api/channels/*/messages", RequestStage: fetch.RequestStageResponse}}})
		return err
	}))
	posts := make(chan int, 8)
	go func() {
		n := 0
		for ev, err := range paused {
			if err != nil {
				return
			}
			if ev.Request.Method == "POST" {
				n++
				posts <- n
			}
			if ev.Request.Method == "POST" && n == 1 {
				_, _ = chromedp.Call(aTab, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
				continue
			}
			_, _ = chromedp.Call(aTab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	send(t, aTab, "form.composer .compose-box", body)
	for want := 1; want <= 2; want++ {
		select {
		case n := <-posts:
			if n != want {
				t.Fatalf("post %d, want %d", n, want)
			}
		case <-time.After(waitLimit):
			t.Fatalf("the client sent the message %d times, want a retry", want-1)
		}
	}
	do(t, aTab, "stop intercepting", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, fetch.Disable, cdp.Empty{})
		return err
	}))
	for _, tab := range []context.Context{aTab, bTab} {
		waitFor(t, tab, "the message", hasBody(body))
		requireCount(t, tab, body, 1)
	}
	waitFor(t, aTab, "nothing pending", `!document.querySelector('.list .msg.pending')`)
	var page struct{ Messages []persist.Message }
	e.api(t, ana, "GET", "/api/channels/"+chID+"/messages?mode=latest&limit=20", nil, &page)
	n := 0
	for _, m := range page.Messages {
		if m.Body == body {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the server holds %d copies of the message, want 1", n)
	}
}

// dropAndPaste: an image dropped on the page and another pasted into the composer are each
// uploaded and shown to the other person. The files are drawn on a canvas in the page and handed
// over in a DataTransfer, as the browser does for a real drop or paste.
func dropAndPaste(t *testing.T, aTab, bTab context.Context) {
	file := func(name, colour string) string {
		return fmt.Sprintf(`await new Promise(r => { const c = document.createElement('canvas'); c.width = 120; c.height = 90;
			const g = c.getContext('2d'); g.fillStyle = %q; g.fillRect(0, 0, 120, 90);
			c.toBlob(b => r(new File([b], %q, { type: 'image/png' })), 'image/png'); })`, colour, name)
	}
	eval[bool](t, bTab, `(async () => { const dt = new DataTransfer(); dt.items.add(`+file("dropped.png", "#22a06b")+`);
		document.querySelector('.list').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true })); return true; })()`)
	eval[bool](t, bTab, `(async () => { const dt = new DataTransfer(); dt.items.add(`+file("pasted.png", "#be185d")+`);
		document.querySelector('form.composer .compose-box').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true })); return true; })()`)
	for _, name := range []string{"dropped.png", "pasted.png"} {
		// The body is the file's name, which the row does not repeat as text.
		waitFor(t, aTab, name+" on Ana's page", fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].some(m => !m.querySelector('.body')
			&& [...m.querySelectorAll('img.inline-image')].some(i => i.alt === %q && i.complete && i.naturalWidth === 120))`, name))
	}
}

// markdownCases are the renderer's contract, input → the HTML it builds (serialised only to
// compare): markup stays text, only http(s) and mailto links become anchors, and every anchor
// opens in a new tab with rel=noopener.
var markdownCases = []struct{ name, in, want string }{
	{"Text", "plain", `<p>plain</p>`},
	{"MarkupIsText", `<img src=x onerror=alert(1)>`, `<p>&lt;img src=x onerror=alert(1)&gt;</p>`},
	{"Bold", "a **b** c", `<p>a <strong>b</strong> c</p>`},
	{"ItalicAndStrike", "_i_ ~~s~~", `<p><em>i</em> <s>s</s></p>`},
	{"CodeKeepsMarkup", "`<b>**x**</b>`", `<p><code>&lt;b&gt;**x**&lt;/b&gt;</code></p>`},
	{"Link", "[site](https://example.com/a)", `<p><a href="https://example.com/a" target="_blank" rel="noopener noreferrer">site</a></p>`},
	// The link ends at the first ")", so the last one stays outside: the same text either way.
	{"JavascriptLinkRefused", "[x](javascript:alert(1))", `<p><span>[x](javascript:alert(1)</span>)</p>`},
	{"DataLinkRefused", "[x](data:text/html,hi)", `<p><span>[x](data:text/html,hi)</span></p>`},
	{"BareURL", "see https://example.com/x.", `<p>see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.</p>`},
	{"Mention", "hi @ana_l", `<p>hi <span class="mention">@ana_l</span></p>`},
	{"Lines", "a\nb", `<p>a<br>b</p>`},
	{"CodeBlock", "```\n<script>x</script>\n```", `<pre><code>&lt;script&gt;x&lt;/script&gt;</code></pre>`},
	{"Quote", "> **q**", `<blockquote><p><strong>q</strong></p></blockquote>`},
	{"List", "- one\n- two", `<ul><li>one</li><li>two</li></ul>`},
}

func markdownIsSafe(t *testing.T, tab context.Context) {
	for _, tc := range markdownCases {
		got := eval[string](t, tab, fmt.Sprintf(`import('/assets/js/markdown.js').then(m => { const d = document.createElement('div'); d.append(m.render(%q)); return d.innerHTML; })`, tc.in))
		if got != tc.want {
			t.Errorf("%s: render(%q) = %s, want %s", tc.name, tc.in, got, tc.want)
		}
	}
}
