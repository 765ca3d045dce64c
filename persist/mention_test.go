package persist_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestMentionNamesMatchGo holds migration 0030's mention_names, which fills the index of the
// Mentions view, to the rule push and email apply (persist.MentionedHandles).
func TestMentionNamesMatchGo(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	conn, err := pgx.Connect(t.Context(), persisttest.StoreURL(t, store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(t.Context()) })
	many := ""
	for i := range 60 {
		many += " @p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"hi @Ann and @bob, @here!", []string{"here", "ann", "bob"}},
		{"mail ops@here.example", nil},
		{"@@ann", nil},
		{"(@channel)", []string{"channel"}},
		{"@ann@bob x", nil},
		{"@a", nil},
		{"@" + strings.Repeat("a", 33), nil},
		{"@" + strings.Repeat("a", 32), []string{strings.Repeat("a", 32)}},
		{"@ann @ANN @EVERYONE", []string{"everyone", "ann"}},
		{"é@ann @ann-x @bo…", []string{"ann", "ann-x", "bo"}},
		{"@channels @hereafter", []string{"channels", "hereafter"}},
		{many + " @here", nil}, // 60 names: the broadcast first, then the first 49 people
	} {
		var got []string
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT mention_names($1)`, tc.body).Scan(&got))
		want := tc.want
		if want == nil {
			want = persist.MentionedHandles(tc.body, 1000)
		}
		if len(want) > 50 {
			require.Equal(t, "here", want[len(want)-1])
			want = append([]string{"here"}, want[:49]...)
		}
		if len(want) == 0 {
			want = []string{}
		}
		require.Equal(t, want, got, "%q", tc.body)
		goNames := persist.MentionedHandles(tc.body, 1000)
		if len(goNames) <= 50 {
			require.ElementsMatch(t, goNames, got, "%q: the same names as Go", tc.body)
		}
	}
}

// TestAddresses pins who a message addresses (issue 30): an @mention of the handle, @channel and
// @everyone always, @here only while online.
func TestAddresses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body   string
		online bool
		want   bool
	}{
		{"hi @ada", false, true},
		{"@channel deploy", false, true},
		{"[@everyone]", false, true},
		{"@HERE anyone?", true, true},
		{"@here anyone?", false, false},
		{"ops@here.example", true, false},
		{"@channels", false, false},
		{"@everyone-else", false, false},
		{"nothing", true, false},
	} {
		require.Equal(t, tc.want, persist.Addresses(tc.body, "ada", tc.online), "%q online=%v", tc.body, tc.online)
	}
}

// TestPushRecipientsBroadcast pins who Web Push and Pushover reach for a broadcast at the
// default level (mentions): @channel and @everyone every member who reads the channel, @here
// only the members online in the workspace when it is selected, and none who muted it.
func TestPushRecipientsBroadcast(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := t.Context()
	owner := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), ws.ID, "general")
	online, offline, muted := persisttest.User(t, store, nil), persisttest.User(t, store, nil), persisttest.User(t, store, nil)
	for _, u := range []persist.User{online, offline, muted} {
		persisttest.Member(t, store, ws.ID, u.ID, persist.RoleMember)
	}
	conn, err := pgx.Connect(ctx, persisttest.StoreURL(t, store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	_, err = conn.Exec(ctx, `UPDATE users SET pushover_enabled = true, pushover_user_key = 'abcdefghijABCDEFGHIJ0123456789' WHERE id = ANY($1)`,
		[]string{online.ID, offline.ID, muted.ID})
	require.NoError(t, err)
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.NotificationPreference, error) {
		return tx.NotificationPreferenceSet(ctx, persist.ActorFor(muted), general.ID, persist.NotifyMuted)
	})
	require.NoError(t, err)
	_, _, err = store.PresenceFlush(ctx, "rep_mentions_"+ws.ID, time.Minute, []persist.PresenceKey{{WorkspaceID: ws.ID, UserID: online.ID}}, nil)
	require.NoError(t, err)

	pushed := func(body string) []string {
		t.Helper()
		m, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(ctx, persist.ActorFor(owner), persist.Place{ChannelID: general.ID}, persist.MessageCreateParams{Body: body})
		})
		require.NoError(t, err)
		targets, err := persist.ReadV(ctx, store, func(tx *persist.Reader) ([]persist.PushTarget, error) {
			_, targets, err := tx.PushRecipients(ctx, ws.ID, m.Message.ID, true)
			return targets, err
		})
		require.NoError(t, err)
		var ids []string
		for _, tg := range targets {
			ids = append(ids, tg.UserID)
		}
		return ids
	}
	require.ElementsMatch(t, []string{online.ID, offline.ID}, pushed("@channel release at 5"))
	require.ElementsMatch(t, []string{online.ID, offline.ID}, pushed("(@everyone) lunch"))
	require.ElementsMatch(t, []string{online.ID}, pushed("@here quick sync?"))
	require.Empty(t, pushed("ping ops@here.example"))
}

// TestEmailSelectsBroadcast: missed-activity email treats @channel and @everyone as mentions of
// every reader of a channel, and never @here, which is for the people present.
func TestEmailSelectsBroadcast(t *testing.T) {
	t.Parallel()
	root := func(body string) persist.Message { return persist.Message{ID: "msg_r", ChannelID: "chn_x", Body: body} }
	parent := "msg_r"
	reply := func(body string) persist.Message {
		return persist.Message{ID: "msg_y", ChannelID: "chn_x", ParentMessageID: &parent, Body: body}
	}
	for _, tc := range []struct {
		m    persist.Message
		want bool
	}{
		{root("@channel release at 5"), true},
		{root("(@everyone) lunch"), true},
		{root("@here anyone?"), false},
		{root("@ada look"), true},
		{root("ops@here.example"), false},
		{reply("@everyone in a thread"), true},
		{reply("@here in a thread"), false},
	} {
		require.Equal(t, tc.want, persist.EmailSelects(tc.m, "ada", false), "%q", tc.m.Body)
	}
}
