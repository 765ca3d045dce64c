package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
	"github.com/natterchat/natter/system"
)

// TestBrowserSidebarBadges drives the sidebar's mention badges and presence dots (issue 30) at
// 1280×800 and 390×844, as Ana. Ben mentions her twice in a channel of its own and writes to
// her directly while her page shows #general; after a reload the channel's row has the badge
// "2", the conversation's "1" and Mentions "3" (the listings' mention_count). Ben's socket
// opens: the conversation's row shows him online by itself, as do the quick switcher and the
// channel's details list, and the row and the list offline when it closes. Opening the channel clears its badge, and the next
// reload has none (the server's count is 0).
func TestBrowserSidebarBadges(t *testing.T) {
	t.Parallel()
	e := newSystemEnv(t, func(c *system.Config) { c.Realtime.PresenceFlush = 50 * time.Millisecond })
	ana, ben := e.handled(t, "Ana Lima", "ana"), e.handled(t, "Ben Okafor", "ben")
	ws := e.workspace(t, ana, "Acme")
	persisttest.Member(t, e.store, ws.ID, ben.user.ID, persist.RoleMember)
	general := e.channel(t, ana, ws.ID, "general")
	var dm struct{ Conversation persist.DM }
	e.api(t, ana, "POST", "/api/dms", map[string]any{"workspace_id": ws.ID, "member_ids": []string{ben.user.ID}}, &dm)
	tab := newBrowser(t, e).tab(t, ana)
	open := func(t *testing.T) {
		do(t, tab, "open general", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+general.RouteID))
		waitFor(t, tab, "general open", header+` === 'general'`)
	}
	dmRow := sidebarRow(dm.Conversation.ID)
	// recorded: the page has had the server's answer to a request to path (the read is committed).
	recorded := func(path string) string {
		return `performance.getEntriesByType('resource').some(r => new URL(r.name).pathname === '` + path + `' && r.responseEnd > 0)`
	}

	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			resize(t, tab, w, h)
			ch := e.channel(t, ana, ws.ID, fmt.Sprintf("release-%d", w))
			chRow := sidebarRow(ch.ID)
			open(t)
			for _, body := range []string{"@ana can you look at the build?", "nothing for anyone", "@channel it is red again"} {
				e.api(t, ben, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": body}, nil)
			}
			e.api(t, ben, "POST", "/api/dms/"+dm.Conversation.ID+"/messages", map[string]string{"body": fmt.Sprintf("are you there? (%d)", w)}, nil)

			// A reload forgets what the page saw: the badges come from the listings.
			open(t)
			waitFor(t, tab, "the channel's badge", chRow+`?.querySelector('.badge[aria-label="2 mentions"]')?.textContent === '2'`)
			waitFor(t, tab, "the conversation's badge", dmRow+`?.querySelector('.badge[aria-label="1 mentions"]')?.textContent === '1'`)
			waitFor(t, tab, "the Mentions total", `[...document.querySelectorAll('.sidebar .view-link')].some(b => b.textContent.startsWith('Mentions') && b.querySelector('.badge')?.textContent === '3')`)

			// Ben comes and goes: the conversation's row follows.
			sock, status := realtimetest.DialSocket(t, e.URL, realtimetest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: ben.token})
			if status != http.StatusSwitchingProtocols {
				t.Fatalf("ben's socket: %d", status)
			}
			defer sock.Close()
			waitFor(t, tab, "ben online beside the conversation", dmRow+`?.querySelector('.presence-dot.online[aria-label=Online]')`)
			// The quick switcher's conversation with him says so too.
			do(t, tab, "Ctrl+K", key("k", chromedp.ModifierCtrl))
			waitFor(t, tab, "ben online in the switcher", `document.querySelector('.qs-item[data-kind=dm][data-id="`+dm.Conversation.ID+`"] .presence-dot.online')`)
			do(t, tab, "Esc", chromedp.KeyEvent("\u001b"))
			waitFor(t, tab, "the switcher closed", `document.querySelector('.qs-backdrop')?.hidden`)
			if w < 800 {
				do(t, tab, "the drawer", mouseClick(".conv-header .nav-toggle"))
				waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
			}
			shot(t, tab, fmt.Sprintf("sidebar-badges-%d", w))

			// Reading the channel clears its badge, here and on the server.
			waitFor(t, tab, "the channel opened from its row", `(a => a && (a.click(), true))(`+chRow+`)`)
			waitFor(t, tab, "the channel read", header+` === '`+ch.Name+`' && !`+chRow+`.querySelector('.badge, .count')`)
			waitFor(t, tab, "the server told", recorded("/api/channels/"+ch.ID+"/read"))
			// Its details list Ben with his dot, which follows him too.
			do(t, tab, "the channel's details", mouseClick(`.conv-header button[aria-label="Channel details"]`))
			benInDetails := `document.querySelector('.panel .about-members li[data-user="` + ben.user.ID + `"]')`
			waitFor(t, tab, "ben online in the details", dotWord(benInDetails+`?.querySelector('.pdot')`)+` === 'Online'`)
			_ = sock.Close()
			waitFor(t, tab, "ben offline, in the sidebar and the details", dmRow+`?.querySelector('.presence-dot:not(.online)[aria-label=Offline]') && `+
				dotWord(benInDetails+`?.querySelector('.pdot')`)+` === 'Offline'`)

			open(t)
			waitFor(t, tab, "no badge after the next reload", chRow+` && !`+chRow+`.querySelector('.badge, .count') && `+dmRow+`?.querySelector('.badge')`)
			// The conversation stays unread: reading it leaves the next size a clean start.
			waitFor(t, tab, "the conversation opened", `(a => a && (a.click(), true))(`+dmRow+`)`)
			waitFor(t, tab, "the conversation read", `!`+dmRow+`.querySelector('.badge')`)
			waitFor(t, tab, "the server told", recorded("/api/dms/"+dm.Conversation.ID+"/read"))
		})
	}
}
