package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
	"github.com/natterchat/natter/system"
)

// TestBrowserPeople drives people (issue 30) at 1280×800 and 390×844. Ana's browser is in New
// York: her first sign-in stores that time zone. Ben (Tokyo) has a socket open: a click on his
// name in a message opens his card with his handle, "Online", his local time and how far ahead
// of Ana it is; when his socket closes the card turns "Offline" by itself; "Message" opens the
// direct conversation with him. The People panel lists him under "Online" with a green dot.
func TestBrowserPeople(t *testing.T) {
	t.Parallel()
	e := newSystemEnv(t, func(c *system.Config) { c.Realtime.PresenceFlush = 50 * time.Millisecond })
	ana := e.person(t, "Ana Lima")
	handle := "ben"
	benUser := persisttest.User(t, e.store, &persisttest.UserOpts{DisplayName: persisttest.Ptr("Ben Okafor"), Handle: &handle})
	ben := person{user: benUser, token: persisttest.Session(t, e.store, benUser.ID)}
	ws := e.workspace(t, ana, "Acme")
	persisttest.Member(t, e.store, ws.ID, ben.user.ID, persist.RoleMember)
	general := e.channel(t, ana, ws.ID, "general")
	e.api(t, ben, "PATCH", "/api/me", map[string]string{"time_zone": "Asia/Tokyo"}, nil)

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	do(t, tab, "New York", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"})
		return err
	}))
	open := func(t *testing.T) {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+general.RouteID))
		waitFor(t, tab, "general open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	}
	open(t)
	deadline := time.Now().Add(waitLimit)
	for {
		var me struct {
			User struct {
				TimeZone string `json:"time_zone"`
			}
		}
		e.api(t, ana, "GET", "/api/me", nil, &me)
		if me.User.TimeZone == "America/New_York" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first sign-in did not store the browser's time zone: %q", me.User.TimeZone)
		}
		time.Sleep(50 * time.Millisecond)
	}

	benOnline := func() *realtimetest.Socket {
		s, status := realtimetest.DialSocket(t, e.URL, realtimetest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: ben.token})
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("ben's socket: %d", status)
		}
		return s
	}
	card := `document.querySelector('.person-card[role=dialog]')`
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			resize(t, tab, w, h)
			open(t)
			sock := benOnline()
			body := fmt.Sprintf("hello from Tokyo at %d", w)
			e.api(t, ben, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": body}, nil)
			waitFor(t, tab, "ben's message", hasBody(body))

			// His name opens his card: who, online, local time.
			// (A second message of his in a row shows no name: the first one's is clicked.)
			name := `.author[data-card=` + ben.user.ID + `]`
			if w > 800 {
				// By keyboard: from his message, Tab reaches his name, and Enter opens the card.
				waitFor(t, tab, "his message focused", `(m => m && (m.focus(), document.activeElement === m))([...document.querySelectorAll('.list .msg')].findLast(m => m.querySelector('`+name+`')))`)
				do(t, tab, "Tab", chromedp.KeyEvent(kb.Tab))
				waitFor(t, tab, "his name focused", `document.activeElement?.matches('.list .msg `+name+`[role=button]')`)
				do(t, tab, "Enter", chromedp.KeyEvent(kb.Enter))
			} else {
				waitFor(t, tab, "his name, clicked", `(a => a && (a.click(), true))(document.querySelector('.list .msg `+name+`'))`)
			}
			waitFor(t, tab, "the card", card+`?.querySelector('.card-name')?.textContent === 'Ben Okafor' && `+card+`.querySelector('.card-handle').textContent === '@ben'`)
			waitFor(t, tab, "ben online", card+`.querySelector('.card-presence').textContent === 'Online' && `+card+`.querySelector('.card-avatar .presence-dot.online[aria-label=Online]')`)
			tokyo, _ := time.LoadLocation("Asia/Tokyo")
			newYork, _ := time.LoadLocation("America/New_York")
			now := time.Now()
			_, tokyoOff := now.In(tokyo).Zone()
			_, nyOff := now.In(newYork).Zone()
			ahead := fmt.Sprintf("%d h ahead of you", (tokyoOff-nyOff)/3600)
			waitFor(t, tab, "his local time", card+`.querySelector('.card-time .card-local')`)
			shown := eval[string](t, tab, card+`.querySelector('.card-time').textContent`)
			var times []string
			for _, at := range []time.Time{now.Add(-time.Minute), now, now.Add(time.Minute)} {
				times = append(times, at.In(tokyo).Format("3:04 PM"))
			}
			found := false
			for _, local := range times {
				found = found || strings.HasPrefix(strings.ReplaceAll(shown, "\u202f", " "), local+" local time · "+ahead)
			}
			if !found || !strings.HasSuffix(shown, "Asia/Tokyo") {
				t.Fatalf("the card's time reads %q, want one of %v then %q and Asia/Tokyo", shown, times, ahead)
			}
			inside := fmt.Sprintf(`(r => r.left >= 0 && r.right <= %d && r.top >= 0 && r.bottom <= %d)(%s.getBoundingClientRect())`, w, h, card)
			waitFor(t, tab, "the card within the window", inside)
			if w < 800 {
				waitFor(t, tab, "a sheet at the bottom on a phone", card+`.classList.contains('sheet')`)
			}
			shot(t, tab, fmt.Sprintf("people-card-%d", w))
			if w > 800 {
				checkA11y(t, tab, "the profile card")
			}

			// His socket closes: the card says so by itself.
			_ = sock.Close()
			waitFor(t, tab, "ben offline", card+`.querySelector('.card-presence').textContent === 'Offline' && `+card+`.querySelector('.presence-dot:not(.online)[aria-label=Offline]')`)
			sock = benOnline()
			defer sock.Close()
			waitFor(t, tab, "ben online again", card+`.querySelector('.card-presence').textContent === 'Online'`)

			// "Message" opens the conversation with him.
			do(t, tab, "Message", mouseClick(`.person-card .card-message`))
			waitFor(t, tab, "the conversation with ben", `!`+card+` && document.querySelector('.conv-header h1')?.textContent === 'Ben Okafor' && document.querySelector('.conv-header .topic')?.textContent === 'Direct message'`)
			var dms struct {
				Conversations []struct {
					Members []struct{ ID string }
				}
			}
			e.api(t, ana, "GET", "/api/dms?workspace_id="+ws.ID, nil, &dms)
			if len(dms.Conversations) != 1 || len(dms.Conversations[0].Members) != 2 {
				t.Fatalf("conversations: %+v", dms.Conversations)
			}

			// The People panel: ben under Online, with the dot; his row opens his card too.
			do(t, tab, "people", mouseClick(".conv-header .members-count"))
			waitFor(t, tab, "the panel listing ben", `document.querySelector('.panel .people li[data-user=`+ben.user.ID+`]')`)
			if !eval[bool](t, tab, `!!document.querySelector('.panel .people li[data-user=`+ben.user.ID+`] .presence-dot.online')`) {
				t.Logf("the panel before ben shows online: %s", eval[string](t, tab, `document.querySelector('.panel').outerHTML.slice(0, 2000)`))
			}
			waitFor(t, tab, "ben listed online", `(li => li && li.closest('ul').previousElementSibling?.textContent.startsWith('Online') && li.querySelector('.presence-dot.online'))(document.querySelector('.panel .people li[data-user=`+ben.user.ID+`]'))`)
			shot(t, tab, fmt.Sprintf("people-panel-%d", w))
			do(t, tab, "his row", mouseClick(`.panel .people li[data-user=`+ben.user.ID+`] .who`))
			waitFor(t, tab, "his card from the panel", card+`?.querySelector('.card-name')?.textContent === 'Ben Okafor'`)
			do(t, tab, "Esc", chromedp.KeyEvent("\u001b"))
			waitFor(t, tab, "the card closed", `!`+card)
		})
	}
}
