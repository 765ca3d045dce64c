package server_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestClickClackRuntime makes, in order, the calls a ClickClack bot runtime and its human make
// (issue 9): a person posts, threads, reacts, pins, searches, uploads, backfills events and opens
// a socket resuming from a cursor; then creates a bot, mints and claims a setup code, and the
// runtime asks who it is, opens its socket, replies, types, reports progress, publishes its
// command menu and talks in a DM; the person revokes a token, deletes a message and archives
// the channel. Every field a ClickClack client reads is asserted by name (CONTRACT.md
// §Compatibility); the client sends ClickClack's header names only.
func TestClickClackRuntime(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	owner := h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	general := persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, "general")

	// The person's client holds the session cookie, so every write carries X-ClickClack-CSRF.
	human := newCCClient(t, h.URL)
	human.cookie = owner.Token

	// me, workspaces, channels.
	me := human.get("/api/me").want(t, http.StatusOK)
	require.Equal(t, owner.User.ID, str(t, me, "user", "id"))
	workspaces := list(t, human.get("/api/workspaces").want(t, http.StatusOK), "workspaces")
	require.Contains(t, idsOf(t, workspaces), ws.ID)
	channels := list(t, human.get("/api/workspaces/"+ws.ID+"/channels").want(t, http.StatusOK), "channels")
	require.Contains(t, idsOf(t, channels), general.ID)

	// Post with a nonce: the event names the message, its author, nonce and correlation id.
	posted := human.call(http.MethodPost, "/api/channels/"+general.ID+"/messages",
		map[string]any{"body": "release notes for the kestrel build", "nonce": "cc-nonce-1"},
		map[string]string{"X-Correlation-ID": "cc-corr-post"}).want(t, http.StatusCreated)
	rootID := str(t, posted, "message", "id")
	require.Equal(t, "cc-nonce-1", str(t, posted, "message", "nonce"))
	created := field(t, posted, "event").(map[string]any)
	require.Equal(t, "message.created", str(t, created, "type"))
	require.Equal(t, rootID, str(t, created, "message_id"), "the envelope keeps message_id")
	require.Equal(t, rootID, str(t, created, "payload", "message_id"))
	require.Equal(t, owner.User.ID, str(t, created, "payload", "author_id"))
	require.Equal(t, "cc-nonce-1", str(t, created, "payload", "nonce"))
	require.Equal(t, "cc-corr-post", str(t, created, "payload", "correlation_id"))
	require.Equal(t, general.ID, str(t, created, "payload", "channel_id"))
	postCursor := str(t, created, "cursor")

	// Look the message up by its nonce.
	byNonce := human.get("/api/messages/by-nonce?workspace_id=" + ws.ID + "&nonce=cc-nonce-1")
	require.Equal(t, rootID, str(t, byNonce.want(t, http.StatusOK), "message", "id"))
	require.Equal(t, "supported", byNonce.header.Get("X-ClickClack-Message-Nonce"))

	// Thread: reply, then read it.
	replied := human.call(http.MethodPost, "/api/messages/"+rootID+"/thread/replies",
		map[string]any{"body": "first reply", "nonce": "cc-nonce-2"},
		map[string]string{"X-Correlation-ID": "cc-corr-reply"}).want(t, http.StatusCreated)
	replyID := str(t, replied, "message", "id")
	threadEvents := list(t, replied, "events")
	require.Len(t, threadEvents, 2)
	require.Equal(t, "thread.reply_created", str(t, threadEvents[0], "type"))
	require.Equal(t, replyID, str(t, threadEvents[0], "payload", "message_id"))
	require.Equal(t, owner.User.ID, str(t, threadEvents[0], "payload", "author_id"))
	require.Equal(t, "cc-nonce-2", str(t, threadEvents[0], "payload", "nonce"))
	require.Equal(t, "cc-corr-reply", str(t, threadEvents[0], "payload", "correlation_id"))
	require.Equal(t, "thread.state_updated", str(t, threadEvents[1], "type"))
	require.Equal(t, rootID, str(t, threadEvents[1], "payload", "root_message_id"))
	thread := human.get("/api/messages/"+rootID+"/thread").want(t, http.StatusOK)
	require.Equal(t, rootID, str(t, thread, "root", "id"))
	require.Equal(t, []string{replyID}, idsOf(t, list(t, thread, "replies")))

	// Reactions: add and remove.
	reacted := human.post("/api/messages/"+rootID+"/reactions", map[string]any{"emoji": "🚀"}).want(t, http.StatusCreated)
	require.Equal(t, "reaction.added", str(t, reacted, "event", "type"))
	require.Equal(t, rootID, str(t, reacted, "event", "payload", "message_id"))
	require.Equal(t, "🚀", str(t, reacted, "event", "payload", "emoji"))
	require.Equal(t, owner.User.ID, str(t, reacted, "event", "payload", "user_id"))
	require.Equal(t, float64(1), field(t, reacted, "event", "payload", "count"))
	unreacted := human.call(http.MethodDelete, "/api/messages/"+rootID+"/reactions/"+url.PathEscape("🚀"), nil, nil).want(t, http.StatusOK)
	require.Equal(t, "reaction.removed", str(t, unreacted, "event", "type"))
	require.Equal(t, float64(0), field(t, unreacted, "event", "payload", "count"))

	// Pins: list (none yet), add two, list newest first as full messages, remove one.
	require.Empty(t, list(t, human.get("/api/channels/"+general.ID+"/pins").want(t, http.StatusOK), "messages"))
	other := human.post("/api/channels/"+general.ID+"/messages", map[string]any{"body": "pin me too"}).want(t, http.StatusCreated)
	otherID := str(t, other, "message", "id")
	for _, id := range []string{rootID, otherID} {
		pinned := human.post("/api/channels/"+general.ID+"/pins", map[string]any{"message_id": id}).want(t, http.StatusCreated)
		require.Equal(t, id, str(t, pinned, "pinned_message", "id"))
		require.Equal(t, owner.User.ID, str(t, pinned, "pinned_message", "author_id"))
		require.Equal(t, "pin.added", str(t, pinned, "event", "type"))
		require.Equal(t, general.ID, str(t, pinned, "event", "payload", "channel_id"))
		require.Equal(t, id, str(t, pinned, "event", "payload", "message_id"))
		require.Equal(t, owner.User.ID, str(t, pinned, "event", "payload", "pinned_by"))
	}
	pinList := list(t, human.get("/api/channels/"+general.ID+"/pins").want(t, http.StatusOK), "messages")
	require.Equal(t, []string{otherID, rootID}, idsOf(t, pinList), "newest pin first")
	require.Equal(t, "pin me too", str(t, pinList[0], "body"), "full message objects")
	unpinned := human.call(http.MethodDelete, "/api/channels/"+general.ID+"/pins/"+otherID, nil, nil).want(t, http.StatusOK)
	require.Equal(t, "pin.removed", str(t, unpinned, "event", "type"))
	require.Equal(t, otherID, str(t, unpinned, "event", "payload", "message_id"))
	require.Equal(t, []string{rootID}, idsOf(t, list(t, human.get("/api/channels/"+general.ID+"/pins").want(t, http.StatusOK), "messages")))

	// Search.
	found := list(t, human.get("/api/search?workspace_id="+ws.ID+"&q=kestrel").want(t, http.StatusOK), "results")
	require.Equal(t, []string{rootID}, idsOf(t, found))

	// Upload, then attach to the root: message.updated names the message too.
	uploaded := human.upload("/api/uploads?workspace_id="+ws.ID, "notes.txt", "kestrel notes").want(t, http.StatusCreated)
	uploadID := str(t, uploaded, "upload", "id")
	attached := human.post("/api/messages/"+rootID+"/attachments", map[string]any{"upload_id": uploadID}).want(t, http.StatusOK)
	require.Equal(t, "message.updated", str(t, attached, "event", "type"))
	require.Equal(t, rootID, str(t, attached, "event", "payload", "message_id"))
	require.Equal(t, owner.User.ID, str(t, attached, "event", "payload", "author_id"))
	require.Equal(t, "cc-nonce-1", str(t, attached, "event", "payload", "nonce"))
	require.Contains(t, field(t, attached, "event", "payload"), "correlation_id")
	require.Equal(t, []string{uploadID}, idsOf(t, list(t, attached, "message", "attachments")))

	// Backfill from the post's cursor, two at a time, to the end of the log.
	page := human.get("/api/realtime/events?workspace_id="+ws.ID+"&after_cursor="+postCursor+"&limit=2").want(t, http.StatusOK)
	events := list(t, page, "events")
	require.Len(t, events, 2)
	require.Equal(t, true, field(t, page, "has_more"))
	require.Equal(t, str(t, events[1], "cursor"), str(t, page, "next_cursor"))
	require.Equal(t, "thread.reply_created", str(t, events[0], "type"), "the event right after the cursor")
	require.Equal(t, replyID, str(t, events[0], "payload", "message_id"), "stored payloads carry the ids")
	require.Equal(t, "cc-corr-reply", str(t, events[0], "payload", "correlation_id"))
	resumeCursor := str(t, events[0], "cursor")
	var tail string
	for cursor := str(t, page, "next_cursor"); ; {
		page = human.get("/api/realtime/events?workspace_id="+ws.ID+"&after_cursor="+cursor+"&limit=2").want(t, http.StatusOK)
		cursor = str(t, page, "next_cursor")
		if field(t, page, "has_more") == false {
			tail = cursor
			break
		}
	}
	require.Equal(t, str(t, attached, "event", "cursor"), tail, "the attachment's event is the newest")

	// The person's socket resumes after the reply's cursor: the next event is the one after it.
	humanSocket := dialCC(t, h, ws.ID, resumeCursor, owner.Token)
	resumed := humanSocket.await(t, "thread.state_updated", nil)
	require.Equal(t, rootID, str(t, resumed, "payload", "root_message_id"))

	runtime := clickClackBotSetup(t, h, human, ws, general)
	clickClackBotRun(t, h, human, humanSocket, runtime, rootID)
}

// ccRuntime is a bot as its runtime holds it after setup.
type ccRuntime struct {
	ws          persist.Workspace
	general     persist.Channel
	botID       string
	client      *ccClient // the claimed token (bot:write and agent_activity:write)
	createdWith *ccClient // the bot:write token from bot creation
	createdID   string    // that token's id
}

// clickClackBotSetup creates a bot with bot:write, mints a setup code with agent_activity:write
// and claims it, as an installer does, and checks that both tokens can ask GET /api/me.
func clickClackBotSetup(t *testing.T, h *servertest.Harness, human *ccClient, ws persist.Workspace, general persist.Channel) ccRuntime {
	t.Helper()
	bot := human.post("/api/workspaces/"+ws.ID+"/bots", map[string]any{"display_name": "Runtime Bot", "handle": "runtime",
		"scopes": []string{"bot:write"}}).want(t, http.StatusCreated)
	botID := str(t, bot, "bot", "id")
	require.Contains(t, list(t, bot, "bot_token", "scopes"), "profile:read", "bot:write includes profile:read")
	rt := ccRuntime{ws: ws, general: general, botID: botID,
		createdWith: human.withToken(str(t, bot, "bot_token", "token")), createdID: str(t, bot, "bot_token", "id")}
	require.Equal(t, botID, str(t, rt.createdWith.get("/api/me").want(t, http.StatusOK), "user", "id"))

	minted := human.post("/api/workspaces/"+ws.ID+"/bots/"+botID+"/setup-codes",
		map[string]any{"name": "runtime", "scopes": []string{"bot:write", "agent_activity:write"}}).want(t, http.StatusCreated)
	code := str(t, minted, "setup_code", "code")
	require.Equal(t, float64(1), field(t, minted, "setup_code", "contract_version"))
	require.Equal(t, h.URL, str(t, minted, "setup_code", "api_base_url"), "the request's scheme and host without --public-url")
	claimURL := str(t, minted, "setup_code", "claim_url")
	require.Equal(t, h.URL+"/api/bot-setup-codes/claim", claimURL)

	// The installer claims at claim_url exactly, without credentials.
	claimed := newCCClient(t, h.URL).post(claimURL, map[string]any{"code": code}).want(t, http.StatusOK)
	require.Regexp(t, `^ccb_`, str(t, claimed, "token"))
	require.Equal(t, botID, str(t, claimed, "bot", "id"))
	require.Equal(t, "runtime", str(t, claimed, "bot", "handle"))
	require.Equal(t, "Runtime Bot", str(t, claimed, "bot", "display_name"))
	require.Equal(t, ws.ID, str(t, claimed, "workspace", "id"))
	require.Equal(t, ws.Name, str(t, claimed, "workspace", "name"))
	require.Equal(t, ws.Slug, str(t, claimed, "workspace", "slug"))
	require.Equal(t, ws.RouteID, str(t, claimed, "workspace", "route_id"))
	require.Equal(t, "channel:general", str(t, claimed, "defaults", "defaultTo"))
	require.Equal(t, h.URL, str(t, claimed, "api_base_url"))
	require.Equal(t, float64(1), field(t, claimed, "contract_version"))

	// The runtime stores api_base_url and asks who it is first.
	rt.client = newCCClient(t, str(t, claimed, "api_base_url")).withToken(str(t, claimed, "token"))
	require.Equal(t, botID, str(t, rt.client.get("/api/me").want(t, http.StatusOK), "user", "id"))
	require.Contains(t, idsOf(t, list(t, rt.client.get("/api/workspaces").want(t, http.StatusOK), "workspaces")), ws.ID)
	return rt
}

// clickClackBotRun is the runtime at work: its socket, a reply, typing, progress, its command
// menu, a DM; then the person revokes the creation token, deletes the root and archives the
// channel, and the runtime sees each.
func clickClackBotRun(t *testing.T, h *servertest.Harness, human *ccClient, humanSocket ccSocket, rt ccRuntime, rootID string) {
	t.Helper()
	ws, general, bot := rt.ws, rt.general, rt.client

	// The runtime backfills to the end, then opens its socket from there.
	var cursor string
	for {
		page := bot.get("/api/realtime/events?workspace_id="+ws.ID+"&after_cursor="+cursor+"&limit=500").want(t, http.StatusOK)
		cursor = str(t, page, "next_cursor")
		if field(t, page, "has_more") == false {
			break
		}
	}
	botSocket := dialCC(t, h, ws.ID, cursor, bot.token)
	// A second socket on the creation token, to see it closed when that token is revoked.
	doomedSocket := dialCC(t, h, ws.ID, cursor, rt.createdWith.token)

	// The person mentions the bot; the runtime finds the message and its author in the payload.
	asked := human.call(http.MethodPost, "/api/channels/"+general.ID+"/messages",
		map[string]any{"body": "@runtime deploy please", "nonce": "cc-nonce-3"},
		map[string]string{"X-Correlation-ID": "cc-corr-ask"}).want(t, http.StatusCreated)
	askID := str(t, asked, "message", "id")
	seen := botSocket.await(t, "message.created", about(askID))
	require.Equal(t, askID, str(t, seen, "message_id"), "the envelope keeps message_id")
	require.Equal(t, owner(t, human), str(t, seen, "payload", "author_id"))
	require.Equal(t, "cc-nonce-3", str(t, seen, "payload", "nonce"))
	require.Equal(t, "cc-corr-ask", str(t, seen, "payload", "correlation_id"))

	// The bot replies in the thread; both sockets see whose reply it is.
	reply := bot.call(http.MethodPost, "/api/messages/"+askID+"/thread/replies",
		map[string]any{"body": "deploying", "nonce": "bot-nonce-1"},
		map[string]string{"X-Correlation-ID": "cc-corr-bot"}).want(t, http.StatusCreated)
	botReplyID := str(t, reply, "message", "id")
	for _, s := range []ccSocket{humanSocket, botSocket} {
		e := s.await(t, "thread.reply_created", about(botReplyID))
		require.Equal(t, rt.botID, str(t, e, "payload", "author_id"), "a runtime ignores its own events by author_id")
		require.Equal(t, "bot-nonce-1", str(t, e, "payload", "nonce"))
		require.Equal(t, "cc-corr-bot", str(t, e, "payload", "correlation_id"))
	}

	// Typing: the server names the publisher and the channel, whatever the client claimed.
	for _, typ := range []string{"typing.started", "typing.stopped"} {
		typed := bot.post("/api/realtime/ephemeral", map[string]any{"workspace_id": ws.ID, "channel_id": general.ID, "type": typ,
			"payload": map[string]any{"user_id": owner(t, human), "channel_id": "chn_forged"}}).want(t, http.StatusAccepted)
		require.Equal(t, rt.botID, str(t, typed, "event", "payload", "user_id"))
		e := humanSocket.await(t, typ, nil)
		require.Equal(t, "", str(t, e, "cursor"), "ephemeral events are never stored")
		require.Equal(t, rt.botID, str(t, e, "payload", "user_id"))
		require.Equal(t, general.ID, str(t, e, "payload", "channel_id"))
	}

	// Agent progress needs agent_activity:write (the spec, not ClickClack's bot:write).
	progress := map[string]any{"workspace_id": ws.ID, "channel_id": general.ID, "type": "agent.progress",
		"payload": map[string]any{"turn_id": "t1", "seq": 1, "op": "append", "user_id": "usr_forged"}}
	require.Equal(t, http.StatusForbidden, rt.createdWith.post("/api/realtime/ephemeral", progress).status)
	bot.post("/api/realtime/ephemeral", progress).want(t, http.StatusAccepted)
	e := humanSocket.await(t, "agent.progress", nil)
	require.Equal(t, rt.botID, str(t, e, "payload", "user_id"))
	require.Equal(t, "t1", str(t, e, "payload", "turn_id"), "the client's own fields pass through")

	// The command menu, as the workspace lists it.
	menu := []map[string]any{{"command": "deploy", "description": "Deploy a branch", "args_hint": "<branch>"}}
	bot.call(http.MethodPut, "/api/bots/self/commands", map[string]any{"commands": menu}, nil).want(t, http.StatusOK)
	entries := list(t, bot.get("/api/workspaces/"+ws.ID+"/bot-commands").want(t, http.StatusOK), "bot_commands")
	require.Len(t, entries, 1)
	require.Equal(t, "/deploy", str(t, entries[0], "command"))
	require.Equal(t, rt.botID, str(t, entries[0], "bot", "id"))
	require.Equal(t, "runtime", str(t, entries[0], "bot", "handle"))
	require.Equal(t, "Runtime Bot", str(t, entries[0], "bot", "display_name"))
	require.Nil(t, field(t, entries[0], "bot", "avatar_url"), "present, null when unset")

	// A DM: the bot opens it and writes; the person types back.
	dm := str(t, bot.post("/api/dms", map[string]any{"workspace_id": ws.ID, "member_ids": []string{owner(t, human)}}).
		want(t, http.StatusCreated), "conversation", "id")
	said := bot.post("/api/dms/"+dm+"/messages", map[string]any{"body": "done", "nonce": "bot-nonce-2"}).want(t, http.StatusCreated)
	require.Equal(t, dm, str(t, said, "event", "payload", "direct_conversation_id"))
	require.Equal(t, rt.botID, str(t, said, "event", "payload", "author_id"))
	require.Contains(t, idsOf(t, list(t, human.get("/api/dms?workspace_id="+ws.ID).want(t, http.StatusOK), "conversations")), dm)
	seen = humanSocket.await(t, "message.created", about(str(t, said, "message", "id")))
	require.Equal(t, "bot-nonce-2", str(t, seen, "payload", "nonce"))
	human.post("/api/realtime/ephemeral", map[string]any{"workspace_id": ws.ID, "direct_conversation_id": dm,
		"type": "typing.started"}).want(t, http.StatusAccepted)
	e = botSocket.await(t, "typing.started", func(p map[string]any) bool { return p["direct_conversation_id"] == dm })
	require.Equal(t, owner(t, human), str(t, e, "payload", "user_id"))

	// The person revokes the creation token: its calls fail and its socket closes with 1008.
	revoked := human.post("/api/bot-tokens/"+rt.createdID+"/revoke", nil).want(t, http.StatusOK)
	require.NotEmpty(t, str(t, revoked, "bot_token", "revoked_at"))
	require.Equal(t, http.StatusUnauthorized, rt.createdWith.get("/api/me").status)
	require.EqualValues(t, 1008, doomedSocket.ExpectClose(t))

	// The person deletes the root: the runtime learns which message went.
	deleted := human.call(http.MethodDelete, "/api/messages/"+rootID, nil, nil).want(t, http.StatusOK)
	require.Equal(t, "message.deleted", str(t, deleted, "event", "type"))
	e = botSocket.await(t, "message.deleted", about(rootID))
	require.Equal(t, owner(t, human), str(t, e, "payload", "author_id"))
	require.Equal(t, "cc-nonce-1", str(t, e, "payload", "nonce"))
	require.Contains(t, e["payload"], "correlation_id")

	// And archives the channel.
	human.call(http.MethodPatch, "/api/channels/"+general.ID, map[string]any{"archived": true}, nil).want(t, http.StatusOK)
	e = botSocket.await(t, "channel.updated", nil)
	require.Equal(t, general.ID, str(t, e, "payload", "channel_id"))
	require.Equal(t, true, field(t, e, "payload", "archived"))
}

// owner is the person behind the human client, as GET /api/me names them.
func owner(t *testing.T, human *ccClient) string {
	t.Helper()
	return str(t, human.get("/api/me").want(t, http.StatusOK), "user", "id")
}

// idsOf lists the id of each object.
func idsOf(t *testing.T, items []any) []string {
	t.Helper()
	out := []string{}
	for _, it := range items {
		out = append(out, str(t, it, "id"))
	}
	return out
}
