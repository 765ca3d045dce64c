package web_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist"
)

// sidebarChannel is the sidebar link of the channel called name.
func sidebarChannel(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.places a.place')].find(a => a.querySelector('.label')?.textContent === %q)`, name)
}

// TestBrowserPrivateChannels drives private channels (issue 27) in two browser contexts: Ana
// creates #hiring as a private channel from the sidebar, and it shows with a lock; Ben does not
// see it until Ana adds him from the members panel, then it appears on his open page; removed,
// it leaves his open page at once, though he was reading it.
func TestBrowserPrivateChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana, ben, cleo := e.person(t, "Ana Lima"), e.person(t, "Ben Okafor"), e.person(t, "Cleo Park")
	ws := e.workspace(t, ana, "Acme")
	e.addMember(t, ws.ID, ben.user.ID)
	e.addMember(t, ws.ID, cleo.user.ID)
	e.channel(t, ana, ws.ID, "general")

	b := newBrowser(t, e)
	aTab, bTab := b.tab(t, ana), b.tab(t, ben)
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "general to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	}

	t.Run("CreateShowsTheLock", func(t *testing.T) {
		clickWhen(t, aTab, "Create private channel", `document.querySelector('button[aria-label="Create private channel"]')`)
		waitFor(t, aTab, "the name field", `document.activeElement?.getAttribute('aria-label') === 'Name of the new private channel'`)
		do(t, aTab, "type the name", chromedp.SendKeys(`input.new-channel`, "hiring"), enter())
		waitFor(t, aTab, "hiring open", `document.querySelector('.conv-header h1')?.textContent === 'hiring'`)
		waitFor(t, aTab, "a lock in the header", `document.querySelector('.conv-header h1 .sigil')?.title === 'Private channel'`)
		waitFor(t, aTab, "a lock in the sidebar", sidebarChannel("hiring")+`?.querySelector('.sigil')?.title === 'Private channel'`)
		if eval[bool](t, aTab, sidebarChannel("general")+`.querySelector('.sigil').title === 'Private channel'`) {
			t.Fatal("a public channel shows a lock")
		}
		send(t, aTab, "form.composer .compose-box", "Shortlist for the design role")
		waitFor(t, aTab, "the message", hasBody("Shortlist for the design role"))
		shot(t, aTab, "private-channel")
		if eval[bool](t, bTab, sidebarChannel("hiring")+` !== undefined`) {
			t.Fatal("Ben sees a private channel he is not in")
		}
		// The quick switcher offers it, locked, to Ana only.
		for _, tc := range []struct {
			tab  context.Context
			want string
		}{{aTab, "general:,hiring:Private channel"}, {bTab, "general:"}} {
			do(t, tc.tab, "focus the composer", chromedp.Focus("form.composer .compose-box"))
			do(t, tc.tab, "Ctrl+K", key("k", chromedp.ModifierCtrl))
			waitFor(t, tc.tab, "the switcher's channels "+tc.want, `[...document.querySelectorAll('.qs-list [role=option][data-kind=channel]')]
				.map(o => o.querySelector('.qs-label').textContent + ':' + (o.querySelector('.sigil').title || '')).sort().join() === `+fmt.Sprintf("%q", tc.want))
			do(t, tc.tab, "Esc", key(kb.Escape))
			waitFor(t, tc.tab, "the switcher closed", `!document.querySelector('.qs-backdrop:not([hidden])')`)
		}
	})

	// listed is the members panel's names, sorted.
	listed := func(names string) string {
		return `[...document.querySelectorAll('.channel-members li .author')].map(a => a.textContent).sort().join() === ` + fmt.Sprintf("%q", names)
	}
	t.Run("AddFromTheMembersPanel", func(t *testing.T) {
		clickWhen(t, aTab, "the members button", `document.querySelector('.conv-header button[aria-label="Channel members"]')`)
		waitFor(t, aTab, "Ana listed", listed("Ana Lima"))
		choose(t, aTab, "the person to add", `document.querySelector('select.add-member')`, ben.user.ID)
		// Someone else adds Cleo meanwhile: the panel redraws, and Ana's choice of Ben stays.
		var chans struct{ Channels []persist.Channel }
		e.api(t, ana, "GET", "/api/workspaces/"+ws.ID+"/channels", nil, &chans)
		hiring := slices.IndexFunc(chans.Channels, func(c persist.Channel) bool { return c.Name == "hiring" })
		e.api(t, ana, "POST", "/api/channels/"+chans.Channels[hiring].ID+"/members", map[string]string{"user_id": cleo.user.ID}, nil)
		waitFor(t, aTab, "Cleo listed", listed("Ana Lima,Cleo Park"))
		clickWhen(t, aTab, "Add", `document.querySelector('form[aria-label="Add to the channel"] button[type=submit]')`)
		waitFor(t, aTab, "Ben listed", listed("Ana Lima,Ben Okafor,Cleo Park"))
		shot(t, aTab, "private-channel-members")
		waitFor(t, bTab, "hiring on Ben's open page", sidebarChannel("hiring")+`?.querySelector('.sigil')?.title === 'Private channel'`)
		clickWhen(t, bTab, "hiring", sidebarChannel("hiring"))
		waitFor(t, bTab, "the channel's history", hasBody("Shortlist for the design role"))
	})

	t.Run("RemovedLosesItLive", func(t *testing.T) {
		clickWhen(t, aTab, "Remove Ben", `document.querySelector('.channel-members button[aria-label="Remove Ben Okafor"]')`)
		waitFor(t, aTab, "Ben gone from the list", listed("Ana Lima,Cleo Park"))
		waitFor(t, bTab, "hiring gone from Ben's sidebar", sidebarChannel("hiring")+` === undefined`)
		waitFor(t, bTab, "Ben moved off it", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		send(t, aTab, "form.composer .compose-box", "Offer goes out Monday")
		waitFor(t, aTab, "Ana's message", hasBody("Offer goes out Monday"))
		if eval[bool](t, bTab, `document.body.textContent.includes('Offer goes out Monday')`) {
			t.Fatal("a removed member's page shows the channel's new message")
		}
	})

	t.Run("BrowseAndLeave", func(t *testing.T) {
		openMenu(t, aTab, "Browse channels")
		waitFor(t, aTab, "both channels listed, the private one locked",
			`[...document.querySelectorAll('.browse-list li')].map(li => li.querySelector('.author').textContent + ':' + li.querySelector('.sigil').title).join() === 'general:Public channel,hiring:Private channel'`)
		clickWhen(t, aTab, "the members button", `document.querySelector('.conv-header button[aria-label="Channel members"]')`)
		clickWhen(t, aTab, "Leave", `document.querySelector('.channel-members button.leave')`)
		waitFor(t, aTab, "hiring gone from Ana's sidebar", sidebarChannel("hiring")+` === undefined`)
	})
}
