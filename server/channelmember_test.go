package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// channelMemberIDs lists the user ids of a channel member page.
func channelMemberIDs(t *testing.T, r *servertest.Response) []string {
	t.Helper()
	r.RequireStatus(t, http.StatusOK)
	var page struct {
		Members []struct {
			User struct{ ID string } `json:"user"`
		} `json:"members"`
		TotalCount *int `json:"total_count"`
	}
	r.Decode(t, &page)
	out := []string{}
	for _, m := range page.Members {
		out = append(out, m.User.ID)
	}
	require.NotNil(t, page.TotalCount)
	require.Equal(t, len(out), *page.TotalCount)
	return out
}

func TestPrivateChannelCreate(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	require.Equal(t, []string{w.member.User.ID, w.memberBot.ID}, channelMemberIDs(t, w.h.Get(t, w.membersPath(), w.member.Token)),
		"the creator is the first member")

	w.createChannel(t, w.guest.Token, map[string]any{"name": "secret", "visibility": "private"}).
		RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.createChannel(t, w.member.Token, map[string]any{"name": "secret", "visibility": "hidden"}).
		RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	_, readOnly := persisttest.Bot(t, w.h.Store, w.owner.User, w.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	w.createChannel(t, readOnly.Token, map[string]any{"name": "secret", "visibility": "private"}).
		RequireError(t, http.StatusForbidden, persist.CodeMissingScope)

	_, admin := persisttest.Bot(t, w.h.Store, w.owner.User, w.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
	r := w.createChannel(t, admin.Token, map[string]any{"name": "bots-only", "visibility": "private"})
	r.RequireStatus(t, http.StatusCreated)
	ch := w.obj(t, r, "channel")
	require.Equal(t, []string{admin.BotUserID}, channelMemberIDs(t, w.h.Get(t, "/api/channels/"+ch["id"].(string)+"/members", admin.Token)),
		"a bot with channels:write that creates a private channel is its member")
	w.h.Get(t, "/api/channels/"+ch["id"].(string)+"/messages", w.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	// Visibility is fixed at creation; repeating it changes nothing.
	w.patch(t, w.wsPathChannel(ch), admin.Token, map[string]any{"visibility": "public"}).
		RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	w.patch(t, w.wsPathChannel(ch), admin.Token, map[string]any{"visibility": "private", "display_title": "Bots"}).
		RequireStatus(t, http.StatusOK)
	w.patch(t, w.wsPathChannel(w.general), w.owner.Token, map[string]any{"visibility": "public"}).RequireStatus(t, http.StatusOK)
}

func (w *privateWorld) wsPathChannel(c map[string]any) string {
	return "/api/channels/" + c["id"].(string)
}

func TestPrivateChannelMembers(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	h, path := w.h, w.membersPath()
	add := func(token, userID string) *servertest.Response {
		return h.Post(t, path, token, map[string]any{"user_id": userID})
	}

	add(w.nonMember.Token, w.nonMember.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	add(w.owner.Token, w.owner.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	add(w.member.Token, w.guest.User.ID).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	add(w.member.Token, w.outsider.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	add(w.member.Token, "").RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	// A public channel has everyone in it who has not left it (issue 30, TestChannelMembersPublic).
	h.Post(t, "/api/channels/"+w.general["id"].(string)+"/members", w.owner.Token, map[string]any{"user_id": w.member.User.ID}).
		RequireStatus(t, http.StatusOK)

	r := add(w.member.Token, w.nonMember.User.ID)
	r.RequireStatus(t, http.StatusCreated)
	ev := w.obj(t, r, "event")
	require.Equal(t, "channel.member_added", ev["type"])
	require.Equal(t, w.private["id"], ev["channel_id"])
	require.Equal(t, w.nonMember.User.ID, ev["payload"].(map[string]any)["user_id"])
	r = add(w.member.Token, w.nonMember.User.ID)
	r.RequireStatus(t, http.StatusOK)
	require.NotContains(t, r.JSON(t), "event", "adding someone already in changes nothing")
	require.Equal(t, []string{w.member.User.ID, w.nonMember.User.ID, w.memberBot.ID}, channelMemberIDs(t, h.Get(t, path, w.nonMember.Token)))

	remove := func(token, userID string) *servertest.Response {
		return h.Do(t, servertest.Request{Method: http.MethodDelete, Path: path + "/" + userID, Token: token})
	}
	remove(w.nonMember.Token, w.memberBot.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	remove(w.guest.Token, w.member.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	remove(w.memberBotTok.Token, w.memberBot.ID).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
	r = remove(w.nonMember.Token, w.nonMember.User.ID)
	r.RequireStatus(t, http.StatusOK)
	require.Equal(t, "channel.member_removed", w.obj(t, r, "event")["type"])
	remove(w.nonMember.Token, w.nonMember.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	// The owner, not in the channel, removes someone from it; the workspace's removal takes
	// them out of its private channels for good.
	remove(w.owner.Token, w.memberBot.ID).RequireStatus(t, http.StatusOK)
	require.Equal(t, []string{w.member.User.ID}, channelMemberIDs(t, h.Get(t, path, w.member.Token)))
	h.Do(t, servertest.Request{Method: http.MethodDelete, Path: w.wsPath("/members/" + w.member.User.ID), Token: w.owner.Token}).
		RequireStatus(t, http.StatusOK)
	persisttest.Member(t, h.Store, w.ws.ID, w.member.User.ID, persist.RoleMember)
	h.Get(t, path, w.member.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

func TestPrivateChannelModeration(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	moderator := w.join(t, persist.RoleModerator)
	r := w.h.Get(t, w.wsPath("/moderation/channels"), moderator.Token)
	r.RequireStatus(t, http.StatusOK)
	var list struct {
		Channels []struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			MemberCount int    `json:"member_count"`
			Archived    bool   `json:"archived"`
		} `json:"channels"`
	}
	r.Decode(t, &list)
	require.Len(t, list.Channels, 1)
	require.Equal(t, "incidents", list.Channels[0].Name)
	require.Equal(t, 2, list.Channels[0].MemberCount)
	w.h.Get(t, w.wsPath("/moderation/channels"), w.member.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Get(t, w.wsPath("/moderation/channels"), w.memberBotTok.Token).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)

	path := w.wsPathChannel(w.private)
	w.patch(t, path, w.nonMember.Token, map[string]any{"archived": true}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	w.patch(t, path, moderator.Token, map[string]any{"name": "renamed"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.patch(t, path, moderator.Token, map[string]any{"archived": true}).RequireStatus(t, http.StatusOK)
	w.patch(t, path, w.owner.Token, map[string]any{"archived": false}).RequireStatus(t, http.StatusOK)
	w.h.Get(t, path+"/messages", moderator.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

// TestPrivateChannelRemovalIsLive: a person removed from a private channel sees their removal
// on their open socket, and none of the channel's events after it.
func TestPrivateChannelRemovalIsLive(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	h := w.h
	h.Post(t, w.membersPath(), w.member.Token, map[string]any{"user_id": w.nonMember.User.ID}).RequireStatus(t, http.StatusCreated)
	s, status := h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + w.ws.ID + "&after_cursor=" + w.head(t),
		Token: w.nonMember.Token})
	require.Equal(t, http.StatusSwitchingProtocols, status)
	privatePosts := "/api/channels/" + w.private["id"].(string) + "/messages"
	h.Post(t, privatePosts, w.member.Token, map[string]any{"body": "before"}).RequireStatus(t, http.StatusCreated)
	require.Equal(t, "message.created", s.Next(t).Type)

	h.Do(t, servertest.Request{Method: http.MethodDelete, Path: w.membersPath() + "/" + w.nonMember.User.ID, Token: w.owner.Token}).
		RequireStatus(t, http.StatusOK)
	h.Post(t, privatePosts, w.member.Token, map[string]any{"body": "after"}).RequireStatus(t, http.StatusCreated)
	h.Post(t, "/api/channels/"+w.general["id"].(string)+"/messages", w.owner.Token, map[string]any{"body": "public"}).
		RequireStatus(t, http.StatusCreated)
	e := s.Next(t)
	require.Equal(t, "channel.member_removed", e.Type, "the person concerned sees their removal")
	e = s.Next(t)
	require.Equal(t, "message.created", e.Type)
	require.Equal(t, w.general["id"], e.ChannelID, "the private channel's next message is not delivered")
}

// TestPrivateChannelNATSFollowsMembership: a bot connected over NATS is cut off when it joins a
// private channel and reconnects with the channel's subject; removed, it is cut off again and
// comes back without it.
func TestPrivateChannelNATSFollowsMembership(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithBotAccess(func(c *streams.BotAccessConfig) { c.RevalidateInterval = time.Hour }))
	bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, nil)
	r := b.h.Post(t, "/api/workspaces/"+b.ws.ID+"/channels", b.member.Token, map[string]any{"name": "ops", "visibility": "private"})
	r.RequireStatus(t, http.StatusCreated)
	private := r.JSON(t)["channel"].(map[string]any)["id"].(string)
	subject := "natter.events." + b.ws.ID + ".pch." + private + ".>"
	nb, err := connectBot(t, b.h, tok, true)
	require.NoError(t, err)
	require.NotContains(t, nb.Replay(t, nil).Subjects, subject)

	reconnected := func() {
		t.Helper()
		select {
		case <-nb.Reconnected:
		case <-time.After(10 * time.Second):
			t.Fatalf("the bot was not cut off and reconnected")
		}
	}
	members := "/api/channels/" + private + "/members"
	b.h.Post(t, members, b.member.Token, map[string]any{"user_id": bot.ID}).RequireStatus(t, http.StatusCreated)
	reconnected()
	page := nb.Replay(t, nil)
	require.Contains(t, page.Subjects, subject)
	nb.Subscribe(t, page.Subjects)
	b.h.Post(t, "/api/channels/"+private+"/messages", b.member.Token, map[string]any{"body": "for the bot"}).RequireStatus(t, http.StatusCreated)
	var processed int64
	if n := len(page.Events); n > 0 {
		processed, _ = persist.ParseCursor(page.Events[n-1].Cursor)
	}
	e, m := nb.NextAfter(t, processed)
	require.Equal(t, "message.created", e.Type)
	require.Equal(t, "natter.events."+b.ws.ID+".pch."+private+".message.created", m.Subject)

	b.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: members + "/" + bot.ID, Token: b.owner.Token}).RequireStatus(t, http.StatusOK)
	reconnected()
	require.NotContains(t, nb.Replay(t, nil).Subjects, subject)
}
