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

// dotWord is what a presence dot of dom.js's pdot says now: the alternative text of each of its
// pseudo-elements that has content, joined by "+" ("" for none, or no element): people.css gives
// an online dot only its ::after, an offline one only its ::before.
func dotWord(el string) string {
	return `(d => d ? ['::before', '::after'].map(p => getComputedStyle(d, p).content).filter(c => c !== 'none' && c !== 'normal')
		.map(c => c.slice(c.lastIndexOf('/') + 1).trim().replace(/^"|"$/g, '')).join('+') : '')(` + el + `)`
}

// TestBrowserPresenceInHeadersAndLists (issue 30) runs at 1280×800 and 390×844 as Ana, the
// owner, with Ben and Cy. The group conversation's header has one dot, "Nobody online"; the
// moderation directory's rows have each person's, "Offline". Ben's real WebSocket opening turns
// the header's to "Someone online" and his row's to "Online" (Cy's stays "Offline"), with the
// same elements: nothing is drawn again. A conversation with Ben alone has his dot in its
// header, which goes back to "Offline" when his socket closes.
func TestBrowserPresenceInHeadersAndLists(t *testing.T) {
	t.Parallel()
	e := newSystemEnv(t, func(c *system.Config) { c.Realtime.PresenceFlush = 50 * time.Millisecond })
	ana, ben, cy := e.handled(t, "Ana Lima", "ana"), e.handled(t, "Ben Okafor", "ben"), e.handled(t, "Cy Tran", "cy")
	ws := e.workspace(t, ana, "Acme")
	persisttest.Member(t, e.store, ws.ID, ben.user.ID, persist.RoleMember)
	persisttest.Member(t, e.store, ws.ID, cy.user.ID, persist.RoleMember)
	var group, pair struct{ Conversation persist.DM }
	e.api(t, ana, "POST", "/api/dms", map[string]any{"workspace_id": ws.ID, "member_ids": []string{ben.user.ID, cy.user.ID}}, &group)
	e.api(t, ana, "POST", "/api/dms", map[string]any{"workspace_id": ws.ID, "member_ids": []string{ben.user.ID}}, &pair)
	// Every workspace has a channel; without one, the page's socket was not told of presence changes.
	e.channel(t, ana, ws.ID, "general")
	tab := newBrowser(t, e).tab(t, ana)
	headerDot := dotWord(`document.querySelector('.conv-header h1 .pdot')`)
	rowDot := func(id string) string {
		return dotWord(`document.querySelector('.mod-list li.mod-member[data-user="` + id + `"] .pdot')`)
	}

	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			resize(t, tab, w, h)
			do(t, tab, "open the group", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+group.Conversation.RouteID))
			waitFor(t, tab, "nobody online in the header", headerDot+` === 'Nobody online'`)
			if w < 800 {
				do(t, tab, "the drawer", mouseClick(".conv-header .nav-toggle"))
			}
			openMenu(t, tab, "Members and moderation")
			waitFor(t, tab, "ben and cy offline in the directory", rowDot(ben.user.ID)+` === 'Offline' && `+rowDot(cy.user.ID)+` === 'Offline'`)
			eval[bool](t, tab, `(window.seen = [document.querySelector('.conv-header h1 .pdot'), document.querySelector('.mod-list li.mod-member[data-user="`+
				ben.user.ID+`"]')], true)`)

			sock, status := realtimetest.DialSocket(t, e.URL, realtimetest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: ben.token})
			if status != http.StatusSwitchingProtocols {
				t.Fatalf("ben's socket: %d", status)
			}
			defer sock.Close()
			waitFor(t, tab, "someone online in the header, ben in the directory, the same elements", headerDot+` === 'Someone online' && `+
				rowDot(ben.user.ID)+` === 'Online' && `+rowDot(cy.user.ID)+` === 'Offline' && window.seen[0] === document.querySelector('.conv-header h1 .pdot') && `+
				`window.seen[1] === document.querySelector('.mod-list li.mod-member[data-user="`+ben.user.ID+`"]')`)
			if w >= 800 {
				shot(t, tab, fmt.Sprintf("presence-lists-%d", w))
			}

			do(t, tab, "open the conversation with ben", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+pair.Conversation.RouteID))
			waitFor(t, tab, "ben online in its header", headerDot+` === 'Online'`)
			if w < 800 {
				shot(t, tab, fmt.Sprintf("presence-header-%d", w))
			}
			_ = sock.Close()
			waitFor(t, tab, "ben offline in its header", headerDot+` === 'Offline'`)
		})
	}
}
