package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestSearchShapesSeeTheSame holds every way a search reads (the full-text index by spans, the
// newest-first walk of the whole scope, the walk bounded by rows) to the same results and the
// same visibility rules: private channels only for their members, the guest channel alone for
// guests, direct conversations for their members and bot tokens with dms:read, no deletions.
// Which shape a large workspace takes is a benchmark's matter (docs/performance.md).
func TestSearchShapesSeeTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	alice := persisttest.User(t, store, nil)
	guest := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	persisttest.Member(t, store, w.ID, alice.ID, persist.RoleMember)
	persisttest.Member(t, store, w.ID, guest.ID, persist.RoleGuest)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	guestRoom := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, persist.GuestChannel)
	secret := privateChannel(t, store, owner, w.ID, "secret")
	bot, readTok := persisttest.Bot(t, store, owner, w.ID, &persisttest.BotOpts{Scopes: []string{persist.ScopeMessagesRead, persist.ScopeDMsRead}})
	blindTok := persisttest.BotToken(t, store, owner, w.ID, bot.ID, persist.ScopeMessagesRead)
	ownerAlice := persisttest.DM(t, store, w.ID, owner.ID, alice.ID)
	ownerBot := persisttest.DM(t, store, w.ID, owner.ID, bot.ID)

	post := searchPoster(t, store)
	inGeneral := post(owner, persist.Place{ChannelID: general.ID}, "deploy the release")
	byAlice := post(alice, persist.Place{ChannelID: general.ID}, "deploying now")
	inGuest := post(owner, persist.Place{ChannelID: guestRoom.ID}, "we deploy on fridays")
	inSecret := post(owner, persist.Place{ChannelID: secret.ID}, "deploy the secret")
	inOwnerAlice := post(alice, persist.Place{DMID: ownerAlice}, "deploy for us two")
	inOwnerBot := post(owner, persist.Place{DMID: ownerBot}, "deploy, bot")
	gone := post(owner, persist.Place{ChannelID: general.ID}, "deploy typo")
	post(owner, persist.Place{ChannelID: general.ID}, "unrelated chatter")
	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageChanged, error) {
		return tx.MessageDelete(ctx, persist.ActorFor(owner), gone)
	})
	require.NoError(t, err)

	readers := []struct {
		name  string
		actor persist.Actor
		want  []string
		in    persist.Place // a search narrowed to one conversation
	}{
		{"owner", persist.ActorFor(owner), []string{inGeneral, byAlice, inGuest, inSecret, inOwnerAlice, inOwnerBot}, persist.Place{}},
		{"member outside the private channel", persist.ActorFor(alice), []string{inGeneral, byAlice, inGuest, inOwnerAlice}, persist.Place{}},
		{"guest", persist.ActorFor(guest), []string{inGuest}, persist.Place{}},
		{"bot with dms:read", persist.BotActor(readTok, bot), []string{inGeneral, byAlice, inGuest, inOwnerBot}, persist.Place{}},
		{"bot without dms:read", persist.BotActor(blindTok, bot), []string{inGeneral, byAlice, inGuest}, persist.Place{}},
		{"member narrowed to a channel", persist.ActorFor(alice), []string{inGeneral, byAlice}, persist.Place{ChannelID: general.ID}},
		{"member narrowed to a conversation", persist.ActorFor(alice), []string{inOwnerAlice}, persist.Place{DMID: ownerAlice}},
	}
	for shape, value := range persist.SearchShapes {
		for _, r := range readers {
			for _, sort := range []string{persist.SearchSortRelevance, persist.SearchSortNewest} {
				var got []string
				p := persist.SearchParams{WorkspaceID: w.ID, Query: "deploy", Sort: sort, Limit: 2, ChannelID: r.in.ChannelID, DMID: r.in.DMID}
				for pages := 0; ; pages++ {
					require.Less(t, pages, 5, "%s, %s, %s: pages end", shape, r.name, sort)
					sctx := persist.WithSearchShape(ctx, value)
					page, err := persist.WithTxV(sctx, store, func(tx *persist.Tx) (persist.SearchPage, error) {
						return tx.Search(sctx, r.actor, p)
					})
					require.NoError(t, err, "%s, %s", shape, r.name)
					for _, res := range page.Results {
						got = append(got, res.ID)
					}
					if page.NextCursor == nil {
						break
					}
					p.Cursor = *page.NextCursor
				}
				require.ElementsMatch(t, r.want, got, "%s, %s, %s", shape, r.name, sort)
				require.Len(t, got, len(r.want), "%s, %s, %s: each once", shape, r.name, sort)
			}
		}
	}
}

// searchPoster posts as who in a place and returns the message's id: the search tests' messages.
func searchPoster(t *testing.T, store *persist.Store) func(who persist.User, p persist.Place, body string) string {
	return func(who persist.User, p persist.Place, body string) string {
		t.Helper()
		m, err := persist.BatchMessageCreate(context.Background(), store, persist.ActorFor(who), p, persist.MessageCreateParams{Body: body})
		require.NoError(t, err)
		return m.Message.ID
	}
}

// privateChannel is a private channel that owner creates, and is alone in.
func privateChannel(t *testing.T, store *persist.Store, owner persist.User, workspaceID, name string) persist.Channel {
	t.Helper()
	ctx := context.Background()
	c, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Channel, error) {
		c, _, err := tx.ChannelCreate(ctx, persist.ActorFor(owner), workspaceID, persist.ChannelCreateParams{Name: name, Visibility: persist.VisibilityPrivate})
		return c, err
	})
	require.NoError(t, err)
	return c
}
