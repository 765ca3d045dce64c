package persist_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// historySetup is a workspace with its owner, and a History of a source into it.
type historySetup struct {
	store *persist.Store
	owner persist.User
	ws    persist.Workspace
	h     persist.History
}

func newHistorySetup(t *testing.T) historySetup {
	t.Helper()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ctx := context.Background()
	h, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.History, error) {
		return tx.HistoryOpen(ctx, w.ID, "test:T1")
	})
	require.NoError(t, err)
	return historySetup{store: store, owner: owner, ws: w, h: h}
}

// in runs fn in one transaction of the setup's store.
func in[T any](t *testing.T, s historySetup, fn func(ctx context.Context, tx *persist.Tx) (T, error)) (T, error) {
	t.Helper()
	ctx := context.Background()
	return persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (T, error) { return fn(ctx, tx) })
}

func (s historySetup) events(t *testing.T) []persist.Event {
	t.Helper()
	evs, err := in(t, s, func(ctx context.Context, tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, s.ws.ID, 0, 1000)
	})
	require.NoError(t, err)
	return evs
}

func person(t *testing.T, s historySetup, p persist.HistoryPersonParams) persist.Imported {
	t.Helper()
	got, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryPerson(ctx, s.h, p)
	})
	require.NoError(t, err)
	return got
}

// TestHistoryPeople: people are matched by email to live accounts (who join the workspace),
// created otherwise with a free handle, bots as bots, deactivated ones as deleted authors who
// are no members; a source id imported again writes nothing.
func TestHistoryPeople(t *testing.T) {
	t.Parallel()
	s := newHistorySetup(t)
	existing := persisttest.User(t, s.store, &persisttest.UserOpts{Email: persisttest.Ptr("Ann@Example.com"),
		Handle: persisttest.Ptr("ann")})

	ann := person(t, s, persist.HistoryPersonParams{SourceID: "U1", DisplayName: "Ann B", Handle: "ann", Email: "ANN@example.com"})
	require.Equal(t, persist.Imported{ID: existing.ID, Matched: true}, ann)
	m, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Member, error) {
		return tx.MemberGet(ctx, s.ws.ID, existing.ID)
	})
	require.NoError(t, err)
	require.Equal(t, "member", m.Role)

	// Another person wishing "ann" gets the first free variant; "bo.b" becomes "bo_b".
	other := person(t, s, persist.HistoryPersonParams{SourceID: "U2", DisplayName: "Ann C", Handle: "ann", Email: "annc@example.com"})
	require.True(t, other.Created)
	bob := person(t, s, persist.HistoryPersonParams{SourceID: "U3", DisplayName: "Bob", Handle: "bo.b", Role: "moderator"})
	bot := person(t, s, persist.HistoryPersonParams{SourceID: "B1", Kind: "bot", DisplayName: "Deploy bot", Handle: "deploy", Email: "bot@example.com"})
	gone := person(t, s, persist.HistoryPersonParams{SourceID: "U4", DisplayName: "Gone", Handle: "gone", Email: "gone@example.com", Deactivated: true})

	users, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (map[string]persist.User, error) {
		out := map[string]persist.User{}
		for _, id := range []string{other.ID, bob.ID, bot.ID, gone.ID} {
			u, err := tx.UserGet(ctx, id)
			if err != nil {
				return nil, err
			}
			out[id] = u
		}
		return out, nil
	})
	require.NoError(t, err)
	require.Equal(t, "ann-2", users[other.ID].Handle)
	require.Equal(t, "annc@example.com", users[other.ID].Email)
	require.Equal(t, "bo_b", users[bob.ID].Handle)
	require.Equal(t, "bot", users[bot.ID].Kind)
	require.Empty(t, users[bot.ID].Email)
	require.NotNil(t, users[gone.ID].DeletedAt)
	require.Empty(t, users[gone.ID].Handle)
	require.Empty(t, users[gone.ID].Email)
	require.Equal(t, "gone", users[gone.ID].FormerHandle)

	roles, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (map[string]string, error) {
		out := map[string]string{}
		for _, id := range []string{bob.ID, bot.ID, gone.ID} {
			m, err := tx.MemberGet(ctx, s.ws.ID, id)
			if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeNotFound {
				continue
			}
			if err != nil {
				return nil, err
			}
			out[id] = m.Role
		}
		return out, nil
	})
	require.NoError(t, err)
	require.Equal(t, map[string]string{bob.ID: "moderator", bot.ID: "bot"}, roles)

	// Someone who left the source is their live account, without being let in.
	outsider := persisttest.User(t, s.store, &persisttest.UserOpts{Email: persisttest.Ptr("left@example.com")})
	left := person(t, s, persist.HistoryPersonParams{SourceID: "U5", DisplayName: "Left", Email: "left@example.com", Deactivated: true})
	require.Equal(t, persist.Imported{ID: outsider.ID, Matched: true}, left)
	_, err = in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Member, error) {
		return tx.MemberGet(ctx, s.ws.ID, outsider.ID)
	})
	requireCode(t, err, persist.CodeNotFound)

	again := person(t, s, persist.HistoryPersonParams{SourceID: "U3", DisplayName: "Bob renamed", Handle: "bob2"})
	require.Equal(t, persist.Imported{ID: bob.ID}, again)

	_, err = in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryPerson(ctx, s.h, persist.HistoryPersonParams{SourceID: "U9", DisplayName: " "})
	})
	requireCode(t, err, persist.CodeInvalidRequest)
	_, err = in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryPerson(ctx, s.h, persist.HistoryPersonParams{SourceID: "U9", DisplayName: "X", Role: "owner"})
	})
	requireCode(t, err, persist.CodeInvalidRequest)
}

// TestHistoryMessages: roots take the place's sequence 1..n in import order with their original
// times, replies their thread's, the thread state follows the latest reply, nothing but
// channel.created reaches the event log, unread counts hold, and a live post continues the
// sequence.
func TestHistoryMessages(t *testing.T) {
	t.Parallel()
	s := newHistorySetup(t)
	before := len(s.events(t))
	ann := person(t, s, persist.HistoryPersonParams{SourceID: "U1", DisplayName: "Ann", Email: "ann-h@example.com"})
	bob := person(t, s, persist.HistoryPersonParams{SourceID: "U2", DisplayName: "Bob"})
	base := time.Date(2019, 3, 1, 9, 0, 0, 0, time.UTC)
	edited := base.Add(time.Hour)

	type ids struct{ ch, root, second, reply1, reply2 string }
	got, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (ids, error) {
		var out ids
		ch, err := tx.HistoryChannel(ctx, s.h, persist.HistoryChannelParams{SourceID: "C1", Name: "Dev Talk", Title: "all things dev",
			CreatedAt: base.Add(-time.Hour), CreatorID: ann.ID})
		if err != nil {
			return out, err
		}
		out.ch = ch.ID
		p := persist.Place{ChannelID: ch.ID}
		steps := []struct {
			dst  *string
			prm  persist.HistoryMessageParams
			root *string
		}{
			{&out.root, persist.HistoryMessageParams{SourceID: "1.1", Place: p, AuthorID: ann.ID, Body: "first words", CreatedAt: base, EditedAt: &edited}, nil},
			{&out.second, persist.HistoryMessageParams{SourceID: "1.2", Place: p, AuthorID: bob.ID, Body: "second", CreatedAt: base.Add(time.Minute)}, nil},
			{&out.reply2, persist.HistoryMessageParams{SourceID: "1.4", Place: p, AuthorID: bob.ID, Body: "later reply", CreatedAt: base.Add(3 * time.Minute)}, &out.root},
			{&out.reply1, persist.HistoryMessageParams{SourceID: "1.3", Place: p, AuthorID: ann.ID, Body: "earlier reply", CreatedAt: base.Add(2 * time.Minute)}, &out.root},
		}
		for _, st := range steps {
			if st.root != nil {
				st.prm.ParentID = *st.root
			}
			m, err := tx.HistoryMessage(ctx, s.h, st.prm)
			if err != nil {
				return out, err
			}
			*st.dst = m.ID
		}
		return out, tx.HistoryReadThrough(ctx, s.h, p, []string{bob.ID})
	})
	require.NoError(t, err)

	evs := s.events(t)
	require.Len(t, evs, before+1)
	require.Equal(t, "channel.created", evs[before].Type)
	require.Equal(t, got.ch, evs[before].ChannelID)

	annActor := persist.Actor{UserID: ann.ID, Kind: persist.KindHuman}
	page, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Page, error) {
		return tx.MessageList(ctx, annActor, persist.Place{ChannelID: got.ch}, persist.Window{})
	})
	require.NoError(t, err)
	require.Len(t, page.Messages, 2)
	root := page.Messages[0]
	require.Equal(t, got.root, root.ID)
	require.Equal(t, int64(1), *root.ChannelSeq)
	require.Equal(t, int64(2), *page.Messages[1].ChannelSeq)
	require.True(t, base.Equal(root.CreatedAt))
	require.True(t, edited.Equal(*root.EditedAt))
	require.Equal(t, int64(2), root.ThreadState.ReplyCount)
	require.True(t, base.Add(3*time.Minute).Equal(*root.ThreadState.LastReplyAt))
	require.Equal(t, []string{bob.ID, ann.ID}, root.ThreadState.LastReplyAuthorIDs)

	thread, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Thread, error) {
		return tx.ThreadGet(ctx, annActor, got.root, persist.Window{})
	})
	require.NoError(t, err)
	require.Len(t, thread.Replies.Messages, 2)
	require.Equal(t, got.reply2, thread.Replies.Messages[0].ID)
	require.Equal(t, int64(2), *thread.Replies.Messages[1].ThreadSeq)

	// Ann (no receipt) has Bob's root unread; Bob was marked read through the import.
	unread := func(userID string) int64 {
		chs, err := in(t, s, func(ctx context.Context, tx *persist.Tx) ([]persist.Channel, error) {
			return tx.ChannelList(ctx, persist.Actor{UserID: userID, Kind: persist.KindHuman}, s.ws.ID)
		})
		require.NoError(t, err)
		for _, c := range chs {
			if c.ID == got.ch {
				require.Equal(t, "dev-talk", c.Name)
				require.Equal(t, "all things dev", c.DisplayTitle)
				return *c.UnreadCount
			}
		}
		t.Fatalf("channel %s not listed", got.ch)
		return 0
	}
	require.Equal(t, int64(1), unread(ann.ID))
	require.Equal(t, int64(0), unread(bob.ID))

	// A live post continues the sequence; the import again writes nothing.
	live, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, annActor, persist.Place{ChannelID: got.ch}, persist.MessageCreateParams{Body: "now"})
	})
	require.NoError(t, err)
	require.Equal(t, int64(3), *live.Message.ChannelSeq)
	again, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: "1.2", Place: persist.Place{ChannelID: got.ch},
			AuthorID: bob.ID, Body: "second", CreatedAt: base.Add(time.Minute)})
	})
	require.NoError(t, err)
	require.Equal(t, persist.Imported{ID: got.second}, again)
	require.Equal(t, int64(1), unread(bob.ID)) // only Ann's live post is new to Bob
}

// TestHistoryPlacesAndExtras: private channels keep only workspace members, a public channel of
// the same name is the same channel, conversations are matched by members, and reactions, pins
// and attachments are added once.
func TestHistoryPlacesAndExtras(t *testing.T) {
	t.Parallel()
	s := newHistorySetup(t)
	ctx := context.Background()
	general := persisttest.Channel(t, s.store, persist.ActorFor(s.owner), s.ws.ID, "general")
	ann := person(t, s, persist.HistoryPersonParams{SourceID: "U1", DisplayName: "Ann"})
	gone := person(t, s, persist.HistoryPersonParams{SourceID: "U2", DisplayName: "Gone", Deactivated: true})
	at := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

	pub, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryChannel(ctx, s.h, persist.HistoryChannelParams{SourceID: "C1", Name: "#general"})
	})
	require.NoError(t, err)
	require.Equal(t, persist.Imported{ID: general.ID, Matched: true}, pub)
	priv, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryChannel(ctx, s.h, persist.HistoryChannelParams{SourceID: "G1", Name: "general", Private: true,
			MemberIDs: []string{ann.ID, gone.ID}})
	})
	require.NoError(t, err)
	require.True(t, priv.Created)
	members, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (map[string][]string, error) {
		return tx.PrivateChannelMembers(ctx, s.ws.ID, []string{priv.ID})
	})
	require.NoError(t, err)
	require.Equal(t, []string{ann.ID}, members[priv.ID])
	chs, err := in(t, s, func(ctx context.Context, tx *persist.Tx) ([]persist.Channel, error) {
		return tx.ChannelList(ctx, persist.ActorFor(s.owner), s.ws.ID)
	})
	require.NoError(t, err)
	require.Len(t, chs, 1, "the owner is not in the private channel")

	dm := persisttest.DM(t, s.store, s.ws.ID, s.owner.ID, ann.ID)
	conv, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryConversation(ctx, s.h, persist.HistoryConversationParams{SourceID: "D1", MemberIDs: []string{ann.ID, s.owner.ID, ann.ID}})
	})
	require.NoError(t, err)
	require.Equal(t, persist.Imported{ID: dm, Matched: true}, conv)
	_, err = in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryConversation(ctx, s.h, persist.HistoryConversationParams{SourceID: "D2", MemberIDs: []string{ann.ID}})
	})
	requireCode(t, err, persist.CodeInvalidRequest)

	sum := sha256.Sum256([]byte("bytes"))
	err = s.store.WithTx(ctx, func(tx *persist.Tx) error {
		m, err := tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: "1", Place: persist.Place{ChannelID: general.ID},
			AuthorID: gone.ID, Body: "from the past", CreatedAt: at})
		if err != nil {
			return err
		}
		dmMsg, err := tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: "2", Place: persist.Place{DMID: dm},
			AuthorID: ann.ID, Body: "psst", CreatedAt: at})
		if err != nil {
			return err
		}
		for range 2 {
			if _, err := tx.HistoryReaction(ctx, s.h, m.ID, "tada", ann.ID, at); err != nil {
				return err
			}
			if _, err := tx.HistoryPin(ctx, s.h, m.ID, ann.ID, at); err != nil {
				return err
			}
		}
		if _, err := tx.HistoryPin(ctx, s.h, dmMsg.ID, ann.ID, at); err == nil {
			t.Error("a direct message was pinned")
		}
		up, err := tx.HistoryUpload(ctx, s.h, persist.HistoryUploadParams{SourceID: "F1", OwnerID: gone.ID, StorageKey: "upload-test-" + m.ID,
			Filename: "dir/plan.txt", ContentType: "text/plain", ByteSize: 5, SHA256: sum[:], CreatedAt: at})
		if err != nil {
			return err
		}
		_, err = tx.HistoryAttach(ctx, s.h, m.ID, up.ID)
		return err
	})
	require.NoError(t, err)

	page, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Page, error) {
		return tx.MessageList(ctx, persist.ActorFor(s.owner), persist.Place{ChannelID: general.ID}, persist.Window{})
	})
	require.NoError(t, err)
	require.Len(t, page.Messages, 1)
	m := page.Messages[0]
	require.Equal(t, "Gone", m.Author.DisplayName)
	require.NotNil(t, m.Author.DeletedAt)
	require.Len(t, m.Reactions, 1)
	require.Equal(t, int64(1), m.Reactions[0].Count)
	require.Len(t, m.Attachments, 1)
	require.Equal(t, "plan.txt", m.Attachments[0].Filename)
	pins, err := in(t, s, func(ctx context.Context, tx *persist.Tx) ([]persist.Pin, error) {
		return tx.PinList(ctx, persist.ActorFor(s.owner), general.ID)
	})
	require.NoError(t, err)
	require.Len(t, pins, 1)
	require.True(t, at.Equal(pins[0].PinnedAt))
}

// TestHistoryRefusals: bad records are refused with a code before any write, and the caller's
// transaction goes on.
func TestHistoryRefusals(t *testing.T) {
	t.Parallel()
	s := newHistorySetup(t)
	other := newHistorySetup(t)
	ann := person(t, s, persist.HistoryPersonParams{SourceID: "U1", DisplayName: "Ann"})
	ch := persisttest.Channel(t, s.store, persist.ActorFor(s.owner), s.ws.ID, "general")
	foreign := persisttest.Channel(t, other.store, persist.ActorFor(other.owner), other.ws.ID, "elsewhere")
	p := persist.Place{ChannelID: ch.ID}
	at := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	ctx := context.Background()

	_, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.History, error) {
		return tx.HistoryOpen(ctx, s.ws.ID, "")
	})
	requireCode(t, err, persist.CodeInvalidRequest)
	_, err = in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.History, error) {
		return tx.HistoryOpen(ctx, "wsp_none", "x")
	})
	requireCode(t, err, persist.CodeNotFound)

	err = s.store.WithTx(ctx, func(tx *persist.Tx) error {
		root, err := tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: "r", Place: p, AuthorID: ann.ID, Body: "root", CreatedAt: at})
		require.NoError(t, err)
		reply, err := tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: "re", Place: p, AuthorID: ann.ID, Body: "re", CreatedAt: at, ParentID: root.ID})
		require.NoError(t, err)
		future := time.Now().Add(time.Hour)
		before := at.Add(-time.Hour)
		for prm, code := range map[persist.HistoryMessageParams]persist.Code{
			{SourceID: "a", Place: p, AuthorID: ann.ID, Body: "  ", CreatedAt: at}:                                            persist.CodeInvalidRequest,
			{SourceID: "b", Place: p, AuthorID: ann.ID, Body: "x", CreatedAt: future}:                                         persist.CodeInvalidRequest,
			{SourceID: "c", Place: p, AuthorID: ann.ID, Body: "x"}:                                                            persist.CodeInvalidRequest,
			{SourceID: "d", Place: p, AuthorID: ann.ID, Body: "x", CreatedAt: at, EditedAt: &before}:                          persist.CodeInvalidRequest,
			{SourceID: "e", Place: p, AuthorID: ann.ID, Body: "x", CreatedAt: at, ParentID: reply.ID}:                         persist.CodeInvalidRequest,
			{SourceID: "f", Place: persist.Place{ChannelID: foreign.ID}, AuthorID: ann.ID, Body: "x", CreatedAt: at}:          persist.CodeNotFound,
			{SourceID: "g", Place: p, AuthorID: "usr_none", Body: "x", CreatedAt: at}:                                         persist.CodeNotFound,
			{SourceID: "h", Place: p, AuthorID: ann.ID, Body: "x", CreatedAt: at, ParentID: "msg_none"}:                       persist.CodeNotFound,
			{SourceID: "", Place: p, AuthorID: ann.ID, Body: "x", CreatedAt: at}:                                              persist.CodeInvalidRequest,
			{SourceID: "i", Place: persist.Place{ChannelID: ch.ID, DMID: "dm_x"}, AuthorID: ann.ID, Body: "x", CreatedAt: at}: persist.CodeInvalidRequest,
		} {
			_, err := tx.HistoryMessage(ctx, s.h, prm)
			requireCode(t, err, code)
		}
		_, err = tx.HistoryReaction(ctx, s.h, root.ID, "", ann.ID, at)
		requireCode(t, err, persist.CodeInvalidRequest)
		_, err = tx.HistoryPin(ctx, s.h, reply.ID, ann.ID, at)
		requireCode(t, err, persist.CodeInvalidRequest)
		// The transaction is still usable after the refusals.
		_, err = tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: "z", Place: p, AuthorID: ann.ID, Body: "after", CreatedAt: at})
		return err
	})
	require.NoError(t, err)
	page, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Page, error) {
		return tx.MessageList(ctx, persist.ActorFor(s.owner), p, persist.Window{})
	})
	require.NoError(t, err)
	require.Len(t, page.Messages, 2)
	require.Equal(t, int64(2), *page.Messages[1].ChannelSeq)
}
