package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestBrowserBadgesFollowEdits (issue 30) runs at 1280×800 and 390×844 with Ana's page on
// #general while Ben edits and deletes his messages elsewhere: the sidebar's mention badges
// follow at once, for messages the page saw arrive and for ones only the listing had counted
// (the reload before); an edit of a message Ana has read moves nothing; deleting an unread
// direct message takes its badge away.
func TestBrowserBadgesFollowEdits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana, ben := e.handled(t, "Ana Lima", "ana"), e.handled(t, "Ben Okafor", "ben")
	ws := e.workspace(t, ana, "Acme")
	persisttest.Member(t, e.store, ws.ID, ben.user.ID, persist.RoleMember)
	general := e.channel(t, ana, ws.ID, "general")
	var dm struct{ Conversation persist.DM }
	e.api(t, ana, "POST", "/api/dms", map[string]any{"workspace_id": ws.ID, "member_ids": []string{ben.user.ID}}, &dm)
	tab := newBrowser(t, e).tab(t, ana)
	badge := func(id string) string { return `(` + sidebarRow(id) + `?.querySelector('.badge')?.textContent ?? '')` }
	dmRow := sidebarRow(dm.Conversation.ID)
	say := func(path, body string) string {
		var out struct{ Message persist.Message }
		e.api(t, ben, "POST", path, map[string]string{"body": body}, &out)
		return out.Message.ID
	}
	edit := func(id, body string) {
		e.api(t, ben, "PATCH", "/api/messages/"+id, map[string]string{"body": body}, nil)
	}
	del := func(id string) { e.api(t, ben, "DELETE", "/api/messages/"+id, nil, nil) }

	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			resize(t, tab, w, h)
			ch := e.channel(t, ana, ws.ID, fmt.Sprintf("build-%d", w))
			path := "/api/channels/" + ch.ID + "/messages"
			red := say(path, "the build is red")
			asked := say(path, "@ana can you look?")
			do(t, tab, "open general", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+general.RouteID))
			waitFor(t, tab, "the listing's count", header+` === 'general' && `+badge(ch.ID)+` === '1'`)

			// A message the page saw arrive: an edit that adds a mention counts it, and one
			// that takes it away (or a deletion) uncounts it.
			late := say(path, "nothing for you yet")
			edit(late, "@ana nothing for you yet")
			waitFor(t, tab, "an edit adds a mention", badge(ch.ID)+` === '2'`)
			// Messages only the listing knew: the page asks it again.
			edit(red, "the build is red @here")
			waitFor(t, tab, "an edit adds @here to a message from before the page", badge(ch.ID)+` === '3'`)
			edit(asked, "can you look?")
			waitFor(t, tab, "an edit removes a mention the listing counted", badge(ch.ID)+` === '2'`)
			del(late)
			waitFor(t, tab, "a deletion", badge(ch.ID)+` === '1'`)
			edit(red, "the build is green")
			waitFor(t, tab, "the last mention edited away", badge(ch.ID)+` === '' && `+sidebarRow(ch.ID))
			edit(red, "the build is red again, @channel")
			waitFor(t, tab, "and back", badge(ch.ID)+` === '1'`)
			if w < 800 {
				do(t, tab, "the drawer", mouseClick(".conv-header .nav-toggle"))
				waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
			}
			shot(t, tab, fmt.Sprintf("badge-edits-%d", w))

			// Once read, an edit that adds a mention is no news.
			waitFor(t, tab, "the channel opened", `(a => a && (a.click(), true))(`+sidebarRow(ch.ID)+`)`)
			waitFor(t, tab, "the channel read", header+` === '`+ch.Name+`' && `+badge(ch.ID)+` === ''`)
			waitFor(t, tab, "the server told", `performance.getEntriesByType('resource').some(r => new URL(r.name).pathname === '/api/channels/`+ch.ID+`/read' && r.responseEnd > 0)`)
			waitFor(t, tab, "back to general", `(a => a && (a.click(), true))(`+sidebarRow(general.ID)+`)`)
			waitFor(t, tab, "general open", header+` === 'general'`)
			edit(asked, "@ana can you look, after all?")
			say(path, "@here one more")
			// The direct message comes after both on the same stream: once its badge shows,
			// the channel's has counted all it will.
			direct := say("/api/dms/"+dm.Conversation.ID+"/messages", fmt.Sprintf("are you there? (%d)", w))
			waitFor(t, tab, "only the new message counts", badge(dm.Conversation.ID)+` === '1' && `+badge(ch.ID)+` === '1'`)
			del(direct)
			waitFor(t, tab, "a deleted direct message", badge(dm.Conversation.ID)+` === '' && `+dmRow)
		})
	}
}
