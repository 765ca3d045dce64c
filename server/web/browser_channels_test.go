package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// channelsWorld is a workspace seen by Ben: Ana owns it, Cy is the third person, and #board is a
// private channel Ben is not in. home is Ben's page; other is Ben on a second device.
type channelsWorld struct {
	e            *env
	ana, ben, cy person
	ws           string
	home, other  context.Context
}

// TestBrowserChannels drives issue 30's channels as Ben, at 1280×800 and at 390×844: the channel
// browser (searched by the server, member counts, no private channel he is not in), leaving and
// joining again, a star (its own section, on top) and a mute (dimmed, no unread count, mentions
// still counted) that follow him to another device, and the empty channel's "Invite people",
// which adds someone who had left.
func TestBrowserChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := &channelsWorld{e: e, ana: e.handled(t, "Ana Lima", "ana"), ben: e.handled(t, "Ben Okafor", "ben"), cy: e.handled(t, "Cy Tran", "cy")}
	ws := e.workspace(t, w.ana, "Acme")
	w.ws = ws.ID
	e.addMember(t, ws.ID, w.ben.user.ID)
	e.addMember(t, ws.ID, w.cy.user.ID)
	e.channel(t, w.ana, ws.ID, "general")
	e.api(t, w.ana, "POST", "/api/workspaces/"+ws.ID+"/channels", map[string]any{"name": "board", "visibility": "private"}, nil)

	b := newBrowser(t, e)
	w.home, w.other = b.tab(t, w.ben), b.tab(t, w.ben)
	do(t, w.home, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, w.home, "general to open", header+` === 'general'`)
	waitFor(t, w.home, "the socket to connect", `document.querySelector('.me .dot.online')`)

	t.Run("Desktop1280x800", func(t *testing.T) { w.at(t, 1280, 800) })
	t.Run("Phone390x844", func(t *testing.T) { w.at(t, 390, 844) })
}

// at checks everything at one window size, with channels of its own.
func (w *channelsWorld) at(t *testing.T, width, height int64) {
	e, tab := w.e, w.home
	resize(t, tab, width, height)
	narrow := width <= 800
	closePanel := func() {
		eval[bool](t, tab, `(b => (document.querySelector('.panel').hidden || b.click(), true))(document.querySelector('.panel-head button[aria-label="Close panel"]'))`)
	}
	menu := func(label string) {
		closePanel()
		if narrow {
			do(t, tab, "open the drawer", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
			waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
		}
		do(t, tab, "open the workspace menu", mouseClick(`.ws-head button[aria-label="Workspace menu"]`))
		clickWhen(t, tab, "the menu entry "+label, fmt.Sprintf(`[...document.querySelectorAll('.ws-head [role=menuitem]')].find(b => b.textContent === %q)`, label))
		waitFor(t, tab, "the panel "+label, fmt.Sprintf(`!document.querySelector('.panel').hidden && document.querySelector('#panel-title').textContent === %q`, label))
	}
	open := func(name string) {
		clickWhen(t, tab, name+" in the sidebar", sidebarChannel(name))
		waitFor(t, tab, name+" open", fmt.Sprintf(header+` === %q`, name))
	}
	// headerButton presses a header button with the mouse: it must be on screen, not under another.
	headerButton := func(what, sel string) {
		waitFor(t, tab, what+" on screen", fmt.Sprintf(`(b => { if (!b) return false; const r = b.getBoundingClientRect();
			return r.left >= 0 && r.right <= innerWidth && document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)?.closest('button') === b })(document.querySelector(%q))`, sel))
		do(t, tab, what, mouseClick(sel))
	}
	browseRows := `[...document.querySelectorAll('.browse-list li')].map(li => li.querySelector('.author').textContent + ':' + li.querySelector('.browse-meta').textContent)`
	search := func(q string) {
		waitFor(t, tab, "searching "+q, fmt.Sprintf(`(i => i && (i.value = %q, i.dispatchEvent(new Event('input')), true))(document.querySelector('.browse-q'))`, q))
	}

	ops, random, empty := fmt.Sprintf("ops-%d", width), fmt.Sprintf("random-%d", width), fmt.Sprintf("empty-%d", width)
	e.api(t, w.ana, "POST", "/api/workspaces/"+w.ws+"/channels", map[string]any{"name": ops, "display_title": fmt.Sprintf("Operations %d", width)}, nil)
	randomID := e.channel(t, w.ana, w.ws, random).ID
	emptyID := e.channel(t, w.ana, w.ws, empty).ID
	waitFor(t, tab, "the new channels in the sidebar", sidebarChannel(empty))

	// The browser: the server searches names and display titles; a private channel Ben is not in
	// is never listed.
	menu("Browse channels")
	search(fmt.Sprintf("operations %d", width))
	waitFor(t, tab, "ops found by its display title", browseRows+fmt.Sprintf(`.join() === %q`, ops+":3 members · joined"))
	shot(t, tab, fmt.Sprintf("channels-browse-%d", width))
	search("board")
	waitFor(t, tab, "no private channel", `document.querySelector('.panel-body')?.textContent.includes('No channel matches “board”.')`)
	closePanel()

	// Leave from the channel's details: out of the sidebar, here and on his other device.
	open(random)
	headerButton("Channel details", `.conv-header button[aria-label="Channel details"]`)
	waitFor(t, tab, "the details", `document.querySelector('#panel-title').textContent === 'Channel details' && document.querySelector('.about-count')?.textContent === '3 members'`)
	clickWhen(t, tab, "Leave", `document.querySelector('.panel button.leave')`)
	waitFor(t, tab, random+" gone from the sidebar", sidebarChannel(random)+` === undefined`)
	waitFor(t, tab, "moved to general", header+` === 'general'`)
	w.reloadOther(t)
	waitFor(t, w.other, random+" gone on the other device", sidebarChannel("general")+` && `+sidebarChannel(random)+` === undefined`)

	// Join again from the browser.
	menu("Browse channels")
	search(random)
	waitFor(t, tab, random+" listed, not joined", browseRows+fmt.Sprintf(`.join() === %q`, random+":2 members"))
	clickWhen(t, tab, "Join", fmt.Sprintf(`document.querySelector('.browse-list button[aria-label="Join #%s"]')`, random))
	waitFor(t, tab, random+" back in the sidebar", sidebarChannel(random))
	closePanel()

	// Star it from the header: its own section, on top, on both devices.
	open(random)
	headerButton("Star", `.conv-header button.star`)
	starred := fmt.Sprintf(`(g => g?.querySelector('.group-head span')?.textContent === 'Starred' && [...g.querySelectorAll('.place .label')].some(l => l.textContent === %q))(document.querySelector('.places .group'))`, random)
	waitFor(t, tab, "the Starred section first", starred)
	waitFor(t, tab, "the star pressed", `document.querySelector('.conv-header button.star').getAttribute('aria-pressed') === 'true'`)

	// Mute it: dimmed; a message leaves no unread count, a mention still counts.
	headerButton("Channel details", `.conv-header button[aria-label="Channel details"]`)
	clickWhen(t, tab, "Mute", `[...document.querySelectorAll('.panel button.mute')].find(b => b.textContent === 'Mute')`)
	waitFor(t, tab, "dimmed in the sidebar", sidebarChannel(random)+`?.classList.contains('muted-place')`)
	closePanel()
	open("general")
	e.api(t, w.ana, "POST", "/api/channels/"+randomID+"/messages", map[string]string{"body": "the usual chatter"}, nil)
	e.api(t, w.ana, "POST", "/api/channels/"+emptyID+"/messages", map[string]string{"body": "unmuted chatter"}, nil)
	waitFor(t, tab, empty+" unread (not muted)", sidebarChannel(empty)+`?.classList.contains('unread')`)
	if eval[bool](t, tab, sidebarChannel(random)+`.classList.contains('unread') || !!`+sidebarChannel(random)+`.querySelector('.count')`) {
		t.Fatalf("a muted channel shows its unread messages")
	}
	e.api(t, w.ana, "POST", "/api/channels/"+randomID+"/messages", map[string]string{"body": "@ben a question for you"}, nil)
	waitFor(t, tab, "the mention counted", sidebarChannel(random)+`?.querySelector('.badge')?.textContent === '1'`)
	if narrow {
		do(t, tab, "open the drawer", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
		waitFor(t, tab, "the drawer open", `document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
	}
	shot(t, tab, fmt.Sprintf("channels-sidebar-%d", width))
	w.reloadOther(t)
	waitFor(t, w.other, "starred and muted on the other device", starred+` && `+sidebarChannel(random)+`?.classList.contains('muted-place')`)

	// The empty channel's intro adds people: Cy left it, and Ben brings him back.
	quiet := fmt.Sprintf("quiet-%d", width)
	quietID := e.channel(t, w.ana, w.ws, quiet).ID
	waitFor(t, tab, quiet+" in the sidebar", sidebarChannel(quiet))
	e.api(t, w.cy, "POST", "/api/channels/"+quietID+"/leave", nil, nil)
	open(quiet)
	waitFor(t, tab, "the intro", fmt.Sprintf(`document.querySelector('.list .intro:not([hidden]) h2')?.textContent === 'This is the start of #%s'`, quiet))
	clickWhen(t, tab, "Invite people", `[...document.querySelectorAll('.list .intro button')].find(b => b.textContent === 'Invite people')`)
	waitFor(t, tab, "the add-people dialog", `document.querySelector('#panel-title').textContent === 'Add people'`)
	rows := `[...document.querySelectorAll('.add-list li')].map(li => li.querySelector('.author').textContent + ':' + (li.querySelector('.tag')?.textContent || li.querySelector('button').textContent)).join()`
	waitFor(t, tab, "who is in, who may be added", rows+` === 'Ana Lima:in channel,Ben Okafor:in channel,Cy Tran:Add'`)
	shot(t, tab, fmt.Sprintf("channels-add-people-%d", width))
	do(t, tab, "Add Cy", mouseClick(`.add-list button[aria-label="Add Cy Tran"]`))
	waitFor(t, tab, "Cy in the channel", rows+` === 'Ana Lima:in channel,Ben Okafor:in channel,Cy Tran:in channel'`)
	var cyList struct {
		Channels []struct {
			Name   string
			Joined bool
		}
	}
	e.api(t, w.cy, "GET", "/api/workspaces/"+w.ws+"/channels", nil, &cyList)
	for _, c := range cyList.Channels {
		if c.Name == quiet && !c.Joined {
			t.Fatalf("Cy is not back in %s", quiet)
		}
	}
	closePanel()
	do(t, tab, "a desktop window again", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		return err
	}))
}

// reloadOther loads the client afresh on Ben's second device.
func (w *channelsWorld) reloadOther(t *testing.T) {
	t.Helper()
	do(t, w.other, "open the client on the other device", chromedp.Navigate(w.e.URL+"/"))
	waitFor(t, w.other, "general on the other device", header+` === 'general'`)
}
