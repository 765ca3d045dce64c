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

// TestBrowserPresenceDots (issue 30) runs at 1280×800 and 390×844 as Ana, in a channel where Ben
// wrote, with a group conversation of Ana, Ben and Cy. While nobody else is connected the
// group's dot says "Nobody online" and Ben's message has no dot; Ben's real WebSocket opening
// turns the group's dot green ("1 of 2 online"), gives his message's picture its dot without
// drawing the row again, the quick switcher's entry for the group says so too, and `@be` in the composer offers him with a green dot; his socket
// closing takes the dots back, still without a redraw.
func TestBrowserPresenceDots(t *testing.T) {
	t.Parallel()
	e := newSystemEnv(t, func(c *system.Config) { c.Realtime.PresenceFlush = 50 * time.Millisecond })
	ana, ben, cy := e.handled(t, "Ana Lima", "ana"), e.handled(t, "Ben Okafor", "ben"), e.handled(t, "Cy Tran", "cy")
	ws := e.workspace(t, ana, "Acme")
	persisttest.Member(t, e.store, ws.ID, ben.user.ID, persist.RoleMember)
	persisttest.Member(t, e.store, ws.ID, cy.user.ID, persist.RoleMember)
	var group struct{ Conversation persist.DM }
	e.api(t, ana, "POST", "/api/dms", map[string]any{"workspace_id": ws.ID, "member_ids": []string{ben.user.ID, cy.user.ID}}, &group)
	groupDot := sidebarRow(group.Conversation.ID) + `?.querySelector('.presence-dot')`
	tab := newBrowser(t, e).tab(t, ana)
	box := "form.composer .compose-box"

	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			resize(t, tab, w, h)
			ch := e.channel(t, ana, ws.ID, fmt.Sprintf("standup-%d", w))
			var said struct{ Message persist.Message }
			e.api(t, ben, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": "morning, all"}, &said)
			do(t, tab, "open the channel", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+ch.RouteID))
			row := `document.querySelector('.list .msg[data-id="` + said.Message.ID + `"]')`
			// The content of the dot on Ben's picture: "none" without one.
			benDot := `getComputedStyle(` + row + `.querySelector('.gutter'), '::after').content`
			waitFor(t, tab, "nobody online", groupDot+`?.getAttribute('aria-label') === 'Nobody online' && !`+groupDot+`.classList.contains('online') && `+
				row+` && `+benDot+` === 'none'`)
			eval[bool](t, tab, `(window.benRow = `+row+`, true)`)

			sock, status := realtimetest.DialSocket(t, e.URL, realtimetest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: ben.token})
			if status != http.StatusSwitchingProtocols {
				t.Fatalf("ben's socket: %d", status)
			}
			defer sock.Close()
			waitFor(t, tab, "someone in the group online", groupDot+`?.getAttribute('aria-label') === '1 of 2 online' && `+groupDot+`.classList.contains('online')`)
			waitFor(t, tab, "ben's message with his dot, the same row", benDot+` === '""' && `+row+` === window.benRow`)
			do(t, tab, "Ctrl+K", key("k", chromedp.ModifierCtrl))
			waitFor(t, tab, "the group's dot in the switcher", `document.querySelector('.qs-item[data-kind=dm][data-id="`+group.Conversation.ID+`"] .presence-dot.online[aria-label="1 of 2 online"]')`)
			do(t, tab, "Esc", chromedp.KeyEvent("\u001b"))
			waitFor(t, tab, "the switcher closed", `document.querySelector('.qs-backdrop')?.hidden`)
			do(t, tab, "type @be", chromedp.Focus(box), chromedp.SendKeys(box, "@be"))
			option := `document.querySelector('.complete-menu [role=option]')`
			waitFor(t, tab, "ben offered, online", option+`?.querySelector('.complete-label')?.textContent === 'Ben Okafor' && `+
				option+`.querySelector('.presence-dot.online[aria-label=Online]')`)
			shot(t, tab, fmt.Sprintf("presence-dots-%d", w))
			do(t, tab, "Esc", chromedp.KeyEvent("\u001b"))
			eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input', {bubbles: true})), true))(document.querySelector('`+box+`'))`)
			if w < 800 {
				do(t, tab, "the drawer", mouseClick(".conv-header .nav-toggle"))
				waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
				shot(t, tab, fmt.Sprintf("presence-drawer-%d", w))
				do(t, tab, "Esc", chromedp.KeyEvent("\u001b"))
			}

			_ = sock.Close()
			waitFor(t, tab, "nobody online again", groupDot+`?.getAttribute('aria-label') === 'Nobody online' && `+benDot+` === 'none' && `+row+` === window.benRow`)
		})
	}
}
