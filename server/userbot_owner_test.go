package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/streams"
)

// TestUserBotNeverExceedsItsOwner: SPEC, a user bot "can never exceed the owner's permissions".
// The bundle's member owns a user bot; the workspace owner then restricts the member.
func TestUserBotNeverExceedsItsOwner(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, opts ...servertest.Option) (*realtimeBundle, persist.User, persist.BotToken) {
		b := setupRealtime(t, opts...)
		bot, tok := persisttest.Bot(t, b.h.Store, b.member.User, b.ws.ID, &persisttest.BotOpts{UserBot: true,
			Scopes: []string{"bot:write"}})
		return b, bot, tok
	}
	moderate := func(t *testing.T, b *realtimeBundle, body map[string]any) {
		t.Helper()
		b.h.Do(t, servertest.Request{Method: http.MethodPatch, Token: b.owner.Token, Body: body,
			Path: "/api/workspaces/" + b.ws.ID + "/moderation/members/" + b.member.User.ID}).RequireStatus(t, http.StatusOK)
	}
	post := func(t *testing.T, b *realtimeBundle, token, channelID string) *servertest.Response {
		t.Helper()
		return b.h.Post(t, "/api/channels/"+channelID+"/messages", token, map[string]any{"body": "from the bot"})
	}
	uploadAs := func(t *testing.T, b *realtimeBundle, token string) *servertest.Response {
		t.Helper()
		return upload(t, b.h, token, "?workspace_id="+b.ws.ID, filePart{Name: "a.txt", ContentType: "text/plain", Data: []byte("hi")})
	}

	t.Run("OwnerBlockedBotCannotPostOrUpload", func(t *testing.T) {
		t.Parallel()
		b, _, tok := setup(t)
		post(t, b, tok.Token, b.general).RequireStatus(t, http.StatusCreated)
		moderate(t, b, map[string]any{"blocked": true})
		post(t, b, tok.Token, b.general).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		uploadAs(t, b, tok.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		moderate(t, b, map[string]any{"blocked": false})
		post(t, b, tok.Token, b.general).RequireStatus(t, http.StatusCreated)
	})
	t.Run("OwnerTimedOutBotCannotPost", func(t *testing.T) {
		t.Parallel()
		b, _, tok := setup(t)
		moderate(t, b, map[string]any{"timeout_minutes": 30})
		post(t, b, tok.Token, b.general).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		uploadAs(t, b, tok.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		moderate(t, b, map[string]any{"clear_timeout": true})
		post(t, b, tok.Token, b.general).RequireStatus(t, http.StatusCreated)
	})
	t.Run("OwnerMadeGuestBotFollowsGuestRules", func(t *testing.T) {
		t.Parallel()
		b, _, tok := setup(t)
		b.h.Post(t, "/api/channels/"+b.general+"/messages", b.owner.Token, map[string]any{"body": "needle"}).
			RequireStatus(t, http.StatusCreated)
		search := func() []any {
			r := b.h.Get(t, "/api/search?workspace_id="+b.ws.ID+"&q=needle", tok.Token)
			r.RequireStatus(t, http.StatusOK)
			return r.JSON(t)["results"].([]any)
		}
		require.Len(t, search(), 1)
		b.h.Get(t, "/api/channels/"+b.general+"/messages", tok.Token).RequireStatus(t, http.StatusOK)
		moderate(t, b, map[string]any{"role": "guest"})
		require.Empty(t, search())
		b.h.Get(t, "/api/channels/"+b.general+"/messages", tok.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		post(t, b, tok.Token, b.general).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		uploadAs(t, b, tok.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		// The guest budget (SPEC: 3 posts a day) is the owner's and the bot's together.
		post(t, b, b.member.Token, b.guestChannel).RequireStatus(t, http.StatusCreated)
		post(t, b, tok.Token, b.guestChannel).RequireStatus(t, http.StatusCreated)
		post(t, b, b.member.Token, b.guestChannel).RequireStatus(t, http.StatusCreated)
		post(t, b, tok.Token, b.guestChannel).RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		post(t, b, b.member.Token, b.guestChannel).RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	})
	t.Run("OwnerMadeGuestNarrowsTheBotSocket", func(t *testing.T) {
		t.Parallel()
		// Every delivery revalidates first, as after the announcement of the owner's change.
		b, _, tok := setup(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Nanosecond }))
		s := b.dial(t, tok.Token, "2")
		first := b.add(t, persist.EventInput{ChannelID: b.general})
		require.Equal(t, persist.FormatCursor(first), s.Next(t).Cursor)
		moderate(t, b, map[string]any{"role": "guest"})
		// The flush of the next event rechecks the socket first (the interval is 1 ns), so once it
		// arrives the socket reads as the owner now may.
		upTo := func(s *servertest.Socket, cursor int64) {
			t.Helper()
			for {
				e := s.Next(t)
				if e.Cursor == persist.FormatCursor(cursor) {
					return
				}
				require.NotEqual(t, b.general, e.ChannelID, "the general channel is closed to a guest's bot")
			}
		}
		upTo(s, b.add(t, persist.EventInput{ChannelID: b.guestChannel}))
		hidden := b.add(t, persist.EventInput{ChannelID: b.general})
		last := b.add(t, persist.EventInput{ChannelID: b.guestChannel})
		require.Equal(t, persist.FormatCursor(last), s.Next(t).Cursor, "the general channel is closed to a guest's bot")

		// A socket opened now backfills as the guest the bot is.
		again := b.dial(t, tok.Token, persist.FormatCursor(first))
		upTo(again, last)
		require.Greater(t, last, hidden)
	})
	t.Run("OwnerMadeGuestNarrowsTheBotSocketOnTheAnnouncement", func(t *testing.T) {
		t.Parallel()
		// No periodic recheck runs within the test: the announcement of the owner's change makes
		// the socket hold live events until it has checked again.
		b, _, tok := setup(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Hour }))
		s := b.dial(t, tok.Token, "2")
		first := b.add(t, persist.EventInput{ChannelID: b.general})
		require.Equal(t, persist.FormatCursor(first), s.Next(t).Cursor)
		moderate(t, b, map[string]any{"role": "guest"})
		b.add(t, persist.EventInput{ChannelID: b.general})
		last := b.add(t, persist.EventInput{ChannelID: b.guestChannel})
		for {
			e := s.Next(t)
			require.NotEqual(t, b.general, e.ChannelID, "the general channel is closed to a guest's bot")
			if e.Cursor == persist.FormatCursor(last) {
				break
			}
		}
	})
	t.Run("OwnerChangeCutsTheBotsNATSConnectionAtOnce", func(t *testing.T) {
		t.Parallel()
		// No periodic recheck runs within the test: the announcement of the owner's change does it.
		b, _, tok := setup(t, servertest.WithBotAccess(func(c *streams.BotAccessConfig) { c.RevalidateInterval = time.Hour }))
		nb, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		require.Contains(t, nb.Replay(t, nil).Subjects, "natter.events."+b.ws.ID+".ch.>")
		moderate(t, b, map[string]any{"role": "guest"})
		nb.ExpectClosed(t)

		again, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		page := again.Replay(t, nil)
		require.NotContains(t, page.Subjects, "natter.events."+b.ws.ID+".ch.>")
		require.Contains(t, page.Subjects, "natter.events."+b.ws.ID+".ch."+b.guestChannel+".>")
		for _, e := range page.Events {
			require.NotEqual(t, b.general, e.ChannelID)
		}
	})
	t.Run("OwnerGuestBotSubscriptionSkipsTheGeneralChannel", func(t *testing.T) {
		t.Parallel()
		b, bot, _ := setup(t)
		hk := newHook(t, nil)
		// Only a user bot's owner mints its tokens, and only managers install: the owner is a
		// moderator while she installs it.
		moderate(t, b, map[string]any{"role": "moderator"})
		r := b.h.Post(t, "/api/workspaces/"+b.ws.ID+"/app-installations", b.member.Token, map[string]any{"app_slug": "acme",
			"bot_user_id": bot.ID})
		r.RequireStatus(t, http.StatusCreated)
		inst := r.JSON(t)["app_installation"].(map[string]any)["id"].(string)
		r = b.h.Post(t, "/api/workspaces/"+b.ws.ID+"/event-subscriptions", b.member.Token, map[string]any{
			"app_installation_id": inst, "event_types": []string{"message.created"}, "callback_url": hk.srv.URL})
		r.RequireStatus(t, http.StatusCreated)
		hk.setSecret(r.JSON(t)["event_subscription"].(map[string]any)["signing_secret"].(string))
		moderate(t, b, map[string]any{"role": "guest"})
		b.h.Post(t, "/api/channels/"+b.general+"/messages", b.owner.Token, map[string]any{"body": "members only"}).
			RequireStatus(t, http.StatusCreated)
		r = b.h.Post(t, "/api/channels/"+b.guestChannel+"/messages", b.owner.Token, map[string]any{"body": "for guests"})
		r.RequireStatus(t, http.StatusCreated)
		want := r.JSON(t)["message"].(map[string]any)["id"].(string)
		select {
		case call := <-hk.got:
			require.Contains(t, string(call.body), want, "the first delivery is the guest channel's message")
		case <-time.After(10 * time.Second):
			t.Fatalf("no delivery")
		}
	})
}
