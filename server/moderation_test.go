package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func (e *wsEnv) moderate(t *testing.T, token, userID string, body any) *servertest.Response {
	t.Helper()
	return e.patch(t, e.wsPath("/moderation/members/"+userID), token, body)
}

func TestModerationPermissions(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	mod2 := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)
	bot := e.bot(t)
	outsider := e.h.NewUser(t)
	note := map[string]any{"moderation_note": "hello"}

	for _, tc := range []struct {
		name   string
		actor  servertest.Actor
		target string
		body   map[string]any
		status int
		code   persist.Code
	}{
		{"MemberCannotModerate", member, guest.User.ID, note, 403, persist.CodeForbidden},
		{"GuestCannotModerate", guest, member.User.ID, note, 403, persist.CodeForbidden},
		{"OutsiderCannotModerate", outsider, member.User.ID, note, 403, persist.CodeForbidden},
		{"ModeratorNotOnOwner", mod, e.owner.User.ID, map[string]any{"timeout_minutes": 5}, 403, persist.CodeForbidden},
		{"ModeratorNotOnModerator", mod, mod2.User.ID, map[string]any{"blocked": true}, 403, persist.CodeForbidden},
		{"ModeratorNotDemotingModerator", mod, mod2.User.ID, map[string]any{"role": "member"}, 403, persist.CodeForbidden},
		{"ModeratorNotOnSelf", mod, mod.User.ID, note, 403, persist.CodeForbidden},
		{"OwnerNotOnSelf", e.owner, e.owner.User.ID, map[string]any{"role": "member"}, 403, persist.CodeForbidden},
		{"ModeratorCannotAppointModerators", mod, member.User.ID, map[string]any{"role": "moderator"}, 403, persist.CodeForbidden},
		{"NobodyMadeOwnerHere", e.owner, member.User.ID, map[string]any{"role": "owner"}, 400, persist.CodeInvalidRequest},
		{"UnknownRole", e.owner, member.User.ID, map[string]any{"role": "admin"}, 400, persist.CodeInvalidRequest},
		{"BotKeepsItsRole", e.owner, bot.ID, map[string]any{"role": "member"}, 400, persist.CodeInvalidRequest},
		{"NonMemberTarget", e.owner, outsider.User.ID, note, 404, persist.CodeNotFound},
		{"EmptyPatch", e.owner, member.User.ID, map[string]any{}, 400, persist.CodeInvalidRequest},
		{"TwoTimeoutFields", e.owner, member.User.ID, map[string]any{"timeout_minutes": 5, "clear_timeout": true}, 400, persist.CodeInvalidRequest},
		{"ZeroMinutes", e.owner, member.User.ID, map[string]any{"timeout_minutes": 0}, 400, persist.CodeInvalidRequest},
		{"OverAYear", e.owner, member.User.ID, map[string]any{"timeout_minutes": 525601}, 400, persist.CodeInvalidRequest},
		{"HugeMinutes", e.owner, member.User.ID, map[string]any{"timeout_minutes": int64(1) << 60}, 400, persist.CodeInvalidRequest},
		{"PastUntil", e.owner, member.User.ID, map[string]any{"timeout_until": "2001-01-01T00:00:00Z"}, 400, persist.CodeInvalidRequest},
		{"LongNote", e.owner, member.User.ID, map[string]any{"moderation_note": strings.Repeat("n", 1001)}, 400, persist.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e.moderate(t, tc.actor.Token, tc.target, tc.body).RequireError(t, tc.status, tc.code)
		})
	}

	t.Run("ListIsForOwnerAndModerators", func(t *testing.T) {
		t.Parallel()
		path := e.wsPath("/moderation/members")
		e.h.Get(t, path, member.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Get(t, path, guest.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Get(t, path, outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Get(t, path, mod.Token).RequireStatus(t, http.StatusOK)
		e.h.Get(t, path, e.owner.Token).RequireStatus(t, http.StatusOK)
	})
}

func TestModerationActions(t *testing.T) {
	t.Parallel()

	t.Run("TimeoutStopsWritingUntilCleared", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		mod := e.join(t, persist.RoleModerator)
		member := e.join(t, persist.RoleMember)
		r := e.moderate(t, mod.Token, member.User.ID, map[string]any{"timeout_minutes": 30})
		r.RequireStatus(t, http.StatusOK)
		m := e.obj(t, r, "member")
		until, err := time.Parse(time.RFC3339Nano, m["timeout_until"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(30*time.Minute), until, time.Minute)
		require.Equal(t, mod.User.ID, m["moderation_by"])

		create := func() *servertest.Response {
			return e.h.Post(t, e.wsPath("/channels"), member.Token, map[string]any{"name": "mine"})
		}
		create().RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.moderate(t, mod.Token, member.User.ID, map[string]any{"clear_timeout": true}).RequireStatus(t, http.StatusOK)
		create().RequireStatus(t, http.StatusCreated)
	})

	t.Run("TimeoutUntilAnInstant", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		member := e.join(t, persist.RoleMember)
		at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		r := e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"timeout_until": at})
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, at.Format(time.RFC3339Nano), e.obj(t, r, "member")["timeout_until"])
	})

	t.Run("BlockStopsWritingUntilUnblocked", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		member := e.join(t, persist.RoleMember)
		r := e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"blocked": true})
		r.RequireStatus(t, http.StatusOK)
		blockedAt := e.obj(t, r, "member")["blocked_at"]
		require.NotEmpty(t, blockedAt)
		again := e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"blocked": true})
		require.Equal(t, blockedAt, e.obj(t, again, "member")["blocked_at"], "blocking again keeps the first instant")
		e.h.Post(t, e.wsPath("/channels"), member.Token, map[string]any{"name": "mine"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		r = e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"blocked": false})
		require.NotContains(t, e.obj(t, r, "member"), "blocked_at")
		e.h.Post(t, e.wsPath("/channels"), member.Token, map[string]any{"name": "mine"}).RequireStatus(t, http.StatusCreated)
	})

	t.Run("PromoteGuestToMemberOpensTheWorkspace", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
		mod := e.join(t, persist.RoleModerator)
		guest := e.join(t, persist.RoleGuest)
		require.Equal(t, []string{"guest"}, e.channelNames(t, guest.Token))
		r := e.moderate(t, mod.Token, guest.User.ID, map[string]any{"role": "member"})
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "member", e.obj(t, r, "member")["role"])
		require.NotContains(t, e.obj(t, r, "member"), "posts_remaining", "budgets are for guests")
		require.Equal(t, []string{"general", "guest"}, e.channelNames(t, guest.Token))
	})

	t.Run("DemoteToGuestCreatesTheGuestChannel", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		member := e.join(t, persist.RoleMember)
		r := e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"role": "guest"})
		r.RequireStatus(t, http.StatusOK)
		m := e.obj(t, r, "member")
		require.Equal(t, "guest", m["role"])
		require.EqualValues(t, 3, m["post_limit"], "SPEC §Limits: guest posting 3 a day")
		require.EqualValues(t, 3, m["posts_remaining"])
		created := e.eventsOf(t, "channel.created")
		require.Len(t, created, 1)
		require.Equal(t, []string{"guest"}, e.channelNames(t, member.Token))
		e.h.Post(t, e.wsPath("/channels"), member.Token, map[string]any{"name": "mine"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)

		// A post spends the budget, and the moderators see what is left.
		ctx := context.Background()
		require.NoError(t, e.h.Store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelForWrite(ctx, persist.ActorFor(member.User), created[0].ChannelID)
			return err
		}))
		var page struct{ Members []map[string]any }
		e.h.Get(t, e.wsPath("/moderation/members?role=guest"), e.owner.Token).Decode(t, &page)
		require.EqualValues(t, 2, page.Members[0]["posts_remaining"])
	})

	t.Run("TimedOutModeratorCannotManage", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		mod := e.join(t, persist.RoleModerator)
		member := e.join(t, persist.RoleMember)
		e.moderate(t, e.owner.Token, mod.User.ID, map[string]any{"timeout_minutes": 10}).RequireStatus(t, http.StatusOK)
		e.moderate(t, mod.Token, member.User.ID, map[string]any{"blocked": true}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.patch(t, e.wsPath(""), mod.Token, map[string]any{"name": "Mine"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.invite(t, mod.Token, map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Get(t, e.wsPath("/moderation/members"), mod.Token).RequireStatus(t, http.StatusOK)
		e.moderate(t, e.owner.Token, mod.User.ID, map[string]any{"clear_timeout": true}).RequireStatus(t, http.StatusOK)
		e.moderate(t, mod.Token, member.User.ID, map[string]any{"blocked": true}).RequireStatus(t, http.StatusOK)
	})

	t.Run("OwnerAppointsAndDismissesModerators", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		member := e.join(t, persist.RoleMember)
		other := e.join(t, persist.RoleMember)
		e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"role": "moderator"}).RequireStatus(t, http.StatusOK)
		e.moderate(t, member.Token, other.User.ID, map[string]any{"moderation_note": "now I can"}).RequireStatus(t, http.StatusOK)
		e.moderate(t, e.owner.Token, member.User.ID, map[string]any{"role": "member"}).RequireStatus(t, http.StatusOK)
		e.moderate(t, member.Token, other.User.ID, map[string]any{"moderation_note": "not any more"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("EventAndListingCarryModerationState", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		guest := e.join(t, persist.RoleGuest)
		r := e.moderate(t, e.owner.Token, guest.User.ID, map[string]any{"moderation_note": "  watch this one  ", "blocked": true})
		r.RequireStatus(t, http.StatusOK)
		m := e.obj(t, r, "member")
		require.Equal(t, "watch this one", m["moderation_note"])

		ev := e.logged(t, r)
		require.Equal(t, "member.moderation_updated", ev.Type)
		require.Equal(t, e.owner.User.ID, ev.ActorID)
		var payload struct{ Member map[string]any }
		require.NoError(t, json.Unmarshal(ev.Payload, &payload))
		require.Equal(t, guest.User.ID, payload.Member["user"].(map[string]any)["id"])
		require.NotEmpty(t, payload.Member["blocked_at"])
		require.NotContains(t, payload.Member, "moderation_note", "notes stay with the moderators")

		var page struct{ Members []map[string]any }
		e.h.Get(t, e.wsPath("/moderation/members?role=guest"), e.owner.Token).Decode(t, &page)
		require.Len(t, page.Members, 1)
		require.Equal(t, "watch this one", page.Members[0]["moderation_note"])
		require.EqualValues(t, 3, page.Members[0]["posts_remaining"])

		r = e.moderate(t, e.owner.Token, guest.User.ID, map[string]any{"moderation_note": ""})
		require.NotContains(t, e.obj(t, r, "member"), "moderation_note", "an empty note clears it")
	})
}

// channelNames lists the names of the channels token sees in e's workspace.
func (e *wsEnv) channelNames(t *testing.T, token string) []string {
	t.Helper()
	r := e.h.Get(t, e.wsPath("/channels"), token)
	r.RequireStatus(t, http.StatusOK)
	var got struct{ Channels []persist.Channel }
	r.Decode(t, &got)
	names := make([]string, len(got.Channels))
	for i, c := range got.Channels {
		names[i] = c.Name
	}
	return names
}
