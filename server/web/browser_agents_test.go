package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
)

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
