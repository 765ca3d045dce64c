package benchdata

import (
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestReuseFindsTheLastSeededRun: --reuse measures the workspaces a seeding run left, so it must
// find the newest run's three workspaces, its people in their order (the readers first), the
// busiest channel and thread the seeding found, and sign the readers and posters in.
func TestReuseFindsTheLastSeededRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := persisttest.URL(t)
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	seedRun := func(tag string) (people, map[string]*world) {
		p, err := seedPeople(ctx, store, 12, tag)
		require.NoError(t, err)
		ws := map[string]*world{}
		for i, kind := range []string{"small", "large", "posting"} {
			ws[kind], err = seedWorkspace(ctx, store, p, tag+"-"+kind, 3, uint64(i))
			require.NoError(t, err)
		}
		require.NoError(t, ws["large"].seedHistory(ctx, conn, p, 400, 1))
		require.NoError(t, ws["large"].findBusiest(ctx, store, p))
		return p, ws
	}
	seedRun("bolder")
	p, want := seedRun("bnewer")

	sd, err := reuse(ctx, Config{Store: store, Posters: 2, Out: io.Discard}, conn)
	require.NoError(t, err)
	require.Len(t, sd.p.users, 12)
	for i, u := range p.users {
		require.Equal(t, u.ID, sd.p.users[i].ID, "person %d", i)
	}
	for kind, got := range map[string]*world{"small": sd.small, "large": sd.large, "posting": sd.posting} {
		require.Equal(t, want[kind].ws.ID, got.ws.ID, kind)
		require.Len(t, got.channels, 3, kind)
	}
	require.Equal(t, want["large"].busiest.ID, sd.large.busiest.ID)
	require.Equal(t, want["large"].busiest.LastSeq, sd.large.busiest.LastSeq)
	require.Equal(t, want["large"].personaD, sd.large.personaD)
	require.NotEmpty(t, sd.large.thread)
	var replies, most int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT (SELECT last_thread_seq FROM thread_states WHERE root_message_id = $1),
		(SELECT max(ts.last_thread_seq) FROM thread_states ts JOIN messages m ON m.id = ts.root_message_id
			WHERE ts.workspace_id = $2 AND m.channel_id IS NOT NULL)`, sd.large.thread, sd.large.ws.ID).Scan(&replies, &most))
	require.Equal(t, most, replies, "the channel thread with most replies (both readers may read it)")
	require.Equal(t, want["large"].thread, sd.large.thread)
	require.Len(t, sd.tokens, 5, "two readers, the owner, two posters")
	require.Len(t, sd.posterTokens, 2)
}
