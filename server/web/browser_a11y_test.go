package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// key presses one key with modifiers.
func key(k string, mods ...chromedp.Modifier) chromedp.Action[chromedp.Void] {
	return chromedp.KeyEvent(k, chromedp.KeyModifiers(mods...))
}

const (
	header    = `document.querySelector('.conv-header h1')?.textContent`
	active    = `document.activeElement`
	dialog    = `document.querySelector('.qs-backdrop:not([hidden]) [role=dialog]')`
	qsOptions = `[...document.querySelectorAll('.qs-list [role=option]')].map(o => o.dataset.kind + ':' + o.querySelector('.qs-label')?.textContent)`
	composer  = `document.querySelector('form.composer .compose-box')`
)

// waitKeys is waitFor that, failing, also says where the focus is and how the list is scrolled.
func waitKeys(t *testing.T, tab context.Context, what, expr string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(tab, waitLimit)
	defer cancel()
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		seen, _ := chromedp.Run(tab, chromedp.Evaluate[string](`JSON.stringify({focus: document.activeElement?.outerHTML.slice(0, 300),
			list: (l => [l.scrollTop, l.scrollHeight, l.clientHeight, [...l.querySelectorAll('.spacer')].map(s => s.style.height)])(document.querySelector('.list')),
			rows: [...document.querySelectorAll('.list .msg')].map(m => m.tabIndex + ' ' + m.textContent)})`))
		t.Fatalf("waiting for %s: %v\n%s", what, err, seen)
	}
}

const hostileName = `Dee <img src=x onerror="document.title='owned'">`

// noMarkup fails when an element the page made from a person's name exists under sel, or ran.
func noMarkup(t *testing.T, tab context.Context, sel string) {
	t.Helper()
	if n := eval[int](t, tab, `document.querySelectorAll('`+sel+` img:not(.avatar)').length`); n != 0 {
		t.Fatalf("a display name made %d img elements under %s", n, sel)
	}
	if eval[string](t, tab, `document.title`) == "owned" {
		t.Fatal("a display name ran as script")
	}
}

// msgWith is the list's message row whose body is text.
func msgWith(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent === %q)`, text)
}

// TestBrowserKeyboardA11y drives the client by keyboard alone — the quick switcher, the message
// list, unread navigation, the shortcuts list — and runs axe-core over the main views in the
// light and dark themes; last, the server comes back with a new bundle version and the page
// offers a reload.
//
// It does not run in parallel with the other browser tests: its fourteen axe-core passes are
// the heaviest work of the package, and beside them the others' 30-second steps time out on a
// loaded two-core machine.
func TestBrowserKeyboardA11y(t *testing.T) {
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	// Ben has a handle, so he can be mentioned (@ completes handles).
	benUser := persisttest.User(t, e.store, &persisttest.UserOpts{DisplayName: new("Ben Okafor"), Handle: new("ben_okafor")})
	ben := person{user: benUser, token: persisttest.Session(t, e.store, benUser.ID)}
	cara := e.person(t, "Cara Diaz")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	e.addMember(t, wsID, ben.user.ID)
	e.addMember(t, wsID, cara.user.ID)
	// A display name that is markup stays text in the switcher and the completion list.
	dee := persisttest.User(t, e.store, &persisttest.UserOpts{DisplayName: new(hostileName), Handle: new("dee")})
	e.addMember(t, wsID, dee.ID)
	chans := map[string]string{}
	for _, name := range []string{"general", "design", "random"} {
		var c struct{ Channel persist.Channel }
		e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/channels", map[string]string{"name": name}, &c)
		chans[name] = c.Channel.ID
	}
	e.api(t, ana, "POST", "/api/dms", map[string]any{"workspace_id": wsID, "member_ids": []string{ben.user.ID}}, nil)
	e.post(t, ana, chans["general"], "Good morning")
	var q struct{ Message persist.Message }
	e.api(t, ben, "POST", "/api/channels/"+chans["general"]+"/messages", map[string]string{"body": "Deploy at noon?"}, &q)
	e.api(t, ana, "POST", "/api/messages/"+q.Message.ID+"/thread/replies", map[string]string{"body": "After the review"}, nil)
	e.post(t, ana, chans["general"], "The review is at eleven")

	b := newBrowser(t, e)
	t.Run("SignInView", func(t *testing.T) {
		tab := b.tab(t, person{})
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "the sign-in view", `document.querySelector('.signin-card')`)
		checkA11y(t, tab, "sign-in")
	})

	tab := b.tab(t, ana)
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "general", header+` === 'general'`)
	waitFor(t, tab, "the messages", hasBody("The review is at eleven"))
	waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	checkA11y(t, tab, "channel")

	t.Run("QuickSwitcher", func(t *testing.T) { quickSwitcher(t, tab) })
	t.Run("MessageKeys", func(t *testing.T) { messageKeys(t, tab) })
	t.Run("Panels", func(t *testing.T) { panelsA11y(t, tab) })
	t.Run("NextUnread", func(t *testing.T) { nextUnread(t, e, ben, chans, tab) })
	t.Run("ShortcutsList", func(t *testing.T) { shortcutsList(t, tab) })
	t.Run("Completion", func(t *testing.T) { completion(t, tab) })
	t.Run("NewVersion", func(t *testing.T) { newVersion(t, e, tab) })
}

// quickSwitcher: Ctrl+K opens a modal dialog with the keyboard in its box and the page behind it
// inert; a loose match finds a channel, a conversation or a person; Enter goes there (a person
// gets a new conversation); Esc closes it and gives the focus back.
func quickSwitcher(t *testing.T, tab context.Context) {
	ctrlK := key("k", chromedp.ModifierCtrl)
	do(t, tab, "focus the composer", chromedp.Focus("form.composer .compose-box"))
	do(t, tab, "Ctrl+K", ctrlK)
	waitFor(t, tab, "a modal dialog named Jump to", `(d => d && d.getAttribute('aria-modal') === 'true'
		&& document.getElementById(d.getAttribute('aria-labelledby'))?.textContent === 'Jump to')(`+dialog+`)`)
	waitFor(t, tab, "the keyboard in its box", active+`.classList.contains('qs-input') && `+active+`.getAttribute('role') === 'combobox'`)
	if !eval[bool](t, tab, `document.querySelector('.shell').closest('[inert]') !== null`) {
		t.Fatal("the page behind the dialog is not inert")
	}
	// Tab and Shift+Tab stay in the dialog.
	do(t, tab, "Tab", key(kb.Tab))
	do(t, tab, "Shift+Tab", key(kb.Tab, chromedp.ModifierShift))
	waitFor(t, tab, "the focus still in the dialog", active+`.closest('[role=dialog]') === `+dialog)

	// "dsn" is no substring of anything, but its letters are in order in "design".
	do(t, tab, "type dsn", chromedp.SendKeys(".qs-input", "dsn"))
	waitFor(t, tab, "design first", qsOptions+`[0] === 'channel:design'`)
	if got := eval[string](t, tab, `document.querySelector('.qs-input').getAttribute('aria-activedescendant')`); got != eval[string](t, tab, `document.querySelector('.qs-item.sel').id`) || got == "" {
		t.Fatalf("aria-activedescendant %q is not the selected option", got)
	}
	do(t, tab, "Enter", enter())
	waitFor(t, tab, "design open", header+` === 'design'`)
	waitFor(t, tab, "the switcher closed, the page live again", `document.querySelector('.qs-backdrop').hidden && !document.querySelector('.shell').closest('[inert]')`)
	waitFor(t, tab, "the keyboard in the composer", active+` === `+composer)

	// Esc closes it and the focus goes back where it was.
	do(t, tab, "focus the header search", chromedp.Focus(".conv-header input.search"))
	do(t, tab, "Ctrl+K", ctrlK)
	waitFor(t, tab, "the dialog", dialog)
	do(t, tab, "Esc", key(kb.Escape))
	waitFor(t, tab, "closed, focus back on the search box", `document.querySelector('.qs-backdrop').hidden && `+active+`.matches('.conv-header input.search')`)
	if eval[string](t, tab, header) != "design" {
		t.Fatal("Esc in the switcher changed the channel")
	}

	// Ben has a conversation with Ana: he shows as that conversation, not again as a person.
	do(t, tab, "Ctrl+K", ctrlK)
	waitFor(t, tab, "channels, conversations and people", qsOptions+`.join('|') === 'channel:design|channel:general|channel:random|dm:Ben Okafor|person:Cara Diaz|person:'+`+fmt.Sprintf("%q", hostileName))
	shot(t, tab, "quick-switcher")
	do(t, tab, "type ben", chromedp.SendKeys(".qs-input", "ben"))
	waitFor(t, tab, "the conversation with Ben", qsOptions+`[0] === 'dm:Ben Okafor'`)
	if eval[bool](t, tab, qsOptions+`.includes('person:Ben Okafor')`) {
		t.Fatal("Ben is listed twice")
	}
	// Cara has none yet: she is a person; ↓/↑ move the selection.
	eval[bool](t, tab, `(i => (i.value = '', i.dispatchEvent(new Event('input')), true))(document.querySelector('.qs-input'))`)
	do(t, tab, "type ca", chromedp.SendKeys(".qs-input", "ca"))
	waitFor(t, tab, "Cara the person", qsOptions+`.includes('person:Cara Diaz')`)
	checkA11y(t, tab, "quick switcher")
	eval[bool](t, tab, `(i => (i.value = '', i.dispatchEvent(new Event('input')), true))(document.querySelector('.qs-input'))`)
	do(t, tab, "type dee", chromedp.SendKeys(".qs-input", "dee"))
	waitFor(t, tab, "Dee's name as text", qsOptions+`[0] === 'person:'+`+fmt.Sprintf("%q", hostileName))
	noMarkup(t, tab, ".qs-list")
	eval[bool](t, tab, `(i => (i.value = '', i.dispatchEvent(new Event('input')), true))(document.querySelector('.qs-input'))`)
	do(t, tab, "type ca", chromedp.SendKeys(".qs-input", "ca"))
	waitFor(t, tab, "Cara the person", qsOptions+`.includes('person:Cara Diaz')`)
	n := eval[int](t, tab, qsOptions+`.indexOf('person:Cara Diaz')`)
	for range n {
		do(t, tab, "↓", key(kb.ArrowDown))
	}
	do(t, tab, "↓ then ↑", key(kb.ArrowDown), key(kb.ArrowUp))
	waitFor(t, tab, "Cara selected", `document.querySelector('.qs-item.sel')?.dataset.kind === 'person' && document.querySelector('.qs-item.sel .qs-label').textContent === 'Cara Diaz'`)
	do(t, tab, "Enter", enter())
	waitFor(t, tab, "a conversation with Cara", header+` === 'Cara Diaz' && document.querySelector('.conv-header .topic')?.textContent === 'Direct message'`)
	waitFor(t, tab, "it in the sidebar", placeLink("Cara Diaz"))
	waitFor(t, tab, "the keyboard in the composer", active+` === `+composer)
	eval[bool](t, tab, placeLink("general")+`.click() ?? true`)
	waitFor(t, tab, "general", header+` === 'general'`)
}

// messageKeys: the list is one Tab stop; ↑/↓/Home/End move between messages, each an article
// named by its author and time; r opens the thread; e edits one's own message only; Esc goes back
// to the composer without closing the panel.
func messageKeys(t *testing.T, tab context.Context) {
	if got := eval[string](t, tab, `document.querySelector('.list').getAttribute('role')`); got != "log" {
		t.Fatalf("the message list has role %q, want log", got)
	}
	waitKeys(t, tab, "the rows", msgWith("The review is at eleven"))
	labels := eval[[]string](t, tab, `[...document.querySelectorAll('.list .msg')].map(m => m.getAttribute('role') + ' ' + m.getAttribute('aria-label'))`)
	for i, want := range []string{"Ana Lima", "Ben Okafor", "Ana Lima"} {
		if !strings.HasPrefix(labels[i], "article "+want+", ") || len(labels[i]) <= len("article "+want+", ") {
			t.Fatalf("message %d is %q, want an article labelled %q and its time", i, labels[i], want)
		}
	}
	tabStops := `[...document.querySelectorAll('.list .msg')].filter(m => m.tabIndex === 0).map(m => m.querySelector('.body').textContent)`
	// Other messages' own controls (toolbar, thread summary, links) are out of the Tab order too.
	others := `[...document.querySelectorAll('.list .msg')].filter(m => m.tabIndex !== 0).flatMap(m => [...m.querySelectorAll('button, a[href]')]).filter(b => b.tabIndex >= 0).length`
	waitKeys(t, tab, "the newest message the list's one Tab stop", tabStops+`.join('|') === 'The review is at eleven' && `+others+` === 0`)

	// From the composer, back through the paperclip and the newest message's author (a name
	// opens the profile card from the keyboard), onto the newest message.
	do(t, tab, "focus the composer", chromedp.Focus("form.composer .compose-box"))
	do(t, tab, "Shift+Tab twice", key(kb.Tab, chromedp.ModifierShift), key(kb.Tab, chromedp.ModifierShift))
	waitKeys(t, tab, "the newest message's author focused", active+`.classList.contains('author') && `+active+`.closest('.msg') === `+msgWith("The review is at eleven"))
	do(t, tab, "Shift+Tab", key(kb.Tab, chromedp.ModifierShift))
	waitKeys(t, tab, "the newest message focused", active+` === `+msgWith("The review is at eleven"))
	if got := eval[string](t, tab, `(s => s.outlineStyle)(getComputedStyle(`+active+`))`); got == "none" {
		t.Fatal("the focused message shows no outline")
	}
	do(t, tab, "↑", key(kb.ArrowUp))
	waitKeys(t, tab, "Ben's message focused and the Tab stop", active+` === `+msgWith("Deploy at noon?")+` && `+tabStops+`.join('|') === 'Deploy at noon?'`)
	do(t, tab, "Home", key(kb.Home))
	waitKeys(t, tab, "the first message", active+` === `+msgWith("Good morning"))
	do(t, tab, "End", key(kb.End))
	waitKeys(t, tab, "the last message", active+` === `+msgWith("The review is at eleven"))
	do(t, tab, "↑", key(kb.ArrowUp))
	waitKeys(t, tab, "Ben's message", active+` === `+msgWith("Deploy at noon?"))

	// e on someone else's message does nothing.
	do(t, tab, "e", key("e"))
	if eval[bool](t, tab, `!!document.querySelector('.list .edit-box')`) {
		t.Fatal("e opened an editor on Ben's message")
	}
	// r opens the thread.
	do(t, tab, "r", key("r"))
	waitKeys(t, tab, "the thread panel with the reply", `document.getElementById('panel-title')?.textContent === 'Thread'
		&& [...document.querySelectorAll('.thread-list .msg .body')].some(b => b.textContent === 'After the review')`)
	checkA11y(t, tab, "thread panel")
	shot(t, tab, "keyboard-thread")

	// Esc on a message goes to the composer; the panel stays.
	eval[bool](t, tab, msgWith("Good morning")+`.focus() ?? true`)
	do(t, tab, "Esc", key(kb.Escape))
	waitKeys(t, tab, "the composer focused", active+` === `+composer)
	if eval[bool](t, tab, `document.querySelector('.panel').hidden`) {
		t.Fatal("Esc on a message closed the panel")
	}
	do(t, tab, "Esc in the composer", key(kb.Escape))
	waitKeys(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)

	// The list's Tab stop is the message last focused.
	waitKeys(t, tab, "Good morning is the Tab stop", tabStops+`.join('|') === 'Good morning'`)
	// e on one's own message edits it; Esc cancels.
	eval[bool](t, tab, msgWith("Good morning")+`.focus() ?? true`)
	do(t, tab, "e", key("e"))
	waitKeys(t, tab, "the editor, focused", active+`.classList.contains('edit-box') && `+active+`.value === 'Good morning'`)
	do(t, tab, "Esc", key(kb.Escape))
	waitKeys(t, tab, "no editor", `!document.querySelector('.list .edit-box')`)
	// Enter on the list itself enters it at its Tab stop.
	do(t, tab, "focus the list", chromedp.Focus(".list"))
	do(t, tab, "↓", key(kb.ArrowDown))
	waitKeys(t, tab, "the Tab stop focused", active+` === `+msgWith("Good morning"))
}

// panelsA11y runs the check over the side panels: search, people and channel settings.
func panelsA11y(t *testing.T, tab context.Context) {
	do(t, tab, "search", chromedp.Focus(".conv-header input.search"), chromedp.SendKeys(".conv-header input.search", "review"), enter())
	waitFor(t, tab, "the results", `document.querySelectorAll('.panel .results li').length === 2`)
	checkA11y(t, tab, "search panel")
	do(t, tab, "people", mouseClick(".conv-header .members-count"))
	waitFor(t, tab, "the directory", `document.querySelectorAll('.panel .people li.person').length === 4`)
	checkA11y(t, tab, "people panel")
	do(t, tab, "settings", mouseClick(`.conv-header button[aria-label="Channel settings"]`))
	waitFor(t, tab, "the settings", `document.querySelector('.panel:not([hidden]) form.settings')`)
	checkA11y(t, tab, "channel settings")
	do(t, tab, "Esc", key(kb.Escape))
	waitFor(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)
}

// nextUnread: Alt+Shift+↓/↑ go to the next/previous place with unread messages, skipping read ones.
func nextUnread(t *testing.T, e *env, ben person, chans map[string]string, tab context.Context) {
	waitFor(t, tab, "general", header+` === 'general'`)
	e.api(t, ben, "POST", "/api/channels/"+chans["random"]+"/messages", map[string]string{"body": "Lunch?"}, nil)
	waitFor(t, tab, "random unread", placeLink("random")+`?.classList.contains('unread')`)
	do(t, tab, "focus the composer", chromedp.Focus("form.composer .compose-box"))
	// design, read, lies between; Alt+Shift+↓ goes past general's neighbours to random.
	do(t, tab, "Alt+Shift+↓", key(kb.ArrowDown, chromedp.ModifierAlt, chromedp.ModifierShift))
	waitFor(t, tab, "random", header+` === 'random'`)
	// Read once its messages show (a place left before they arrive stays unread).
	waitFor(t, tab, "random's message", hasBody("Lunch?"))
	waitFor(t, tab, "random read", `!`+placeLink("random")+`?.classList.contains('unread')`)
	e.api(t, ben, "POST", "/api/channels/"+chans["design"]+"/messages", map[string]string{"body": "New mockups"}, nil)
	waitFor(t, tab, "design unread", placeLink("design")+`?.classList.contains('unread')`)
	do(t, tab, "Alt+Shift+↑", key(kb.ArrowUp, chromedp.ModifierAlt, chromedp.ModifierShift))
	waitFor(t, tab, "design", header+` === 'design'`)
	waitFor(t, tab, "design read", `!`+placeLink("design")+`?.classList.contains('unread')`)
	// Nothing else is unread: Alt+Shift+↓ stays.
	do(t, tab, "Alt+Shift+↓", key(kb.ArrowDown, chromedp.ModifierAlt, chromedp.ModifierShift))
	if got := eval[string](t, tab, header); got != "design" {
		t.Fatalf("with nothing unread Alt+Shift+↓ went to %q", got)
	}
	// Plain Alt+↓ goes to the next channel, read or not.
	do(t, tab, "Alt+↓", key(kb.ArrowDown, chromedp.ModifierAlt))
	waitFor(t, tab, "general", header+` === 'general'`)
}

// shortcutsList: ? lists what this test exercised.
func shortcutsList(t *testing.T, tab context.Context) {
	do(t, tab, "focus the list", chromedp.Focus(".list"))
	do(t, tab, "?", chromedp.KeyEvent("?"))
	waitFor(t, tab, "the shortcuts", `document.querySelector('.panel dl.keys')`)
	keys := eval[[]string](t, tab, `[...document.querySelectorAll('.panel dl.keys kbd')].map(k => k.textContent)`)
	for _, want := range []string{"Ctrl/⌘+K", "Alt+↑ / Alt+↓", "Alt+Shift+↑ / ↓", "Tab / Shift+Tab", "↑ / ↓", "Home / End", "Enter or R", "E", "Esc", "?"} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("the shortcuts list lacks %q (it has %q)", want, keys)
		}
	}
	do(t, tab, "Esc", key(kb.Escape))
	waitFor(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)
}

// newVersion: the server comes back with another bundle version; after reconnecting the page
// says a new version is available, and its Reload loads it.
func newVersion(t *testing.T, e *env, tab context.Context) {
	old := eval[string](t, tab, `document.querySelector('meta[name=natter-version]').content`)
	if eval[bool](t, tab, `!document.querySelector('.banner').hidden`) {
		t.Fatal("a banner shows before the version changed")
	}
	e.restart(t, func() { e.version = "2026.11.26-a11y-test" })
	waitFor(t, tab, "the new-version banner", `(b => !b.hidden && /new version/i.test(b.textContent) && b.querySelector('button')?.textContent === 'Reload')(document.querySelector('.banner'))`)
	shot(t, tab, "new-version")
	eval[bool](t, tab, `document.querySelector('.banner button').click() ?? true`)
	waitAcrossLoad(t, tab, "the new bundle", `document.querySelector('meta[name=natter-version]')?.content === '2026.11.26-a11y-test'`)
	waitFor(t, tab, "live again", `document.querySelector('.me .dot.online')`)
	if eval[bool](t, tab, `!document.querySelector('.banner').hidden`) {
		t.Fatal("the banner still shows after reloading the new version")
	}
	if old == "2026.11.26-a11y-test" {
		t.Fatal("the page started with the new version")
	}
}

// completion: @ offers people (by name or handle) and puts @handle in the text; : offers emoji by
// shortcode or name (the popular first: tada before tangerine); ↑/↓ move, Enter and Tab take one without sending, Esc closes the list and keeps the text.
func completion(t *testing.T, tab context.Context) {
	waitFor(t, tab, "general", header+` === 'general'`)
	box := "form.composer .compose-box"
	items := `[...document.querySelectorAll('.complete-menu [role=option]')].map(o => o.querySelector('.complete-label, .complete-emoji').textContent + ' ' + o.querySelector('.muted').textContent)`
	do(t, tab, "type Hi @be", chromedp.Focus(box), chromedp.SendKeys(box, "Hi @be"))
	waitFor(t, tab, "Ben offered", items+`.join('|') === 'Ben Okafor @ben_okafor'`)
	if got := eval[string](t, tab, composer+`.getAttribute('aria-activedescendant')`); got != "complete-0" {
		t.Fatalf("the composer's active descendant is %q, want the first option", got)
	}
	shot(t, tab, "completion")
	checkA11y(t, tab, "people completion")
	do(t, tab, "Enter", enter())
	waitFor(t, tab, "the handle in the text, the list closed", composer+`.value === 'Hi @ben_okafor ' && !document.querySelector('.complete-menu')`)
	do(t, tab, "type @de", chromedp.SendKeys(box, "@de"))
	waitFor(t, tab, "Dee's name as text", items+`.join('|') === `+fmt.Sprintf("%q", hostileName+" @dee"))
	noMarkup(t, tab, ".complete-menu")
	do(t, tab, "Esc", key(kb.Escape))
	eval[bool](t, tab, `(b => (b.value = 'Hi @ben_okafor ', b.dispatchEvent(new Event('input', {bubbles: true})), true))(`+composer+`)`)
	// By a word of the name as well: "oka" finds Ben Okafor.
	do(t, tab, "type @oka", chromedp.SendKeys(box, "and @oka"))
	waitFor(t, tab, "Ben by his surname", items+`.length === 1 && `+items+`[0].includes('Ben Okafor')`)
	do(t, tab, "Esc", key(kb.Escape))
	waitFor(t, tab, "the list closed, the text kept", `!document.querySelector('.complete-menu') && `+composer+`.value.endsWith('and @oka')`)
	eval[bool](t, tab, `(b => (b.value = 'Hi @ben_okafor ', b.dispatchEvent(new Event('input', {bubbles: true})), true))(`+composer+`)`)
	// : and two letters: emoji by name; ↓ moves, Tab takes.
	do(t, tab, "type :ta", chromedp.SendKeys(box, ":ta"))
	waitFor(t, tab, "tada offered", items+`[0] === '🎉 :tada:'`)
	do(t, tab, "type :thu", chromedp.KeyEvent(kb.Backspace), chromedp.KeyEvent(kb.Backspace), chromedp.SendKeys(box, "thumbs"))
	waitFor(t, tab, "thumbs up and down", items+`.join('|') === '👍 :+1:|👎 :-1:'`)
	do(t, tab, "↓ then Tab", key(kb.ArrowDown), key(kb.Tab))
	waitFor(t, tab, "the emoji in the text", composer+`.value === 'Hi @ben_okafor 👎 '`)
	sent := `[...document.querySelectorAll('.list .msg .body')].some(b => b.textContent.trim() === 'Hi @ben_okafor 👎')`
	if eval[bool](t, tab, sent) {
		t.Fatal("taking a completion sent the message")
	}
	do(t, tab, "send", enter())
	waitFor(t, tab, "sent with the mention and the emoji", sent)
}
