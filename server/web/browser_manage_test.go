package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist"
)

// TestBrowserManage drives the parts of the client from issue 16: channel settings, the bot
// command menu, live agent progress and keyboard navigation. Ana owns the workspace; Ben is a
// member, so the API refuses him what only an owner may do.
func TestBrowserManage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ben := e.person(t, "Ben Okafor")
	var ws struct{ Workspace persist.Workspace }
	e.api(t, ana, "POST", "/api/workspaces", map[string]string{"name": "Acme"}, &ws)
	wsID := ws.Workspace.ID
	e.addMember(t, wsID, ben.user.ID)
	var general struct{ Channel persist.Channel }
	e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/channels", map[string]string{"name": "general"}, &general)

	b := newBrowser(t, e)
	aTab := b.tab(t, ana)
	bTab := b.tab(t, ben)
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "the channel to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	}

	t.Run("ChannelSettings", func(t *testing.T) { channelSettings(t, aTab, bTab) })
}

// setField types value into the settings field called name, replacing what was there.
func setField(t *testing.T, tab context.Context, name, value string) {
	t.Helper()
	eval[bool](t, tab, fmt.Sprintf(`(i => (i.value = %q, i.dispatchEvent(new Event('input')), true))(document.querySelector('.panel form.settings input[name=%s]'))`, value, name))
}

func placeLink(label string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.place')].find(a => a.querySelector('.label')?.textContent === %q)`, label)
}

func channelSettings(t *testing.T, aTab, bTab context.Context) {
	// Create, from the sidebar's + button.
	do(t, aTab, "new channel", chromedp.Click(`.sidebar button[aria-label="New channel"]`))
	do(t, aTab, "name it", chromedp.SendKeys(`input.new-channel`, "launch-plans"), enter())
	waitFor(t, aTab, "the new channel open", `document.querySelector('.conv-header h1')?.textContent === 'launch-plans'`)
	waitFor(t, bTab, "the new channel in Ben's sidebar", placeLink("launch-plans"))

	// Rename, set the topic and a section; Ben sees each live.
	do(t, aTab, "open the settings", chromedp.Click(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, aTab, "the settings form", `document.querySelector('.panel:not([hidden]) form.settings')`)
	setField(t, aTab, "name", "launch")
	setField(t, aTab, "display_title", "Friday's launch, step by step")
	setField(t, aTab, "sidebar_section", "Projects")
	do(t, aTab, "save", chromedp.Click(`.panel form.settings button[type=submit]`))
	waitFor(t, aTab, "saved", `document.querySelector('.panel [role=status]')?.textContent === 'Saved.'`)
	waitFor(t, aTab, "the new name in the header", `document.querySelector('.conv-header h1')?.textContent === 'launch'`)
	waitFor(t, aTab, "the topic in the header", `document.querySelector('.conv-header .topic')?.textContent === "Friday's launch, step by step"`)
	waitFor(t, bTab, "the topic in Ben's sidebar", placeLink("Friday's launch, step by step"))
	waitFor(t, bTab, "the section in Ben's sidebar", `[...document.querySelectorAll('.group')].some(g => g.querySelector('.group-head span')?.textContent === 'Projects'
		&& g.textContent.includes("Friday's launch"))`)
	shot(t, aTab, "channel-settings")

	// Ben is a member, not the owner: the API refuses and the client says why, changing nothing.
	eval[bool](t, bTab, placeLink("Friday's launch, step by step")+`.click() ?? true`)
	waitFor(t, bTab, "the channel on Ben's page", `document.querySelector('.conv-header h1')?.textContent === 'launch'`)
	do(t, bTab, "open the settings", chromedp.Click(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, bTab, "the settings form", `document.querySelector('.panel:not([hidden]) form.settings')`)
	setField(t, bTab, "name", "bens-launch")
	do(t, bTab, "save", chromedp.Click(`.panel form.settings button[type=submit]`))
	waitFor(t, bTab, "the refusal", `document.querySelector('.panel [role=alert]:not([hidden])')?.textContent === 'workspace owner permission required'`)
	do(t, bTab, "archive", chromedp.Click(`.panel form.settings button.archive`))
	waitFor(t, bTab, "the refusal again", `document.querySelector('.panel [role=alert]:not([hidden])')?.textContent === 'workspace owner permission required'`)
	if got := eval[string](t, aTab, `document.querySelector('.conv-header h1').textContent`); got != "launch" {
		t.Fatalf("after Ben's refused rename Ana sees %q", got)
	}
	// Esc closes the panel.
	do(t, bTab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, bTab, "the panel closed", `document.querySelector('.panel').hidden`)

	// Archive: gone from Ben's sidebar, tagged on Ana's header; unarchive brings it back.
	do(t, aTab, "archive", chromedp.Click(`.panel form.settings button.archive`))
	waitFor(t, aTab, "archived", `document.querySelector('.panel [role=status]')?.textContent === 'Archived.'`)
	waitFor(t, aTab, "the archived tag", `document.querySelector('.conv-header .tag')?.textContent === 'archived'`)
	waitFor(t, bTab, "the channel gone from Ben's sidebar", `!`+placeLink("Friday's launch, step by step"))
	do(t, aTab, "unarchive", chromedp.Click(`.panel form.settings button.archive`))
	waitFor(t, aTab, "unarchived", `document.querySelector('.panel [role=status]')?.textContent === 'Unarchived.'`)
	waitFor(t, bTab, "the channel back in Ben's sidebar", placeLink("Friday's launch, step by step"))
	waitFor(t, aTab, "no archived tag", `!document.querySelector('.conv-header .tag')`)
	do(t, aTab, "close the panel", chromedp.Click(`.panel-head button[aria-label="Close panel"]`))
}
