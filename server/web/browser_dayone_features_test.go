package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// dayOne is what TestBrowserDayOne's feature runs share: the server, Ana's page, Ben.
type dayOne struct {
	e        *env
	ana, ben person
	ws       string
	design   string
	tab      context.Context
}

// features checks issue 30's day-one features at one window size, in a channel of its own:
// the empty channel's intro with "Invite people", a message to Ana and an @here highlighted and found in the Mentions panel, a long message behind "Show
// more", an image in an overlay, an upload without its file name as text, "(edited)" on the
// last line, the pinned mark, and "Mark all read".
func (d dayOne) features(t *testing.T, w, h int64) {
	e, tab := d.e, d.tab
	resize(t, tab, w, h)
	eval[bool](t, tab, `(b => (document.querySelector('.panel').hidden || b.click(), true))(document.querySelector('.panel-head button[aria-label="Close panel"]'))`)
	narrow := w <= 800
	// drawer opens the sidebar where it is a drawer.
	drawer := func() {
		if narrow {
			do(t, tab, "open the drawer", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
			// Pressed once it has slid in: a press during the slide lands beside what it aimed at.
			waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
		}
	}
	name := fmt.Sprintf("day-one-%d", w)
	ch := e.channel(t, d.ana, d.ws, name)
	waitFor(t, tab, name+" in the sidebar", sidebarChannel(name))
	eval[bool](t, tab, sidebarChannel(name)+`.click() ?? true`)
	waitFor(t, tab, name+" open", fmt.Sprintf(`document.querySelector('.conv-header h1')?.textContent === %q`, name))

	// An empty channel says so, and leads to adding people to it, and (Ana owns the workspace) to
	// inviting new ones.
	waitFor(t, tab, "the intro", fmt.Sprintf(`document.querySelector('.list .intro:not([hidden]) h2')?.textContent === 'This is the start of #%s'`, name))
	waitFor(t, tab, "Invite people pressed", `(b => b && (b.click(), true))([...document.querySelectorAll('.list .intro button')].find(b => b.textContent === 'Invite people'))`)
	waitFor(t, tab, "the add-people dialog", `!document.querySelector('.panel').hidden && document.querySelector('#panel-title').textContent === 'Add people'`)
	waitFor(t, tab, "Invite people to the workspace pressed", `(b => b && (b.click(), true))([...document.querySelectorAll('.panel button')].find(b => b.textContent === 'Invite people to the workspace'))`)
	waitFor(t, tab, "the invites panel", `!document.querySelector('.panel').hidden && document.querySelector('#panel-title').textContent === 'Invites'`)
	do(t, tab, "close the panel", mouseClick(`.panel-head button[aria-label="Close panel"]`))

	post := func(body string) string {
		var out struct{ Message struct{ ID string } }
		e.api(t, d.ben, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": body}, &out)
		return out.Message.ID
	}
	row := func(body string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent.startsWith(%q))`, body)
	}
	long := "A long log:" + strings.Repeat("\nline of the build output", 40)
	post(long)
	edited := post("Deploy at 5")
	e.api(t, d.ben, "PATCH", "/api/messages/"+edited, map[string]string{"body": "Deploy at 6"}, nil)
	pinned := post("The release checklist")
	e.api(t, d.ben, "POST", "/api/channels/"+ch.ID+"/pins", map[string]string{"message_id": pinned}, nil)
	post("@here who can review the release?")
	post("@ana can you check the chart?")
	file := filepath.Join(t.TempDir(), "chart.png")
	writePNG(t, file)
	do(t, tab, "upload an image", chromedp.SetUploadFiles(`form.composer input[type=file]`, []string{file}))

	// The upload shows its image and not its file name as text.
	upload := `[...document.querySelectorAll('.list .msg:not(.pending)')].find(m => [...m.querySelectorAll('img.inline-image')].some(i => i.alt === 'chart.png' && i.complete && i.naturalWidth === 160))`
	waitFor(t, tab, "the image", upload)
	if !eval[bool](t, tab, `document.querySelector('.list .intro').hidden`) {
		t.Fatalf("the intro stays over messages")
	}
	if eval[bool](t, tab, upload+`.querySelector('.body') !== null`) {
		t.Fatalf("the upload repeats its file name as text")
	}
	// A mention of Ana is highlighted; "(edited)" ends the last line; the pin is marked.
	waitFor(t, tab, "the mention highlighted", row("@ana can you check")+`?.classList.contains('to-me')`)
	waitFor(t, tab, "the @here highlighted", row("@here who can review")+`?.classList.contains('to-me')`)
	waitFor(t, tab, "(edited) inline", `(m => { if (!m) return false; const b = m.querySelector('.body').getClientRects(), x = m.querySelector('.edited')?.getBoundingClientRect();
		return !!x && b.length > 0 && m.querySelector('.body').textContent === 'Deploy at 6' && Math.abs(x.top - b[b.length - 1].top) < 8 && x.left > b[b.length - 1].left; })(`+row("Deploy at 6")+`)`)
	waitFor(t, tab, "the pinned mark", row("The release checklist")+`?.querySelector('.pinned-mark')?.textContent === 'Pinned'`)
	if eval[bool](t, tab, row("Deploy at 6")+`.querySelector('.pinned-mark') !== null`) {
		t.Fatalf("an unpinned message is marked pinned")
	}
	// A long message opens on "Show more".
	waitFor(t, tab, "the long one collapsed", row("A long log:")+`?.querySelector('.body.collapsed') && `+row("A long log:")+`.querySelector('.body').clientHeight < 400`)
	waitFor(t, tab, "Show more pressed", `(b => b && (b.click(), true))(`+row("A long log:")+`?.querySelector('button.show-more'))`)
	waitFor(t, tab, "the whole message", `(m => m && !m.querySelector('.body.collapsed') && m.querySelector('.body').clientHeight > 600)(`+row("A long log:")+`)`)
	shot(t, tab, fmt.Sprintf("day-one-%d", w))

	// The image opens in an overlay; Esc closes it.
	waitFor(t, tab, "the image pressed", `(i => i && (i.click(), true))(`+upload+`?.querySelector('img.inline-image'))`)
	waitFor(t, tab, "the overlay", `(o => o && o.getAttribute('aria-modal') === 'true' && o.querySelector('img.overlay-image').complete
		&& o.querySelector('img.overlay-image').naturalWidth === 160 && document.activeElement?.getAttribute('aria-label') === 'Close image')(document.querySelector('.overlay[role=dialog]'))`)
	shot(t, tab, fmt.Sprintf("image-overlay-%d", w))
	if !narrow {
		checkA11y(t, tab, "the image overlay")
	}
	do(t, tab, "Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, tab, "the overlay closed", `!document.querySelector('.overlay')`)

	// Mentions: the panel lists Ben's mention of Ana; a click opens it.
	drawer()
	do(t, tab, "open Mentions", mouseClick(`.sidebar button.view-link`))
	waitFor(t, tab, "the mention listed", `[...document.querySelectorAll('.panel .mentions .result')].some(r => r.textContent.includes('Ben Okafor') && r.textContent.includes('#`+name+`') && r.querySelector('.snippet').textContent.includes('@ana'))`)
	// @here is a mention of everyone in the channel, kept for the view (full-text search drops "here").
	waitFor(t, tab, "the @here listed", `[...document.querySelectorAll('.panel .mentions .result')].some(r => r.textContent.includes('#`+name+`') && r.querySelector('.snippet').textContent === '@here who can review the release?')`)
	shot(t, tab, fmt.Sprintf("mentions-%d", w))
	if !narrow {
		checkA11y(t, tab, "the mentions panel and highlighted, collapsed, edited and pinned messages")
	}
	do(t, tab, "open the mention", mouseClick(`.panel .mentions .result`))
	waitFor(t, tab, "the mention on screen", row("@ana can you check")+`?.classList.contains('highlight')`)
	if narrow && !eval[bool](t, tab, `document.querySelector('.panel').hidden`) {
		t.Fatalf("on a narrow window the panel still covers the message it opened")
	}

	// Mark all read: Ben writes in design; the workspace menu clears it, on the server too.
	e.api(t, d.ben, "POST", "/api/channels/"+d.design+"/messages", map[string]string{"body": fmt.Sprintf("for later %d", w)}, nil)
	waitFor(t, tab, "design unread", `document.querySelector('.places a.place[title="Launch planning"]')?.classList.contains('unread')`)
	drawer()
	do(t, tab, "open the workspace menu", mouseClick(`.ws-head button[aria-haspopup]`))
	waitFor(t, tab, "Mark all read pressed", `(b => b && (b.click(), true))([...document.querySelectorAll('.menu [role=menuitem]')].find(b => b.textContent === 'Mark all read'))`)
	waitFor(t, tab, "design read", `!document.querySelector('.places a.place[title="Launch planning"]').classList.contains('unread')`)
	var list struct {
		Channels []struct {
			Name        string `json:"name"`
			UnreadCount int    `json:"unread_count"`
		}
	}
	e.api(t, d.ana, "GET", "/api/workspaces/"+d.ws+"/channels", nil, &list)
	for _, c := range list.Channels {
		if c.UnreadCount != 0 {
			t.Fatalf("after Mark all read the server counts %d unread in %s", c.UnreadCount, c.Name)
		}
	}
	if narrow {
		do(t, tab, "close the drawer", chromedp.KeyEvent(kb.Escape))
	}
	do(t, tab, "a desktop window again", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		return err
	}))
}
