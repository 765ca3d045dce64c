package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist/persisttest"
)

// menuItems is what the command menu lists, one "command args" line per entry.
const menuItems = `[...document.querySelectorAll('.cmd-menu:not([hidden]) li.cmd')].map(li => li.querySelector('.cmd-name').textContent + ' ' + (li.querySelector('.cmd-args')?.textContent || ''))`

func commandMenu(t *testing.T, tab context.Context) {
	box := "form.composer .compose-box"
	do(t, tab, "type a slash", mouseClick(box), chromedp.SendKeys(box, "/"))
	waitFor(t, tab, "every bot's commands", menuItems+`.join('|') === '/deploy <branch> [env]|/rollback |/standup '`)
	if got := eval[string](t, tab, `document.querySelector('.cmd-menu li.cmd .cmd-bot').textContent`); got == "" {
		t.Fatal("a menu entry does not name its bot")
	}
	// A bot's words are text: its description's markup stays markup-as-text.
	if got := eval[string](t, tab, `[...document.querySelectorAll('.cmd-menu .cmd-desc')].pop().textContent`); got != "Start today's standup <img src=x onerror=alert(1)>" {
		t.Fatalf("the standup description reads %q", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('.cmd-menu img:not(.avatar)').length`); n != 0 {
		t.Fatalf("a bot's description produced %d img elements", n)
	}
	shot(t, tab, "command-menu")
	// Filtered as the command is typed.
	do(t, tab, "type r", chromedp.SendKeys(box, "r"))
	waitFor(t, tab, "only rollback", menuItems+`.join('|') === '/rollback '`)
	do(t, tab, "erase", chromedp.KeyEvent(kb.Backspace))
	waitFor(t, tab, "all three again", menuItems+`.length === 3`)
	// ↓ twice then ↑ once selects the second; Enter puts it in the composer instead of sending.
	do(t, tab, "move", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowUp))
	waitFor(t, tab, "rollback selected", `document.querySelector('.cmd-menu li.sel .cmd-name')?.textContent === '/rollback'`)
	do(t, tab, "take it", enter())
	waitFor(t, tab, "the command in the composer", `document.querySelector('`+box+`').value === '/rollback '`)
	waitFor(t, tab, "the menu closed", `document.querySelector('.cmd-menu').hidden`)
	if eval[bool](t, tab, `[...document.querySelectorAll('.list .msg .body')].some(b => b.textContent.startsWith('/'))`) {
		t.Fatal("Enter in the menu sent a message")
	}
	// Esc closes the menu and keeps the text; the panel-closing Esc does not fire.
	eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input')), true))(document.querySelector('`+box+`'))`)
	do(t, tab, "type /s", chromedp.SendKeys(box, "/s"))
	waitFor(t, tab, "standup offered", menuItems+`.join('|') === '/standup '`)
	do(t, tab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, tab, "the menu closed", `document.querySelector('.cmd-menu').hidden && document.querySelector('`+box+`').value === '/s'`)
	eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input')), true))(document.querySelector('`+box+`'))`)
}

// TestBrowserManage drives the parts of the client from issue 16: channel settings, the bot
// command menu, live agent progress and keyboard navigation. Ana owns the workspace; Ben is a
// member, so the API refuses him what only an owner may do.
func TestBrowserManage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ben := e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	e.addMember(t, wsID, ben.user.ID)
	general := e.channel(t, ana, wsID, "general")

	b := newBrowser(t, e)
	aTab := b.tab(t, ana)
	bTab := b.tab(t, ben)
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "the channel to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	}

	t.Run("ChannelSettings", func(t *testing.T) { channelSettings(t, aTab, bTab) })
	t.Run("DraftSurvivesEvents", func(t *testing.T) { draftSurvivesEvents(t, e, ana, wsID, general.ID, aTab) })

	// Two bots, each with its own menu; the deploy bot also reports progress.
	scopes := []string{"messages:read", "messages:write", "commands:write", "agent_activity:write", "realtime:read"}
	deployUser, deployTok := persisttest.Bot(t, e.store, ana.user, wsID, &persisttest.BotOpts{Handle: new("deployer"), Scopes: scopes})
	_, standupTok := persisttest.Bot(t, e.store, ana.user, wsID, &persisttest.BotOpts{Handle: new("standup"), Scopes: scopes})
	deployer := person{user: deployUser, token: deployTok.Token}
	e.api(t, deployer, "PUT", "/api/bots/self/commands", map[string]any{"commands": []map[string]string{
		{"command": "deploy", "description": "Deploy a branch", "args_hint": "<branch> [env]"},
		{"command": "rollback", "description": "Roll back the last deploy"}}}, nil)
	e.api(t, person{token: standupTok.Token}, "PUT", "/api/bots/self/commands", map[string]any{"commands": []map[string]string{
		{"command": "standup", "description": "Start today's standup <img src=x onerror=alert(1)>"}}}, nil)

	t.Run("CommandMenu", func(t *testing.T) { commandMenu(t, bTab) })
	t.Run("AgentProgress", func(t *testing.T) { agentProgress(t, e, deployer, wsID, general.ID, bTab) })
	t.Run("KeyboardAndRoles", func(t *testing.T) { keyboardAndRoles(t, bTab) })
}

// keyboardAndRoles: Alt+↓/↑ move between channels in sidebar order, Esc closes a panel, focus
// from the keyboard is visible, and the message list and the panel carry their ARIA roles.
func keyboardAndRoles(t *testing.T, tab context.Context) {
	title := `document.querySelector('.conv-header h1')?.textContent`
	alt := chromedp.KeyModifiers(chromedp.ModifierAlt)
	do(t, tab, "focus the message list", chromedp.Focus(".list"))
	do(t, tab, "Alt+↓", chromedp.KeyEvent(kb.ArrowDown, alt))
	waitFor(t, tab, "the next channel", title+` === 'launch'`)
	do(t, tab, "Alt+↑", chromedp.KeyEvent(kb.ArrowUp, alt))
	waitFor(t, tab, "back to general", title+` === 'general'`)
	// Alt+↑ from the first place wraps round to the last.
	do(t, tab, "Alt+↑", chromedp.KeyEvent(kb.ArrowUp, alt))
	waitFor(t, tab, "the last channel", title+` === 'launch'`)
	do(t, tab, "Alt+↓", chromedp.KeyEvent(kb.ArrowDown, alt))
	waitFor(t, tab, "general again", title+` === 'general'`)

	if got := eval[string](t, tab, `document.querySelector('.list').getAttribute('role')`); got != "log" {
		t.Fatalf("the message list has role %q, want log", got)
	}
	do(t, tab, "open the settings", mouseClick(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, tab, "a dialog named by its title", `(d => d && d.getAttribute('role') === 'dialog'
		&& document.getElementById(d.getAttribute('aria-labelledby'))?.textContent === 'Channel settings')(document.querySelector('.panel:not([hidden])'))`)
	waitFor(t, tab, "focus in the dialog's first field", `document.activeElement?.name === 'name' && document.activeElement.closest('.panel')`)
	do(t, tab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)

	// The personal menu opens from the keyboard on its first entry, ↓ moves, Enter chooses,
	// Esc closes it and gives the focus back to its button.
	do(t, tab, "focus the personal menu", chromedp.Focus(`.me button[aria-label="Your menu"]`))
	do(t, tab, "press ↓", chromedp.KeyEvent(kb.ArrowDown))
	waitFor(t, tab, "the menu open on its first entry", `document.activeElement?.getAttribute('role') === 'menuitem'
		&& document.activeElement.closest('[role=menu]') === document.activeElement.closest('.me').querySelector('[role=menu]')
		&& document.querySelector('.me button[aria-label="Your menu"]').getAttribute('aria-expanded') === 'true'`)
	do(t, tab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, tab, "the menu closed, focus on its button", `document.querySelector('.me [role=menu]').hidden
		&& document.activeElement?.getAttribute('aria-label') === 'Your menu'`)
	do(t, tab, "open it again", chromedp.KeyEvent(kb.ArrowDown))
	waitFor(t, tab, "an entry focused", `document.activeElement?.getAttribute('role') === 'menuitem'`)
	for i := 0; i < 10 && !eval[bool](t, tab, `document.activeElement?.textContent === 'Keyboard shortcuts'`); i++ {
		do(t, tab, "press ↓", chromedp.KeyEvent(kb.ArrowDown))
	}
	do(t, tab, "choose it", chromedp.KeyEvent(kb.Enter))
	waitFor(t, tab, "the shortcuts panel", `document.getElementById('panel-title')?.textContent === 'Keyboard shortcuts'
		&& !document.querySelector('.panel').hidden && document.querySelector('.panel dl.keys')`)
	do(t, tab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)

	// Tab from the composer reaches the emoji picker's button, then the send button, which
	// shows a focus ring.
	do(t, tab, "focus the composer", chromedp.Focus("form.composer .compose-box"))
	do(t, tab, "press Tab", chromedp.KeyEvent(kb.Tab))
	waitFor(t, tab, "the emoji button focused", `document.activeElement?.getAttribute('aria-label') === 'Emoji'`)
	do(t, tab, "press Tab", chromedp.KeyEvent(kb.Tab))
	waitFor(t, tab, "the send button focused", `document.activeElement?.getAttribute('aria-label') === 'Send'`)
	if got := eval[string](t, tab, `(s => s.outlineStyle + ' ' + s.outlineWidth)(getComputedStyle(document.activeElement))`); got == "none 0px" || got[:4] == "none" {
		t.Fatalf("the focused send button shows no outline (%s)", got)
	}
}

// agentProgress: the bot's progress shows live at the bottom of the channel as a block the
// reader can collapse, named after the bot whatever user_id the bot claims, and goes when the
// bot ends it.
func agentProgress(t *testing.T, e *env, bot person, wsID, chID string, tab context.Context) {
	eval[bool](t, tab, placeLink("general")+`.click() ?? true`)
	waitFor(t, tab, "general", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	e.post(t, bot, chID, "Deploying main to staging")
	waitFor(t, tab, "the bot's message", hasBody("Deploying main to staging"))
	progress := func(op, text string) {
		e.api(t, bot, "POST", "/api/realtime/ephemeral", map[string]any{"workspace_id": wsID, "channel_id": chID, "type": "agent.progress",
			"payload": map[string]any{"turn_id": "t1", "op": op, "text": text, "user_id": "usr_forged"}}, nil)
	}
	block := `document.querySelector('.agents:not([hidden]) details.agent-block')`
	progress("append", "Building the image")
	waitFor(t, tab, "the progress block", block+`?.querySelector('summary .progress-last')?.textContent === 'Building the image'`)
	if got := eval[string](t, tab, block+`.dataset.bot`); got != bot.user.ID {
		t.Fatalf("the block is keyed by %q, want the bot %q (the server sets user_id)", got, bot.user.ID)
	}
	if got := eval[string](t, tab, block+`.querySelector('summary strong').textContent`); got != bot.user.DisplayName {
		t.Fatalf("the block is named %q, want %q", got, bot.user.DisplayName)
	}
	progress("append", "Running 412 tests")
	waitFor(t, tab, "both lines", `[...`+block+`.querySelectorAll('.progress-lines li')].map(l => l.textContent).join('|') === 'Building the image|Running 412 tests'`)
	shot(t, tab, "agent-progress")
	// Collapsed by the reader, it stays collapsed through the next update.
	do(t, tab, "collapse", mouseClick(`.agents details.agent-block summary`))
	waitFor(t, tab, "collapsed", `!`+block+`.open`)
	progress("append", "Rolling out")
	waitFor(t, tab, "the newest line in the summary", block+`.querySelector('.progress-last').textContent === 'Rolling out'`)
	if eval[bool](t, tab, block+`.open`) {
		t.Fatal("an update reopened the collapsed block")
	}
	progress("end", "")
	waitFor(t, tab, "the block gone", `document.querySelector('.agents').hidden && !document.querySelector('.agents details')`)
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
	do(t, aTab, "new channel", mouseClick(`.sidebar button[aria-label="New channel"]`))
	do(t, aTab, "name it", chromedp.SendKeys(`input.new-channel`, "launch-plans"), enter())
	waitFor(t, aTab, "the new channel open", `document.querySelector('.conv-header h1')?.textContent === 'launch-plans'`)
	waitFor(t, bTab, "the new channel in Ben's sidebar", placeLink("launch-plans"))

	// Rename, set the topic and a section; Ben sees each live.
	do(t, aTab, "open the settings", mouseClick(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, aTab, "the settings form", `document.querySelector('.panel:not([hidden]) form.settings')`)
	setField(t, aTab, "name", "launch")
	setField(t, aTab, "display_title", "Friday's launch, step by step")
	setField(t, aTab, "sidebar_section", "Projects")
	do(t, aTab, "save", mouseClick(`.panel form.settings button[type=submit]`))
	waitFor(t, aTab, "saved", `document.querySelector('.panel [role=status]')?.textContent === 'Saved.'`)
	waitFor(t, aTab, "the new name in the header", `document.querySelector('.conv-header h1')?.textContent === 'launch'`)
	waitFor(t, aTab, "the new name in the composer", `document.querySelector('form.composer .compose-box').placeholder === 'Message #launch'`)
	waitFor(t, aTab, "the topic in the header", `document.querySelector('.conv-header .topic')?.textContent === "Friday's launch, step by step"`)
	waitFor(t, bTab, "the display title beside the name in Ben's sidebar", placeLink("launch")+`?.title === "Friday's launch, step by step"`)
	waitFor(t, bTab, "the section in Ben's sidebar", `[...document.querySelectorAll('.group')].some(g => g.querySelector('.group-head span')?.textContent === 'Projects'
		&& g.querySelector('.place .label')?.textContent === 'launch')`)
	shot(t, aTab, "channel-settings")

	// Ben is a member, not the owner: the API refuses and the client says why, changing nothing.
	eval[bool](t, bTab, placeLink("launch")+`.click() ?? true`)
	waitFor(t, bTab, "the channel on Ben's page", `document.querySelector('.conv-header h1')?.textContent === 'launch'`)
	do(t, bTab, "open the settings", mouseClick(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, bTab, "the settings form", `document.querySelector('.panel:not([hidden]) form.settings')`)
	setField(t, bTab, "name", "bens-launch")
	do(t, bTab, "save", mouseClick(`.panel form.settings button[type=submit]`))
	waitFor(t, bTab, "the refusal", `document.querySelector('.panel [role=alert]:not([hidden])')?.textContent === 'workspace owner permission required'`)
	do(t, bTab, "archive", mouseClick(`.panel form.settings button.archive`))
	waitFor(t, bTab, "the refusal again", `document.querySelector('.panel [role=alert]:not([hidden])')?.textContent === 'workspace owner permission required'`)
	if got := eval[string](t, aTab, `document.querySelector('.conv-header h1').textContent`); got != "launch" {
		t.Fatalf("after Ben's refused rename Ana sees %q", got)
	}
	// Esc closes the panel.
	do(t, bTab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, bTab, "the panel closed", `document.querySelector('.panel').hidden`)

	// Archive: gone from Ben's sidebar, tagged on Ana's header; unarchive brings it back.
	do(t, aTab, "archive", mouseClick(`.panel form.settings button.archive`))
	waitFor(t, aTab, "archived", `document.querySelector('.panel [role=status]')?.textContent === 'Archived.'`)
	waitFor(t, aTab, "the archived tag", `document.querySelector('.conv-header .tag')?.textContent === 'archived'`)
	waitFor(t, bTab, "the channel gone from Ben's sidebar", `!`+placeLink("launch"))
	do(t, aTab, "unarchive", mouseClick(`.panel form.settings button.archive`))
	waitFor(t, aTab, "unarchived", `document.querySelector('.panel [role=status]')?.textContent === 'Unarchived.'`)
	waitFor(t, bTab, "the channel back in Ben's sidebar", placeLink("launch"))
	waitFor(t, aTab, "no archived tag", `!document.querySelector('.conv-header .tag')`)
	do(t, aTab, "close the panel", mouseClick(`.panel-head button[aria-label="Close panel"]`))
}

// draftSurvivesEvents: what the owner is typing in the settings form stays while events about
// other channels and new messages arrive and redraw the rest of the page.
func draftSurvivesEvents(t *testing.T, e *env, ana person, wsID, generalID string, tab context.Context) {
	eval[bool](t, tab, placeLink("general")+`.click() ?? true`)
	waitFor(t, tab, "general", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	do(t, tab, "open the settings", mouseClick(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, tab, "the settings form", `document.querySelector('.panel:not([hidden]) form.settings')`)
	setField(t, tab, "display_title", "half-typed topic")
	other := e.channel(t, ana, wsID, "side-room")
	e.api(t, ana, "PATCH", "/api/channels/"+other.ID, map[string]string{"display_title": "Side room"}, nil)
	e.post(t, ana, generalID, "a message while the form is open")
	waitFor(t, tab, "the other channel's change", placeLink("side-room")+`?.title === "Side room"`)
	waitFor(t, tab, "the message", hasBody("a message while the form is open"))
	if got := eval[string](t, tab, `document.querySelector('.panel form.settings input[name=display_title]').value`); got != "half-typed topic" {
		t.Fatalf("after other changes arrived the topic field reads %q", got)
	}
	do(t, tab, "press Esc", chromedp.KeyEvent(kb.Escape))
	waitFor(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)
	// Archived, the side room leaves the sidebar as the later steps expect it.
	e.api(t, ana, "PATCH", "/api/channels/"+other.ID, map[string]bool{"archived": true}, nil)
	waitFor(t, tab, "the side room gone", `!`+placeLink("side-room"))
}
