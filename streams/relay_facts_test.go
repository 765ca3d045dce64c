package streams_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// TestRelayCarriesConversationMembers: every relayed event of a direct conversation carries the
// conversation's members in a header, so that consumers apply the visibility rule without asking
// Postgres; other events carry none.
func TestRelayCarriesConversationMembers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := persisttest.User(t, b.store, nil)
	persisttest.Member(t, b.store, b.ws.ID, alice.ID, persist.RoleMember)
	dm := persisttest.DM(t, b.store, b.ws.ID, b.owner.ID, alice.ID)
	channel := persisttest.Channel(t, b.store, persist.ActorFor(b.owner), b.ws.ID, "general")
	b.appendEvents(t, 1, persist.EventInput{DirectConversationID: dm, Type: "message.created"})
	b.appendEvents(t, 1, persist.EventInput{ChannelID: channel.ID, Type: "message.created"})
	ch, _, _ := b.start(t, nil)
	head, err := persist.WithTxV(context.Background(), b.store, func(tx *persist.Tx) (persist.EventWindow, error) {
		return tx.EventWindowGet(context.Background(), b.ws.ID)
	})
	require.NoError(t, err)
	ch.waitFor(t, head.Head)

	s, err := b.js.Stream(context.Background(), streams.StreamName(b.ws.ID))
	require.NoError(t, err)
	want := []string{b.owner.ID, alice.ID}
	sort.Strings(want)
	seenDM, seenChannel := false, false
	for seq := s.CachedInfo().State.FirstSeq; seq <= uint64(head.Head); seq++ {
		msg, err := s.GetMsg(context.Background(), seq)
		require.NoError(t, err)
		members := msg.Header.Values(streams.HeaderDMMembers)
		switch {
		case strings.Contains(msg.Subject, ".dm."+dm+"."):
			seenDM = true
			require.Len(t, members, 1, msg.Subject)
			got := strings.Split(members[0], ",")
			sort.Strings(got)
			require.Equal(t, want, got)
		default:
			seenChannel = seenChannel || strings.Contains(msg.Subject, ".ch.")
			require.Empty(t, members, msg.Subject)
		}
	}
	require.True(t, seenDM)
	require.True(t, seenChannel)
}
