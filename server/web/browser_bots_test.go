package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/system"
)

// TestBrowserBots drives the bots, agents and integrations views (issue 16). Ana owns the
// workspace; Ben is a member. Ana makes a bot and a token in the page, and the token she copied
// is then used against the API; the agent's progress, commentary and tool messages come from
// that token; the integrations send real signed deliveries to a receiver in the test.
func TestBrowserBots(t *testing.T) {
	t.Parallel()
	// The system's event-subscription deliverer may call the test's receiver on loopback.
	e := newSystemEnv(t, func(c *system.Config) {
		c.Callbacks = outbound.CallbackConfig{AllowAddr: outbound.PublicOrLoopback, Timeout: 10 * time.Second}
		c.Delivery.SyncInterval = 100 * time.Millisecond
	})
	ana := e.person(t, "Ana Lima")
	ben := e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	e.addMember(t, wsID, ben.user.ID)
	general := e.channel(t, ana, wsID, "general")
	e.channel(t, ana, wsID, "deploys")
	recv := newReceiver(t)

	b := newBrowser(t, e)
	aTab := b.tab(t, ana)
	bTab := b.tab(t, ben)
	var dialogs atomic.Int32
	watchDialogs(t, aTab, &dialogs)
	watchDialogs(t, bTab, &dialogs)
	defer func() {
		if n := dialogs.Load(); n != 0 {
			t.Errorf("%d JavaScript dialogs opened: a name or a body ran as markup", n)
		}
	}()
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "the channel to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	}

	var bot person
	t.Run("BotAndToken", func(t *testing.T) { bot = botAndToken(t, e, aTab) })
	if t.Failed() {
		return
	}
	t.Run("AgentProgressUnderMessage", func(t *testing.T) { progressUnder(t, e, bot, wsID, general.ID, bTab) })
	t.Run("AgentMessages", func(t *testing.T) { agentMessages(t, e, bot, general.ID, bTab) })
	t.Run("CommandMenu", func(t *testing.T) { commandMenuFresh(t, e, ana, bot, wsID, bTab) })
	t.Run("RevokeToken", func(t *testing.T) { revokeToken(t, e, bot, aTab) })
	var claimed string
	t.Run("SetupCode", func(t *testing.T) { claimed = setupCode(t, e, aTab) })
	t.Run("MemberRefused", func(t *testing.T) { memberRefused(t, e, ben, wsID, bTab) })
	t.Run("Integrations", func(t *testing.T) { integrations(t, e, ana, general.ID, recv, claimed, aTab) })
}

// openMenuPanel opens the panel of a workspace-menu entry.
func openMenuPanel(t *testing.T, tab context.Context, label, title string) {
	t.Helper()
	do(t, tab, "open the workspace menu", mouseClick(`.ws-head .menu-btn`))
	waitFor(t, tab, "the "+label+" entry", fmt.Sprintf(`[...document.querySelectorAll('.menu-item')].some(b => b.textContent === %q)`, label))
	eval[bool](t, tab, fmt.Sprintf(`[...document.querySelectorAll('.menu-item')].find(b => b.textContent === %q).click() ?? true`, label))
	waitFor(t, tab, "the "+title+" panel", fmt.Sprintf(`document.querySelector('#panel-title')?.textContent === %q && !document.querySelector('.panel').hidden`, title))
}

// fill sets a field of the form labelled form in the panel.
func fill(t *testing.T, tab context.Context, form, name, value string) {
	t.Helper()
	// The panel draws its forms after its first request answers.
	waitFor(t, tab, "the "+name+" field of "+form, fmt.Sprintf(`!!document.querySelector('.panel form[aria-label=%q] [name=%s]')`, form, name))
	eval[bool](t, tab, fmt.Sprintf(`(i => (i.value = %q, i.dispatchEvent(new Event('input')), true))(document.querySelector('.panel form[aria-label=%q] [name=%s]'))`, value, form, name))
}

// press clicks the button of the panel whose text is label, inside scope (a selector).
func press(t *testing.T, tab context.Context, scope, label string) {
	t.Helper()
	waitFor(t, tab, "the "+label+" button", fmt.Sprintf(`[...document.querySelectorAll(%q)].some(b => b.textContent === %q && !b.disabled)`, scope+" button", label))
	eval[bool](t, tab, fmt.Sprintf(`[...document.querySelectorAll(%q)].find(b => b.textContent === %q && !b.disabled).click() ?? true`, scope+" button", label))
}

const secretValue = `(document.querySelector('.panel .secret .secret-value')?.value || '')`

// bearer calls the API with a raw token and returns the status and body.
func (e *env) bearer(t *testing.T, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = strings.NewReader(string(raw))
	}
	req, _ := http.NewRequest(method, e.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// botAndToken: a bot is created in the page, then a token with the scopes chosen; the token is
// shown once with a Copy button that puts it on the clipboard, is gone from the page once its
// box is closed, is listed without its secret, and works against the API.
func botAndToken(t *testing.T, e *env, tab context.Context) person {
	openMenuPanel(t, tab, "Bots", "Bots")
	waitFor(t, tab, "the empty list", `document.querySelector('.panel-body')?.textContent.includes('No bots in this workspace yet.')`)
	fill(t, tab, "Create a bot", "display_name", "Deploy bot")
	fill(t, tab, "Create a bot", "handle", "deployer")
	press(t, tab, `.panel form[aria-label="Create a bot"]`, "Create bot")
	card := `document.querySelector('.panel .bot-card')`
	waitFor(t, tab, "the bot's card", card+`?.querySelector('.author')?.textContent === 'Deploy bot'`)
	waitFor(t, tab, "the bot's presence dot, no socket yet", dotWord(card+`.querySelector('.bot-head .pdot')`)+` === 'Offline'`)
	if got := eval[string](t, tab, card+`.querySelector('.tag').textContent`); got != "service bot" {
		t.Fatalf("the owner's bot is tagged %q, want a service bot", got)
	}
	botID := eval[string](t, tab, card+`.dataset.bot`)

	press(t, tab, ".panel .bot-card", "New token or setup code")
	form := "New token for Deploy bot"
	fill(t, tab, form, "name", "ci")
	// bot:write is preset; agent_activity:write is in no bundle and must be chosen (SPEC §Bot scopes).
	eval[bool](t, tab, `document.querySelector('.panel form.grant input[value="agent_activity:write"]').click() ?? true`)
	press(t, tab, ".panel form.grant", "Create token")
	waitFor(t, tab, "the token shown", secretValue+`.startsWith('ccb_')`)
	token := eval[string](t, tab, secretValue)
	granted := eval[string](t, tab, `document.querySelector('.panel .secret .token-granted').textContent`)
	for _, s := range []string{"messages:write", "commands:write", "profile:read", "agent_activity:write"} {
		if !strings.Contains(granted, s) {
			t.Errorf("the new token's scopes read %q, missing %s", granted, s)
		}
	}
	shot(t, tab, "bots-token")
	checkA11y(t, tab, "bots token")
	// Copy puts exactly the token on the clipboard.
	do(t, tab, "allow the clipboard", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := chromedp.Call(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{Permission: &cdpbrowser.PermissionDescriptor{Name: name},
				Setting: cdpbrowser.PermissionSettingGranted, Origin: e.URL, BrowserContextID: chromedp.FromContext(tab).BrowserContextID}); err != nil {
				return err
			}
		}
		return nil
	}))
	// The clipboard is the focused page's: this tab comes to the front first.
	do(t, tab, "bring the tab to the front", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{})
		return err
	}))
	press(t, tab, ".panel .secret", "Copy")
	waitFor(t, tab, "copied", `document.querySelector('.panel .secret [role=status]')?.textContent === 'Copied.'`)
	if got := eval[string](t, tab, `navigator.clipboard.readText()`); got != token {
		t.Fatalf("the clipboard holds %q, want the token", got)
	}
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the box closed", `!document.querySelector('.panel .secret')`)
	if eval[bool](t, tab, fmt.Sprintf(`document.documentElement.outerHTML.includes(%q) || [...document.querySelectorAll('input, textarea')].some(i => i.value.includes(%q))`, token, token)) {
		t.Fatal("the token is still in the page after its box was closed")
	}
	row := card + `.querySelector('.token')`
	waitFor(t, tab, "the token listed", row+`?.querySelector('.token-name').textContent === 'ci'`)
	if got := eval[string](t, tab, row+`.querySelector('.token-scopes').textContent`); !strings.Contains(got, "agent_activity:write") {
		t.Fatalf("the listed token's scopes read %q", got)
	}
	// The copied token works: the API knows it as the bot.
	status, raw := e.bearer(t, token, "GET", "/api/me", nil)
	var me struct{ User persist.PublicUser }
	_ = json.Unmarshal(raw, &me)
	if status != http.StatusOK || me.User.ID != botID {
		t.Fatalf("GET /api/me with the copied token: %d %s, want 200 as %s", status, raw, botID)
	}
	return person{user: persist.User{ID: botID, DisplayName: "Deploy bot"}, token: token}
}

// revokeToken: Revoke asks once more, then the token is revoked and the API refuses it.
func revokeToken(t *testing.T, e *env, bot person, tab context.Context) {
	openMenuPanel(t, tab, "Bots", "Bots")
	row := `document.querySelector('.panel .bot-card .token')`
	waitFor(t, tab, "the token", row+`?.querySelector('.token-name').textContent === 'ci'`)
	waitFor(t, tab, "the helper's card", fmt.Sprintf(`[...document.querySelectorAll('.panel .bot-card .author')].some(a => a.textContent === %q)`, hostileBotName))
	if n := eval[int](t, tab, `document.querySelectorAll('.panel img:not(.avatar)').length`); n != 0 {
		t.Fatalf("a bot's name made %d img elements in the panel", n)
	}
	press(t, tab, ".panel .bot-card .token", "Revoke")
	if status, _ := e.bearer(t, bot.token, "GET", "/api/me", nil); status != http.StatusOK {
		t.Fatalf("one press of Revoke already revoked the token (%d)", status)
	}
	press(t, tab, ".panel .bot-card .token", "Revoke?")
	waitFor(t, tab, "the token revoked", row+`?.classList.contains('revoked') && `+row+`.textContent.includes('revoked')`)
	if status, raw := e.bearer(t, bot.token, "GET", "/api/me", nil); status != http.StatusUnauthorized {
		t.Fatalf("GET /api/me with the revoked token: %d %s, want 401", status, raw)
	}
}

var setupCodeForm = regexp.MustCompile(`^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$`)

// setupCode: a setup code is shown with its expiry (10 minutes) and the claim address, and a
// runtime that posts it there gets a working token.
func setupCode(t *testing.T, e *env, tab context.Context) string {
	press(t, tab, ".panel .bot-card", "New token or setup code")
	fill(t, tab, "New token for Deploy bot", "name", "runtime")
	eval[bool](t, tab, `(s => (s.value = 'channel:deploys', s.value === 'channel:deploys'))(document.querySelector('.panel form.grant select[name=default_to]'))`)
	press(t, tab, ".panel form.grant", "Create setup code")
	waitFor(t, tab, "the code shown", secretValue+`.length === 14`)
	code := eval[string](t, tab, secretValue)
	if !setupCodeForm.MatchString(code) {
		t.Fatalf("the setup code reads %q, want XXXX-XXXX-XXXX", code)
	}
	expires, err := time.Parse(time.RFC3339Nano, eval[string](t, tab, `document.querySelector('.panel .secret .setup-expiry time').dateTime`))
	if left := time.Until(expires); err != nil || left < 9*time.Minute || left > 10*time.Minute+5*time.Second {
		t.Fatalf("the code expires in %v (%v), want 10 minutes", left, err)
	}
	if got := eval[string](t, tab, `document.querySelector('.panel .secret .setup-expiry').textContent`); !strings.Contains(got, "in 10 minutes") {
		t.Fatalf("the expiry reads %q", got)
	}
	claimURL := e.URL + "/api/bot-setup-codes/claim"
	if got := eval[string](t, tab, `document.querySelector('.panel .secret .setup-claim').textContent`); !strings.Contains(got, claimURL) || !strings.Contains(got, code) {
		t.Fatalf("the claim instructions read %q, want %s and the code", got, claimURL)
	}
	shot(t, tab, "bots-setup-code")
	checkA11y(t, tab, "bots setup code")
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the box closed", `!document.querySelector('.panel .secret')`)
	// What the runtime does: claim once, get a token that works.
	res, err := http.Post(claimURL, "application/json", strings.NewReader(fmt.Sprintf(`{"code":%q}`, code)))
	if err != nil {
		t.Fatal(err)
	}
	var claimed struct {
		Token    string
		Defaults struct {
			DefaultTo string `json:"defaultTo"`
		}
	}
	_ = json.NewDecoder(res.Body).Decode(&claimed)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(claimed.Token, "ccb_") || claimed.Defaults.DefaultTo != "channel:deploys" {
		t.Fatalf("claim: %d, token %q, defaultTo %q (chosen in the page: channel:deploys)", res.StatusCode, claimed.Token, claimed.Defaults.DefaultTo)
	}
	if status, raw := e.bearer(t, claimed.Token, "GET", "/api/me", nil); status != http.StatusOK {
		t.Fatalf("the claimed token: %d %s", status, raw)
	}
	return claimed.Token
}

// memberRefused: a member has no Integrations entry; asking for a service bot is refused with
// the API's own sentence.
func memberRefused(t *testing.T, e *env, ben person, wsID string, tab context.Context) {
	openMenuPanel(t, tab, "Bots", "Bots")
	if eval[bool](t, tab, `[...document.querySelectorAll('.menu-item')].some(b => b.textContent === 'Integrations')`) {
		t.Fatal("a member is offered the integrations")
	}
	status, raw := e.bearer(t, ben.token, "POST", "/api/workspaces/"+wsID+"/bots", map[string]any{"display_name": "Ben's helper", "initial_token": false})
	var refusal struct{ Error string }
	_ = json.Unmarshal(raw, &refusal)
	if status != http.StatusForbidden || refusal.Error == "" {
		t.Fatalf("a member creating a service bot: %d %s, want 403", status, raw)
	}
	fill(t, tab, "Create a bot", "display_name", "Ben's other helper")
	eval[bool](t, tab, `document.querySelector('.panel form.bot-create input[value=service]').click() ?? true`)
	press(t, tab, `.panel form.bot-create`, "Create bot")
	waitFor(t, tab, "the refusal", fmt.Sprintf(`document.querySelector('.panel .error[role=alert]:not([hidden])')?.textContent === %q`, refusal.Error))
	if got := eval[string](t, tab, `document.querySelector('.panel form.bot-create [name=display_name]').value`); got != "Ben's other helper" {
		t.Fatalf("after the refusal the name field holds %q, want what he typed", got)
	}
	if eval[bool](t, tab, `[...document.querySelectorAll('.panel .bot-card .author')].some(a => a.textContent === "Ben's other helper")`) {
		t.Fatal("a refused bot was listed")
	}
	// His own bot is his to make.
	fill(t, tab, "Create a bot", "display_name", "Ben's bot")
	eval[bool](t, tab, `document.querySelector('.panel form.bot-create input[value=me]').click() ?? true`)
	press(t, tab, `.panel form.bot-create`, "Create bot")
	waitFor(t, tab, "his user bot", `[...document.querySelectorAll('.panel .bot-card')].some(c => c.querySelector('.author').textContent === "Ben's bot" && c.querySelector('.tag').textContent === 'user bot')`)
	// He may delete his own bot, not the workspace's.
	card := func(name string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('.panel .bot-card')].find(c => c.querySelector('.author').textContent === %q)`, name)
	}
	deployID := eval[string](t, tab, card("Deploy bot")+`.dataset.bot`)
	status, raw = e.bearer(t, ben.token, "DELETE", "/api/bots/"+deployID, nil)
	_ = json.Unmarshal(raw, &refusal)
	if status != http.StatusForbidden {
		t.Fatalf("a member deleting a service bot: %d %s, want 403", status, raw)
	}
	deleteBot := func(name string) {
		t.Helper()
		for _, label := range []string{"Delete bot", "Delete bot?"} {
			eval[bool](t, tab, fmt.Sprintf(`[...%s.querySelectorAll('button')].find(b => b.textContent === %q).click() ?? true`, card(name), label))
		}
	}
	deleteBot("Deploy bot")
	waitFor(t, tab, "the refusal to delete", fmt.Sprintf(`document.querySelector('.panel .error[role=alert]:not([hidden])')?.textContent === %q`, refusal.Error))
	deleteBot("Ben's bot")
	waitFor(t, tab, "his bot gone", `!`+card("Ben's bot")+` && `+card("Deploy bot"))
}
