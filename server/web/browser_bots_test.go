package web_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
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

// postAs sends a message with a bot token through the API and returns its id.
func postAs(t *testing.T, e *env, bot person, chID, body, kind string) string {
	t.Helper()
	req := map[string]string{"body": body}
	if kind != "" {
		req["kind"] = kind
	}
	status, raw := e.bearer(t, bot.token, "POST", "/api/channels/"+chID+"/messages", req)
	var out struct{ Message persist.Message }
	if err := json.Unmarshal(raw, &out); err != nil || status != http.StatusCreated {
		t.Fatalf("post %q as the bot: %d %s", body, status, raw)
	}
	return out.Message.ID
}

// progressUnder: progress naming a message shows under that message, live, collapsible through
// updates, and goes when it ends; progress naming none stays at the bottom of the channel.
func progressUnder(t *testing.T, e *env, bot person, wsID, chID string, tab context.Context) {
	msgID := postAs(t, e, bot, chID, "Deploying main to staging", "")
	waitFor(t, tab, "the bot's message", hasBody("Deploying main to staging"))
	progress := func(payload map[string]any) {
		status, raw := e.bearer(t, bot.token, "POST", "/api/realtime/ephemeral", map[string]any{"workspace_id": wsID, "channel_id": chID,
			"type": "agent.progress", "payload": payload})
		if status != http.StatusAccepted {
			t.Fatalf("agent.progress: %d %s", status, raw)
		}
	}
	under := fmt.Sprintf(`document.querySelector('.list .msg[data-id=%q] .agents.under details.agent-block')`, msgID)
	progress(map[string]any{"turn_id": "t1", "op": "append", "text": "Building the image", "message_id": msgID})
	waitFor(t, tab, "the block under the message", under+`?.querySelector('.progress-last')?.textContent === 'Building the image'`)
	if !eval[bool](t, tab, `document.querySelector('.conversation > .agents').hidden`) {
		t.Fatal("progress naming a message also shows at the bottom of the channel")
	}
	if got := eval[string](t, tab, under+`.querySelector('summary strong').textContent`); got != "Deploy bot" {
		t.Fatalf("the block is named %q", got)
	}
	progress(map[string]any{"turn_id": "t1", "op": "append", "text": "Running 412 tests", "message_id": msgID})
	waitFor(t, tab, "both lines", `[...`+under+`.querySelectorAll('.progress-lines li')].map(l => l.textContent).join('|') === 'Building the image|Running 412 tests'`)
	// Progress naming no message is at the bottom, beside it.
	progress(map[string]any{"turn_id": "t2", "op": "append", "text": "Watching the queue"})
	waitFor(t, tab, "the block at the bottom", `document.querySelector('.conversation > .agents:not([hidden]) .progress-last')?.textContent === 'Watching the queue'`)
	shot(t, tab, "agent-progress-under")
	do(t, tab, "collapse", mouseClick(fmt.Sprintf(`.list .msg[data-id=%q] .agents.under summary`, msgID)))
	waitFor(t, tab, "collapsed", `!`+under+`.open`)
	progress(map[string]any{"turn_id": "t1", "op": "append", "text": "Rolling out", "message_id": msgID})
	waitFor(t, tab, "the newest line", under+`?.querySelector('.progress-last').textContent === 'Rolling out'`)
	if eval[bool](t, tab, under+`.open`) {
		t.Fatal("an update reopened the collapsed block")
	}
	progress(map[string]any{"turn_id": "t1", "op": "end", "message_id": msgID})
	progress(map[string]any{"turn_id": "t2", "op": "end"})
	// A block whose bot went quiet for 30 seconds goes, under its message and at the bottom: the
	// page's clock is moved on rather than waited for.
	progress(map[string]any{"turn_id": "t5", "op": "append", "text": "Waiting on CI", "message_id": msgID})
	progress(map[string]any{"turn_id": "t6", "op": "append", "text": "Idle"})
	// Waiting for these two lines, not for any block: the blocks of t1 and t2 show until their
	// ends arrive, and an event that arrived after the clock moved would start a fresh 30 s.
	waitFor(t, tab, "both blocks", under+`?.querySelector('.progress-last')?.textContent === 'Waiting on CI'
		&& document.querySelector('.conversation > .agents:not([hidden]) .progress-last')?.textContent === 'Idle'`)
	eval[bool](t, tab, `(globalThis.realNow = Date.now, Date.now = () => globalThis.realNow.call(Date) + 31000, true)`)
	waitFor(t, tab, "both blocks expired", `!`+under+` && document.querySelector('.conversation > .agents').hidden`)
	eval[bool](t, tab, `(Date.now = globalThis.realNow, true)`)
	progress(map[string]any{"turn_id": "t5", "op": "end", "message_id": msgID})
	progress(map[string]any{"turn_id": "t6", "op": "end"})
	// Progress naming a message this page has not loaded shows at the bottom too.
	progress(map[string]any{"turn_id": "t4", "op": "append", "text": "Reading an old thread", "message_id": "msg_notloadedhere"})
	waitFor(t, tab, "the unplaced block at the bottom", `document.querySelector('.conversation > .agents:not([hidden]) .progress-last')?.textContent === 'Reading an old thread'`)
	progress(map[string]any{"turn_id": "t4", "op": "end", "message_id": "msg_notloadedhere"})
	waitFor(t, tab, "both blocks gone", `!`+under+` && document.querySelector('.conversation > .agents').hidden`)

	// A reply the progress names shows its block in the thread panel.
	status, raw := e.bearer(t, bot.token, "POST", "/api/messages/"+msgID+"/thread/replies", map[string]string{"body": "Staging is green"})
	var reply struct{ Message persist.Message }
	if err := json.Unmarshal(raw, &reply); err != nil || status != http.StatusCreated {
		t.Fatalf("reply as the bot: %d %s", status, raw)
	}
	waitFor(t, tab, "the thread summary", fmt.Sprintf(`document.querySelector('.list .msg[data-id=%q] .thread-summary')`, msgID))
	eval[bool](t, tab, fmt.Sprintf(`document.querySelector('.list .msg[data-id=%q] .thread-summary').click() ?? true`, msgID))
	inThread := fmt.Sprintf(`document.querySelector('.panel .msg[data-id=%q] .agents.under details.agent-block')`, reply.Message.ID)
	progress(map[string]any{"turn_id": "t3", "op": "append", "text": "Promoting to production", "message_id": reply.Message.ID})
	waitFor(t, tab, "the block under the reply", inThread+`?.querySelector('.progress-last')?.textContent === 'Promoting to production'`)
	if !eval[bool](t, tab, `document.querySelector('.conversation > .agents').hidden`) {
		t.Fatal("progress naming the open thread's reply also shows at the bottom")
	}
	progress(map[string]any{"turn_id": "t3", "op": "end", "message_id": reply.Message.ID})
	waitFor(t, tab, "the reply's block gone", `!`+inThread)
	do(t, tab, "close the thread", mouseClick(`.panel button[aria-label="Close panel"]`))
	waitFor(t, tab, "the panel closed", `document.querySelector('.panel').hidden`)
}

// agentMessages: commentary is a muted aside, a tool message a call collapsed to its name that
// opens on its arguments and result; a tool message in Markdown shows its first line.
func agentMessages(t *testing.T, e *env, bot person, chID string, tab context.Context) {
	comment := postAs(t, e, bot, chID, "Looking at the failing test first.", "agent_commentary")
	tool := postAs(t, e, bot, chID, `{"name":"run_tests","arguments":{"package":"./server"},"result":"412 passed <img src=x onerror=alert(1)>"}`, "agent_tool")
	md := postAs(t, e, bot, chID, "`grep -n TODO server`\nfound **3** matches", "agent_tool")
	plain := postAs(t, e, bot, chID, "All green, deploying.", "")
	row := func(id string) string { return fmt.Sprintf(`document.querySelector('.list .msg[data-id=%q]')`, id) }
	waitFor(t, tab, "the four messages", row(plain))
	if got := eval[string](t, tab, row(comment)+`.querySelector('.agent-commentary').textContent`); got != "commentaryLooking at the failing test first." {
		t.Fatalf("the commentary reads %q", got)
	}
	if got := eval[string](t, tab, `getComputedStyle(`+row(comment)+`.querySelector('.agent-commentary')).fontStyle`); got != "italic" {
		t.Fatalf("commentary is drawn %q, want a muted italic aside", got)
	}
	if eval[bool](t, tab, row(plain)+`.querySelector('.agent-commentary, .tool-call') !== null`) {
		t.Fatal("an ordinary message is drawn as agent activity")
	}
	call := row(tool) + `.querySelector('details.tool-call')`
	if got := eval[string](t, tab, call+`.querySelector('.tool-name').textContent`); got != "run_tests" {
		t.Fatalf("the tool call is named %q", got)
	}
	if eval[bool](t, tab, call+`.open`) {
		t.Fatal("a tool call starts open")
	}
	do(t, tab, "open the tool call", mouseClick(fmt.Sprintf(`.list .msg[data-id=%q] details.tool-call summary`, tool)))
	waitFor(t, tab, "its arguments and result", `[...`+call+`.querySelectorAll('.tool-part')].map(p => p.textContent).join('|') === 'Arguments{\n  "package": "./server"\n}|Result412 passed <img src=x onerror=alert(1)>'`)
	if n := eval[int](t, tab, `document.querySelectorAll('.list img:not(.avatar)').length`); n != 0 {
		t.Fatalf("a tool result made %d img elements", n)
	}
	if got := eval[string](t, tab, row(md)+`.querySelector('.tool-name').textContent`); got != "grep -n TODO server" {
		t.Fatalf("the Markdown tool call is named %q", got)
	}
	if got := eval[string](t, tab, row(md)+`.querySelector('.tool-part strong')?.textContent`); got != "3" {
		t.Fatalf("the Markdown detail was not rendered (%q)", got)
	}
	shot(t, tab, "agent-messages")
	checkA11y(t, tab, "agent messages")
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

// receiver is an HTTP endpoint standing in for an app: it checks each delivery's signature
// against the secret the page showed, answers 200 to the first delivery and 500 after.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []delivered
}

type delivered struct {
	signed bool
	body   string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		m := hmac.New(sha256.New, []byte(r.currentSecret()))
		m.Write([]byte(req.Header.Get("X-Natter-Timestamp") + "." + string(body)))
		signed := hmac.Equal([]byte(req.Header.Get("X-Natter-Signature")), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
		r.mu.Lock()
		r.got = append(r.got, delivered{signed: signed, body: string(body)})
		n := len(r.got)
		r.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) currentSecret() string { r.mu.Lock(); defer r.mu.Unlock(); return r.secret }
func (r *receiver) setSecret(s string)    { r.mu.Lock(); r.secret = s; r.mu.Unlock() }

// wait returns the deliveries once there are n of them.
func (r *receiver) wait(t *testing.T, n int) []delivered {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		got := append([]delivered(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the receiver got fewer than %d deliveries", n)
	return nil
}

// integrations: an app is installed, a slash command registered and its secret rotated, and an
// event subscription sends signed deliveries to a receiver; the secrets the page shows are the
// ones the deliveries are signed with, and the attempts show with their outcome. Then each is
// revoked.
func integrations(t *testing.T, e *env, ana person, chID string, recv *receiver, botToken string, tab context.Context) {
	openMenuPanel(t, tab, "Integrations", "Integrations")
	waitFor(t, tab, "the empty lists", `document.querySelector('.panel-body')?.textContent.includes('No apps installed.')`)
	fill(t, tab, "Install an app", "app_slug", "ci-notifier")
	fill(t, tab, "Install an app", "display_name", "CI notifier")
	eval[bool](t, tab, `(s => (s.value = [...s.options].find(o => o.textContent === 'Deploy bot').value, true))(document.querySelector('.panel form[aria-label="Install an app"] select'))`)
	press(t, tab, `.panel form[aria-label="Install an app"]`, "Install")
	// The installation's own bot token, shown once, works.
	waitFor(t, tab, "the installation's token", secretValue+`.startsWith('ccb_')`)
	installToken := eval[string](t, tab, secretValue)
	if status, raw := e.bearer(t, installToken, "GET", "/api/me", nil); status != http.StatusOK {
		t.Fatalf("the installation's token: %d %s", status, raw)
	}
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the installation listed", `document.querySelector('.panel .installs li strong')?.textContent === 'CI notifier'`)
	if got := eval[string](t, tab, `document.querySelector('.panel .installs li .hint').textContent`); !strings.Contains(got, "ci-notifier · as Deploy bot") {
		t.Fatalf("the installation reads %q", got)
	}

	// A slash command: its signing secret shown on create, and a new one on rotate.
	form := "Register a slash command"
	fill(t, tab, form, "command", "/deploy")
	fill(t, tab, form, "description", "Deploy a branch")
	// A callback that is not http(s) is refused with the API's sentence; nothing is made and
	// what was typed stays.
	fill(t, tab, form, "callback_url", "ftp://example.com/slash")
	press(t, tab, `.panel form[aria-label="`+form+`"]`, "Register command")
	waitFor(t, tab, "the refusal", `document.querySelector('.panel .error[role=alert]:not([hidden])')?.textContent === 'callback_url must be an absolute http or https URL'`)
	if got := eval[string](t, tab, `document.querySelector('.panel form[aria-label="`+form+`"] [name=command]').value`); got != "/deploy" || eval[bool](t, tab, `!!document.querySelector('.panel .secret')`) {
		t.Fatalf("after the refusal the command field holds %q (or a secret shows)", got)
	}
	fill(t, tab, form, "callback_url", recv.srv.URL+"/slash")
	press(t, tab, `.panel form[aria-label="`+form+`"]`, "Register command")
	waitFor(t, tab, "the command's secret", secretValue+`.startsWith('whsec_')`)
	first := eval[string](t, tab, secretValue)
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the command listed", `document.querySelector('.panel .commands li code')?.textContent === '/deploy' && !document.querySelector('.panel .secret')`)
	press(t, tab, ".panel .commands li", "Rotate secret")
	waitFor(t, tab, "a new secret", secretValue+fmt.Sprintf(`.startsWith('whsec_') && %s !== %q`, secretValue, first))
	press(t, tab, ".panel .secret", "Done")

	// An event subscription, signed with the secret the page shows.
	form = "Subscribe to events"
	fill(t, tab, form, "callback_url", recv.srv.URL+"/events")
	press(t, tab, `.panel form[aria-label="`+form+`"]`, "Subscribe")
	waitFor(t, tab, "the subscription's secret", secretValue+`.startsWith('whsec_')`)
	recv.setSecret(eval[string](t, tab, secretValue))
	shot(t, tab, "integrations")
	checkA11y(t, tab, "integrations")
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the subscription listed", `document.querySelector('.panel .subs li strong')?.textContent === 'message.created'`)
	e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": "first delivery"}, nil)
	if got := recv.wait(t, 1)[0]; !got.signed || !strings.Contains(got.body, "first delivery") {
		t.Fatalf("the first delivery: signed with the shown secret %v, body %s", got.signed, got.body)
	}
	press(t, tab, ".panel .subs li", "Rotate secret")
	waitFor(t, tab, "the rotated secret", secretValue+fmt.Sprintf(`.startsWith('whsec_') && %s !== %q`, secretValue, recv.currentSecret()))
	recv.setSecret(eval[string](t, tab, secretValue))
	press(t, tab, ".panel .secret", "Done")
	e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": "second delivery"}, nil)
	if got := recv.wait(t, 2)[1]; !got.signed || !strings.Contains(got.body, "second delivery") {
		t.Fatalf("the delivery after rotation: signed with the new secret %v, body %s", got.signed, got.body)
	}
	// The attempts, newest first: the receiver failed the second and took the first.
	subID := eval[string](t, tab, `document.querySelector('.panel .subs li').dataset.id`)
	e.waitAttempts(t, ana, subID, 2)
	press(t, tab, ".panel .subs li", "Deliveries")
	rows := `[...document.querySelectorAll('.panel .deliveries tr.delivery')].map(r => [...r.cells].slice(1).map(c => c.textContent).join(' / ')).join('|')`
	waitFor(t, tab, "two attempts", rows+` === 'message.created / 1 / 500 receiver failed|message.created / 1 / 200 delivered'`)
	if eval[string](t, tab, `document.querySelector('.panel .deliveries tr.delivery time').dateTime`) == "" {
		t.Fatal("an attempt shows no time")
	}
	eval[bool](t, tab, `(b => (b.scrollTop = document.querySelector('.panel .subs').offsetTop - b.offsetTop - 40, true))(document.querySelector('.panel-body'))`)
	shot(t, tab, "deliveries")
	checkA11y(t, tab, "deliveries")
	// Attempts come a page at a time (the API's default, 50), newest first; the rest on demand.
	for i := 3; i <= 51; i++ {
		e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": fmt.Sprintf("delivery %d", i)}, nil)
	}
	recv.wait(t, 51)
	e.waitAttempts(t, ana, subID, 51)
	count := `document.querySelectorAll('.panel .deliveries tr.delivery').length`
	press(t, tab, ".panel .subs li", "Refresh")
	waitFor(t, tab, "the newest 50 attempts", count+` === 50`)
	press(t, tab, ".panel .subs li", "Older attempts")
	waitFor(t, tab, "all 51", count+` === 51 && document.querySelector('.panel .deliveries tr.delivery:last-child .delivery-outcome').textContent === '200 delivered'`)
	if eval[bool](t, tab, `[...document.querySelectorAll('.panel .subs li button')].some(b => b.textContent === 'Older attempts')`) {
		t.Fatal("Older attempts is still offered after the last page")
	}

	// Revoked, each goes from its list; the installation last, with its bot's tokens, saying
	// what it ended: its command and subscription were already gone, and the bot had two live
	// tokens (the installation's, and the one claimed with the setup code).
	for _, c := range []struct{ scope, empty string }{
		{".panel .subs li", "No event subscriptions."}, {".panel .commands li", "No slash commands."}, {".panel .installs li", "No apps installed."}} {
		if c.scope == ".panel .installs li" {
			eval[bool](t, tab, `document.querySelector('.panel .installs li input[name=revoke_bot_tokens]').click() ?? true`)
		}
		press(t, tab, c.scope, "Revoke")
		press(t, tab, c.scope, "Revoke?")
		waitFor(t, tab, c.empty, fmt.Sprintf(`document.querySelector('.panel-body').textContent.includes(%q)`, c.empty))
	}
	// The list may empty first on the live event, before the API's answer is drawn.
	waitFor(t, tab, "the installation's revocation saying what it ended",
		`document.querySelector('.panel [role=status]')?.textContent === "Revoked CI notifier: 0 slash commands, 0 event subscriptions, 2 bot tokens."`)
	for _, token := range []string{installToken, botToken} {
		if status, raw := e.bearer(t, token, "GET", "/api/me", nil); status != http.StatusUnauthorized {
			t.Fatalf("a token of the bot after its installation was revoked with its tokens: %d %s, want 401", status, raw)
		}
	}
	var list struct {
		SlashCommands []persist.SlashCommand `json:"slash_commands"`
	}
	e.api(t, ana, "GET", "/api/workspaces/"+eval[string](t, tab, `localStorage.getItem('natter.workspace')`)+"/slash-commands", nil, &list)
	if len(list.SlashCommands) != 0 {
		t.Fatalf("revoked commands still listed: %+v", list.SlashCommands)
	}
}

// hostileBotName is a bot's display name that must stay text wherever it shows.
const hostileBotName = "<img src=x onerror=alert(1)> helper"

// commandMenuFresh: the command menu offers every bot's commands with their argument hints,
// including a bot with no handle, and a menu a bot replaced after the menu was first opened.
func commandMenuFresh(t *testing.T, e *env, ana, bot person, wsID string, tab context.Context) {
	setMenu := func(token string, commands ...map[string]string) {
		t.Helper()
		if status, raw := e.bearer(t, token, "PUT", "/api/bots/self/commands", map[string]any{"commands": commands}); status >= 300 {
			t.Fatalf("PUT /api/bots/self/commands: %d %s", status, raw)
		}
	}
	setMenu(bot.token, map[string]string{"command": "deploy", "description": "Deploy a branch", "args_hint": "<branch> [env]"})
	box := "form.composer .compose-box"
	offered := menuItems + `.sort().join('|')`
	clear := func() {
		eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input')), true))(document.querySelector('`+box+`'))`)
	}
	do(t, tab, "type a slash", mouseClick(box), chromedp.SendKeys(box, "/"))
	waitFor(t, tab, "the deploy command", offered+` === '/deploy <branch> [env]'`)
	clear()
	waitFor(t, tab, "the menu closed", `document.querySelector('.cmd-menu').hidden`)
	// A bot with no handle, and a new command of the first bot, both after the menu was read.
	var created struct {
		BotToken persist.BotToken `json:"bot_token"`
	}
	e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/bots", map[string]any{"display_name": hostileBotName, "token_name": "menu", "scopes": []string{"bot:write"}}, &created)
	setMenu(created.BotToken.Token, map[string]string{"command": "standup", "description": "Start the standup", "args_hint": "[team]"})
	setMenu(bot.token, map[string]string{"command": "deploy", "description": "Deploy a branch", "args_hint": "<branch> [env]"},
		map[string]string{"command": "rollback", "description": "Roll back"})
	do(t, tab, "type a slash again", chromedp.SendKeys(box, "/"))
	waitFor(t, tab, "every bot's commands", offered+` === '/deploy <branch> [env]|/rollback |/standup [team]'`)
	do(t, tab, "type s", chromedp.SendKeys(box, "s"))
	waitFor(t, tab, "the handle-less bot's command", offered+` === '/standup [team]'`)
	if got := eval[string](t, tab, `document.querySelector('.cmd-menu li.cmd .cmd-bot').textContent`); got != hostileBotName {
		t.Fatalf("the standup command is credited to %q, want the bot's name as text", got)
	}
	clear()
}

// waitAttempts waits until the API lists n delivery attempts of the subscription: an attempt is
// stored once its receiver has answered, a moment after the receiver saw it.
func (e *env) waitAttempts(t *testing.T, p person, subID string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var page struct {
			Deliveries []persist.EventDeliveryAttempt `json:"deliveries"`
		}
		e.api(t, p, "GET", "/api/event-subscriptions/"+subID+"/deliveries?limit=200", nil, &page)
		if len(page.Deliveries) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API lists %d attempts, want %d", len(page.Deliveries), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
