package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
)

// clickWhen finds what expr names and clicks it in one step, so a redraw in between cannot lose
// the click.
func clickWhen(t testing.TB, tab context.Context, what, expr string) {
	t.Helper()
	waitFor(t, tab, what+", pressed", `(b => b && !b.disabled && (b.click(), true))(`+expr+`)`)
}

// choose sets a select to value as a person picking from it does (a change event follows).
func choose(t *testing.T, tab context.Context, what, expr, value string) {
	t.Helper()
	waitFor(t, tab, what+" set to "+value, fmt.Sprintf(`(s => s && (s.value = %q, s.dispatchEvent(new Event('change')), true))(%s)`, value, expr))
}

// openMenu opens the workspace menu and chooses the entry labelled label.
func openMenu(t testing.TB, tab context.Context, label string) {
	t.Helper()
	clickWhen(t, tab, "the workspace menu", `document.querySelector('.ws-head button[aria-label="Workspace menu"]')`)
	clickWhen(t, tab, "the menu entry "+label, fmt.Sprintf(`[...document.querySelectorAll('.ws-head [role=menuitem]')].find(b => b.textContent === %q)`, label))
	waitFor(t, tab, "the panel "+label, `!document.querySelector('.panel').hidden`)
}

// menuHas says whether the workspace menu offers label (it is opened and closed to look).
func menuHas(t *testing.T, tab context.Context, label string) bool {
	t.Helper()
	clickWhen(t, tab, "the workspace menu", `document.querySelector('.ws-head button[aria-label="Workspace menu"]')`)
	waitFor(t, tab, "the menu open", `document.querySelector('.ws-head [role=menu]:not([hidden])')`)
	has := eval[bool](t, tab, fmt.Sprintf(`[...document.querySelectorAll('.ws-head [role=menuitem]')].some(b => b.textContent === %q)`, label))
	clickWhen(t, tab, "the workspace menu, to close it", `document.querySelector('.ws-head button[aria-label="Workspace menu"]')`)
	return has
}

// menuOffers is an expression true when the workspace menu offers label; it opens the menu to
// read it and closes it again, so it can be polled.
func menuOffers(label string) string {
	return fmt.Sprintf(`(() => { const b = document.querySelector('.ws-head button[aria-label="Workspace menu"]'); b.click();
		const has = [...document.querySelectorAll('.ws-head [role=menuitem]')].some(i => i.textContent === %q);
		b.click(); return has; })()`, label)
}

// memberRow is the directory row of the person called name.
func memberRow(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.mod-list li.mod-member')].find(li => li.querySelector('.author')?.textContent === %q)`, name)
}

// openRow opens the directory row of the person called name, or leaves it open, and waits for
// its controls (they are built when a row opens).
func openRow(t *testing.T, tab context.Context, name string) {
	t.Helper()
	waitFor(t, tab, name+"'s row open", fmt.Sprintf(`(d => !!d && (d.open || d.querySelector('summary').click(), d.open && d.querySelector('.mod-controls').childElementCount > 0))(%s?.querySelector('details'))`, memberRow(name)))
}

const standingLine = `(s => s && !s.hidden ? s.textContent : '')(document.querySelector('.standing'))`
const composerDisabled = `document.querySelector('form.composer .compose-box').disabled`

// TestBrowserModeration drives the moderation views of issue 16 in two and more browser
// contexts. Ana owns Acme; Ben is a member, Gus a guest in the waiting room, Dee and Eve come
// in by invite links. The API decides who may; the page shows its answers.
func TestBrowserModeration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana, ben, gus, dee := e.person(t, "Ana Lima"), e.person(t, "Ben Okafor"), e.person(t, "Gus Guest"), e.person(t, "Dee Newcomer")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	e.addMember(t, wsID, ben.user.ID)
	general := e.channel(t, ana, wsID, "general")
	old := e.channel(t, ana, wsID, "old-launch")
	e.api(t, ana, "PATCH", "/api/channels/"+old.ID, map[string]any{"archived": true}, nil)
	var external struct{ Channel persist.Channel }
	e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/channels", map[string]any{"name": "deploys", "external_managed": true,
		"external_ref": "pipeline-7", "external_url": "https://ci.example.com/pipelines/7"}, &external)
	deploys := external.Channel
	var inv struct{ Invite persist.Invite }
	e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/invites", map[string]string{"role": "guest"}, &inv)
	e.api(t, gus, "POST", "/api/invites/accept", map[string]string{"token": inv.Invite.Token}, nil)

	b := newBrowser(t, e)
	aTab, bTab, gTab := b.tab(t, ana), b.tab(t, ben), b.tab(t, gus)
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "general to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	}

	t.Run("MenusFollowRoles", func(t *testing.T) {
		if !menuHas(t, aTab, "Members and moderation") || !menuHas(t, aTab, "Invites") {
			t.Fatal("the owner's menu lacks the moderation entries")
		}
		if menuHas(t, bTab, "Members and moderation") || menuHas(t, bTab, "Invites") || menuHas(t, bTab, "Guests waiting") {
			t.Fatal("a member is offered moderation they cannot use")
		}
	})
	t.Run("Roles", func(t *testing.T) { moderationRoles(t, aTab, bTab) })
	t.Run("TimeoutBlockNote", func(t *testing.T) { timeoutBlockNote(t, e, ana, general.ID, aTab, bTab) })
	t.Run("Guests", func(t *testing.T) { guestRoom(t, e, aTab, gTab) })
	t.Run("Invites", func(t *testing.T) { invites(t, e, b, aTab, dee) })
	t.Run("Archived", func(t *testing.T) { archived(t, aTab, bTab) })
	t.Run("ExternalManaged", func(t *testing.T) { externalManaged(t, aTab, bTab, deploys.ID) })
	t.Run("OwnershipTransfer", func(t *testing.T) { ownership(t, aTab, bTab) })
}

// moderationRoles: the owner makes Ben a moderator; Ben's page follows at once (his menu, a
// directory where the owner's row has no controls and only member and guest can be given);
// demoted again, his open directory shows the API's refusal.
func moderationRoles(t *testing.T, aTab, bTab context.Context) {
	openMenu(t, aTab, "Members and moderation")
	waitFor(t, aTab, "three people listed", `document.querySelectorAll('.mod-list li.mod-member').length === 3`)
	if eval[bool](t, aTab, memberRow("Ana Lima")+`.querySelector('details, select, button') !== null`) {
		t.Fatal("the owner's own row offers moderation controls")
	}
	if eval[bool](t, aTab, memberRow("Ben Okafor")+`.querySelector('select, textarea, .mod-controls button') !== null`) {
		t.Fatal("a closed row holds its controls")
	}
	openRow(t, aTab, "Ben Okafor")
	if got := eval[string](t, aTab, `[...`+memberRow("Ben Okafor")+`.querySelectorAll('select.mod-role option')].map(o => o.value).join(',')`); got != "moderator,member,guest" {
		t.Fatalf("the owner may give Ben the roles %q", got)
	}
	choose(t, aTab, "Ben's role", memberRow("Ben Okafor")+`?.querySelector('select.mod-role')`, "moderator")
	waitFor(t, aTab, "Ben tagged moderator", memberRow("Ben Okafor")+`?.querySelector('.tag').textContent === 'moderator'`)

	waitFor(t, bTab, "Ben's menu to offer moderation", menuOffers("Members and moderation"))
	openMenu(t, bTab, "Members and moderation")
	waitFor(t, bTab, "the directory", memberRow("Gus Guest"))
	if eval[bool](t, bTab, memberRow("Ana Lima")+`.querySelector('details, select, button') !== null`) {
		t.Fatal("a moderator is offered controls over the owner")
	}
	openRow(t, bTab, "Gus Guest")
	if got := eval[string](t, bTab, `[...`+memberRow("Gus Guest")+`.querySelectorAll('select.mod-role option')].map(o => o.value).join(',')`); got != "member,guest" {
		t.Fatalf("a moderator may give Gus the roles %q, want member and guest only", got)
	}
	choose(t, aTab, "Ben's role", memberRow("Ben Okafor")+`?.querySelector('select.mod-role')`, "member")
	waitFor(t, aTab, "Ben tagged member", memberRow("Ben Okafor")+`?.querySelector('.tag').textContent === 'member'`)
	waitFor(t, bTab, "the API's refusal in Ben's open directory",
		`document.querySelector('.panel [role=alert]')?.textContent === 'workspace owner or moderator permission required'`)
	clickWhen(t, bTab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
	waitFor(t, bTab, "Ben's menu without the directory", `!(`+menuOffers("Members and moderation")+`)`)
}

// timeoutBlockNote: a timeout shows its time left on both sides and disables Ben's composer
// (the API refuses his post with its own sentence); lifting it gives the composer back; a block
// does the same; the moderators' note is theirs and is shown as text.
func timeoutBlockNote(t *testing.T, e *env, ana person, generalID string, aTab, bTab context.Context) {
	e.post(t, ana, generalID, "Rules are pinned")
	waitFor(t, bTab, "Ana's message", hasBody("Rules are pinned"))
	ben := memberRow("Ben Okafor")
	openRow(t, aTab, "Ben Okafor")
	choose(t, aTab, "the timeout length", ben+`?.querySelector('select[aria-label^="Timeout length"]')`, "15")
	clickWhen(t, aTab, "Time out", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Time out')`)
	waitFor(t, aTab, "15 minutes left on Ben's row", ben+`?.querySelector('.mod-state')?.textContent === 'timed out · 15 min left'`)
	waitFor(t, bTab, "Ben told how long", standingLine+`.startsWith('You are timed out for 15 min more')`)
	waitFor(t, bTab, "Ben's composer disabled", composerDisabled)
	refused := eval[string](t, bTab, `fetch('/api/channels/' + [...document.querySelectorAll('.places a.place')].find(a => a.textContent.includes('general')).dataset.place + '/messages',
		{method: 'POST', headers: {'Content-Type': 'application/json', 'X-Natter-CSRF': '1'}, body: JSON.stringify({body: 'let me in'})}).then(r => r.json()).then(j => j.error)`)
	if !strings.HasPrefix(refused, "you are timed out until ") {
		t.Fatalf("the API answered Ben's post with %q", refused)
	}
	shot(t, bTab, "timed-out")
	checkA11y(t, bTab, "timed out")
	// A reply is a post: the thread's reply box is disabled as well.
	clickAction(t, bTab, "Rules are pinned", "Reply in thread")
	waitFor(t, bTab, "the thread's reply box disabled", `document.querySelector('.panel:not([hidden]) .thread-composer textarea')?.disabled === true`)
	clickWhen(t, bTab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
	shot(t, aTab, "moderation-directory")
	checkA11y(t, aTab, "moderation directory")
	clickWhen(t, aTab, "Lift timeout", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Lift timeout')`)
	waitFor(t, aTab, "the timeout gone from the row", `!`+ben+`.querySelector('.mod-state')`)
	waitFor(t, bTab, "Ben's composer back", `!`+composerDisabled+` && `+standingLine+` === ''`)
	send(t, bTab, "form.composer .compose-box", "back again")
	waitFor(t, aTab, "Ben's message", hasBody("back again"))

	clickWhen(t, aTab, "Block", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Block')`)
	waitFor(t, aTab, "Ben shown blocked", ben+`?.querySelector('.mod-state')?.textContent === 'blocked'`)
	waitFor(t, bTab, "Ben told he is blocked", standingLine+`.startsWith('You are blocked in this workspace')`)
	waitFor(t, bTab, "Ben's composer disabled", composerDisabled)
	clickWhen(t, aTab, "Unblock", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Unblock')`)
	waitFor(t, bTab, "Ben's composer back", `!`+composerDisabled)

	note := "Asked twice to stay on topic <b>really</b>"
	waitFor(t, aTab, "the note typed", fmt.Sprintf(`(n => n && (n.value = %q, n.dispatchEvent(new Event('input')), true))(%s?.querySelector('textarea'))`, note, ben))
	clickWhen(t, aTab, "Save note", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Save note')`)
	waitFor(t, aTab, "the note on Ben's row", ben+`?.querySelector('.mod-note-text')?.textContent === `+fmt.Sprintf("%q", "Note: "+note))
	if eval[bool](t, aTab, `!!document.querySelector('.mod-list b')`) {
		t.Fatal("the note's markup became an element")
	}
	if strings.Contains(eval[string](t, bTab, `document.body.textContent`), "Asked twice") {
		t.Fatal("Ben's page shows the moderators' note")
	}
	clickWhen(t, aTab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
}

// guestRoom: Gus, a guest, sees only #guest and his three posts a day counting down, then a
// disabled composer; Ana sees him waiting (from #guest itself) and makes him a member, and
// Gus's page opens up without a reload.
func guestRoom(t *testing.T, e *env, aTab, gTab context.Context) {
	do(t, gTab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, gTab, "the guest channel", `document.querySelector('.conv-header h1')?.textContent === 'guest'`)
	if got := eval[string](t, gTab, `[...document.querySelectorAll('.places a.place .label')].map(l => l.textContent).join(',')`); got != "guest" {
		t.Fatalf("a guest's sidebar lists %q, want the guest channel only", got)
	}
	waitFor(t, gTab, "three posts left", standingLine+`.startsWith('Guest: 3 of 3 posts left today')`)
	for i, left := range []string{"2", "1"} {
		body := fmt.Sprintf("hello %d", i+1)
		send(t, gTab, "form.composer .compose-box", body)
		waitFor(t, gTab, "the post", hasBody(body))
		waitFor(t, gTab, left+" left", standingLine+`.startsWith('Guest: `+left+` of 3 posts left today')`)
	}
	shot(t, gTab, "guest-view")
	checkA11y(t, gTab, "guest view")
	send(t, gTab, "form.composer .compose-box", "hello 3")
	waitFor(t, gTab, "the third post", hasBody("hello 3"))
	waitFor(t, gTab, "the day's posts used up", standingLine+` === 'You have used your 3 guest posts for today; more tomorrow (the count renews at midnight UTC).'`)
	waitFor(t, gTab, "the composer disabled", composerDisabled)
	if !menuHas(t, gTab, "Join with an invite") || menuHas(t, gTab, "Show archived channels") || menuHas(t, gTab, "Guests waiting") {
		t.Fatal("a guest's menu is wrong")
	}

	clickWhen(t, aTab, "#guest in the sidebar", `[...document.querySelectorAll('.places a.place')].find(a => a.textContent.includes('guest'))`)
	waitFor(t, aTab, "the guest channel", `document.querySelector('.conv-header h1')?.textContent === 'guest'`)
	waitFor(t, aTab, "Gus's posts", hasBody("hello 3"))
	clickWhen(t, aTab, "the waiting-room link", `document.querySelector('.standing:not([hidden]) button.link')`)
	waitFor(t, aTab, "Gus waiting with no posts left", `[...document.querySelectorAll('.guest-list li')].some(li => li.querySelector('.author').textContent === 'Gus Guest'
		&& li.querySelector('.mod-state').textContent === '0 of 3 posts left today')`)
	clickWhen(t, aTab, "Make member", `[...document.querySelectorAll('.guest-list li')].find(li => li.querySelector('.author').textContent === 'Gus Guest')?.querySelector('button')`)
	waitFor(t, aTab, "Gus promoted", `document.querySelector('.panel .mod-note')?.textContent === 'Gus Guest is now a member and sees every channel.'`)
	waitFor(t, aTab, "nobody waiting", `document.querySelector('.guests-empty')`)
	// Guests hear of nothing outside #guest: the page asks again within seconds.
	waitFor(t, gTab, "general in Gus's sidebar", `[...document.querySelectorAll('.places a.place .label')].some(l => l.textContent === 'general')`)
	waitFor(t, gTab, "the guest line gone and the composer back", standingLine+` === '' && !`+composerDisabled)
	clickWhen(t, aTab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
}

// invites: Ana creates an invite, copies its link and sees it listed; a second one she revokes.
// Dee, signed in, opens the link in her own browser and lands in Acme; someone signed out opens
// the revoked link... and then a live one, signs in, and joins.
func invites(t *testing.T, e *env, b *browser, aTab context.Context, dee person) {
	openMenu(t, aTab, "Invites")
	waitFor(t, aTab, "no open invites yet", `document.querySelector('.panel').textContent.includes('No open invites.')`)
	if got := eval[string](t, aTab, `[...document.querySelectorAll('select[name=role] option')].map(o => o.value).join(',')`); got != "member,guest,moderator" {
		t.Fatalf("the owner may invite as %q", got)
	}
	mint := func() string {
		clickWhen(t, aTab, "Create invite link", `[...document.querySelectorAll('.panel button')].find(b => b.textContent === 'Create invite link')`)
		waitFor(t, aTab, "the new link", `document.querySelector('.invite-new input')?.value.includes('#invite=ivt_')`)
		return eval[string](t, aTab, `document.querySelector('.invite-new input').value`)
	}
	first := mint()
	clickWhen(t, aTab, "Copy link", `[...document.querySelectorAll('.invite-new button')].find(b => b.textContent === 'Copy link')`)
	waitFor(t, aTab, "copied", `[...document.querySelectorAll('.invite-new button')].some(b => b.textContent === 'Copied')`)
	waitFor(t, aTab, "one open invite", `document.querySelectorAll('.invite-list li').length === 1`)
	if got := eval[string](t, aTab, `document.querySelector('.invite-list li').textContent`); !strings.HasPrefix(got, "member by Ana Lima · expires in 7 d") {
		t.Fatalf("the invite is listed as %q", got)
	}
	shot(t, aTab, "invites")
	checkA11y(t, aTab, "invites")
	second := mint()
	waitFor(t, aTab, "two open invites", `document.querySelectorAll('.invite-list li').length === 2`)
	clickWhen(t, aTab, "Revoke the newest", `document.querySelector('.invite-list li button')`)
	waitFor(t, aTab, "one left", `document.querySelectorAll('.invite-list li').length === 1`)

	// Dee, signed in elsewhere (her own browser), opens the link.
	dTab := b.tab(t, dee)
	do(t, dTab, "open the invite link", chromedp.Navigate(first))
	waitFor(t, dTab, "Dee in Acme's general", `document.querySelector('.conv-header h1')?.textContent === 'general'
		&& document.querySelector('.ws-switch option:checked')?.textContent === 'Acme'`)
	waitFor(t, dTab, "told so", `document.querySelector('.toast')?.textContent === 'You are in Acme as member.'`)
	if strings.Contains(eval[string](t, dTab, `location.href`), "invite=") {
		t.Fatal("the invite token stays in the address bar")
	}
	// Reopened, the list has no used invite.
	clickWhen(t, aTab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
	openMenu(t, aTab, "Invites")
	waitFor(t, aTab, "the used invite gone from the list", `document.querySelector('.panel').textContent.includes('No open invites.')`)

	// Someone signed out: the revoked link fails after signing in, with the API's sentence; a
	// live one joins them.
	third := mint()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The target exists before the first navigation, as harness tabs do.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("a fresh browser context: %v", err)
	}
	do(t, ctx, "open the revoked link signed out", chromedp.Navigate(second))
	waitFor(t, ctx, "the sign-in page", `document.querySelector('.signin input[type=email]')`)
	signIn(t, ctx, "eve@example.com", "Eve Late")
	waitFor(t, ctx, "the refusal", `document.querySelector('.toast')?.textContent === 'That invite did not work: invite not found'`)
	do(t, ctx, "open the live link signed in", chromedp.Navigate(third))
	waitFor(t, ctx, "Eve in Acme", `document.querySelector('.conv-header h1')?.textContent === 'general' && document.querySelector('.toast')?.textContent === 'You are in Acme as member.'`)
	clickWhen(t, aTab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
}

// signIn uses the development magic-link flow of the sign-in page.
func signIn(t *testing.T, ctx context.Context, email, name string) {
	t.Helper()
	do(t, ctx, "fill the sign-in form", chromedp.SendKeys(`.signin input[type=email]`, email), chromedp.SendKeys(`.signin input[name=name]`, name))
	clickWhen(t, ctx, "Get a magic link", `[...document.querySelectorAll('.signin button')].find(b => b.textContent === 'Get a magic link')`)
	clickWhen(t, ctx, "Sign in with this link", `[...document.querySelectorAll('.signin button')].find(b => b.textContent === 'Sign in with this link')`)
}

// archived: the archived channel is listed, opens, and the owner unarchives it; a member sees
// the list without the button.
func archived(t *testing.T, aTab, bTab context.Context) {
	if eval[bool](t, aTab, `[...document.querySelectorAll('.places .label')].some(l => l.textContent === 'old-launch')`) {
		t.Fatal("the sidebar lists an archived channel")
	}
	openMenu(t, bTab, "Show archived channels")
	waitFor(t, bTab, "old-launch listed", `document.querySelector('.archived-list li .author')?.textContent === '#old-launch'`)
	if eval[bool](t, bTab, `[...document.querySelectorAll('.archived-list button')].some(b => b.textContent === 'Unarchive')`) {
		t.Fatal("a member is offered Unarchive")
	}
	openMenu(t, aTab, "Show archived channels")
	clickWhen(t, aTab, "Open", `[...document.querySelectorAll('.archived-list button')].find(b => b.textContent === 'Open')`)
	waitFor(t, aTab, "old-launch open", `document.querySelector('.conv-header h1')?.textContent === 'old-launch'`)
	clickWhen(t, aTab, "Unarchive", `[...document.querySelectorAll('.archived-list button')].find(b => b.textContent === 'Unarchive')`)
	waitFor(t, aTab, "the list empty", `document.querySelector('.panel').textContent.includes('No archived channels.')`)
	for _, tab := range []context.Context{aTab, bTab} {
		waitFor(t, tab, "old-launch in the sidebar", `[...document.querySelectorAll('.places .label')].some(l => l.textContent === 'old-launch')`)
	}
	waitFor(t, bTab, "Ben's list empty too", `document.querySelector('.panel').textContent.includes('No archived channels.')`)
	for _, tab := range []context.Context{aTab, bTab} {
		clickWhen(t, tab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
	}
}

// externalManaged: the channel's settings show its link; external management changes no
// authorization (the spec), so the API refuses Ben's edit as for any channel and takes Ana's.
func externalManaged(t *testing.T, aTab, bTab context.Context, channelID string) {
	for _, tab := range []context.Context{aTab, bTab} {
		clickWhen(t, tab, "#deploys", fmt.Sprintf(`document.querySelector('.places a.place[data-place=%q]')`, channelID))
		waitFor(t, tab, "deploys open", `document.querySelector('.conv-header h1')?.textContent === 'deploys'`)
		clickWhen(t, tab, "the settings", `document.querySelector('.conv-header button[aria-label="Channel settings"]')`)
		waitFor(t, tab, "the link", `(a => a && a.href === 'https://ci.example.com/pipelines/7' && a.rel === 'noopener noreferrer')(document.querySelector('.panel a[target=_blank]'))`)
	}
	// Typed and saved in one step, as a person pressing Enter does.
	setTopic := func(tab context.Context, topic string) {
		waitFor(t, tab, "the topic typed and saved", fmt.Sprintf(`(i => i && (i.value = %q, i.form.querySelector('button[type=submit]').click(), true))(document.querySelector('.panel input[name=display_title]'))`, topic))
	}
	setTopic(bTab, "Ben's topic")
	waitFor(t, bTab, "an answer", `document.querySelector('.panel [role=alert]:not([hidden])') || document.querySelector('.panel [role=status]')?.textContent`)
	if got := eval[string](t, bTab, `document.querySelector('.panel').textContent`); !strings.Contains(got, "workspace owner permission required") {
		t.Fatalf("Ben's settings say %q, want the API's refusal", got)
	}
	setTopic(aTab, "Pipeline 7 status")
	waitFor(t, aTab, "saved", `document.querySelector('.panel [role=status]')?.textContent === 'Saved.'`)
	// Ben sees the owner's topic live; his refused draft stays in his form, as typed text does.
	waitFor(t, bTab, "Ben sees the owner's topic", `document.querySelector('.conv-header .topic')?.textContent === 'Pipeline 7 status'`)
	if got := eval[string](t, bTab, `document.querySelector('.panel input[name=display_title]').value`); got != "Ben's topic" {
		t.Fatalf("Ben's unsaved topic field reads %q after the owner's change", got)
	}
	for _, tab := range []context.Context{aTab, bTab} {
		clickWhen(t, tab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
	}
}

// ownership: Ana hands Acme to Ben and becomes a moderator; both pages follow.
func ownership(t *testing.T, aTab, bTab context.Context) {
	openMenu(t, aTab, "Members and moderation")
	ben := memberRow("Ben Okafor")
	openRow(t, aTab, "Ben Okafor")
	clickWhen(t, aTab, "Make owner…", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Make owner…')`)
	clickWhen(t, aTab, "Transfer ownership", `[...`+ben+`.querySelectorAll('button')].find(b => b.textContent === 'Transfer ownership')`)
	waitFor(t, aTab, "Ben tagged owner", ben+`?.querySelector('.tag')?.textContent === 'owner'`)
	waitFor(t, aTab, "Ana a moderator", memberRow("Ana Lima")+`?.querySelector('.tag')?.textContent === 'moderator'`)
	waitFor(t, aTab, "Ana told she is a moderator", `document.querySelector('.panel').textContent.includes('You are a moderator.')`)
	if eval[bool](t, aTab, ben+`.querySelector('details, select, button') !== null`) {
		t.Fatal("the former owner is offered controls over the new owner")
	}
	waitFor(t, bTab, "Ben's menu to offer the directory", menuOffers("Members and moderation"))
	openMenu(t, bTab, "Members and moderation")
	waitFor(t, bTab, "Ana, a moderator, in Ben's directory", memberRow("Ana Lima")+`?.querySelector('.tag')?.textContent === 'moderator'`)
	openRow(t, bTab, "Ana Lima")
	waitFor(t, bTab, "her controls", `!!`+memberRow("Ana Lima")+`.querySelector('select.mod-role')`)
}
