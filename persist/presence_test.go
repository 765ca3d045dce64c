package persist_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestPresenceCounts: a person held by two replicas comes online once and goes offline once, when
// the last lets go; versions rise; a replica whose registration expired is swept once (its people
// go offline with it) and, when it comes back, learns it was lost and registers again.
func TestPresenceCounts(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	ann := persist.PresenceKey{WorkspaceID: "wsp_presence_a", UserID: "usr_ann"}
	bo := persist.PresenceKey{WorkspaceID: "wsp_presence_a", UserID: "usr_bo"}
	flush := func(replica string, ttl time.Duration, add, remove []persist.PresenceKey) ([]persist.PresenceChange, bool) {
		t.Helper()
		changes, lost, err := store.PresenceFlush(ctx, replica, ttl, add, remove)
		require.NoError(t, err)
		return changes, lost
	}
	changes, lost := flush("rep_a", time.Minute, []persist.PresenceKey{ann, bo}, nil)
	require.True(t, lost, "a first flush registers")
	require.Len(t, changes, 2)
	for _, c := range changes {
		require.True(t, c.Online)
	}
	v1 := changes[0].Version
	changes, lost = flush("rep_b", time.Minute, []persist.PresenceKey{ann}, nil)
	require.True(t, lost)
	require.Empty(t, changes, "Ann was online already")
	changes, _ = flush("rep_a", time.Minute, nil, []persist.PresenceKey{ann})
	require.Empty(t, changes, "replica b still holds Ann")
	changes, lost = flush("rep_b", time.Minute, nil, []persist.PresenceKey{ann})
	require.False(t, lost)
	require.Len(t, changes, 1)
	require.Equal(t, ann, changes[0].PresenceKey)
	require.False(t, changes[0].Online)
	require.Greater(t, changes[0].Version, v1)

	// Replica c holds Ann and stops renewing: a sweep takes her offline, once.
	_, _ = flush("rep_c", 50*time.Millisecond, []persist.PresenceKey{ann}, nil)
	time.Sleep(100 * time.Millisecond)
	var wg sync.WaitGroup
	swept := make([][]persist.PresenceChange, 3)
	for i := range swept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			swept[i], err = store.PresenceSweep(ctx)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	var offline []persist.PresenceChange
	for _, s := range swept {
		offline = append(offline, s...)
	}
	require.Len(t, offline, 1, "swept once: %v", offline)
	require.Equal(t, ann, offline[0].PresenceKey)
	require.False(t, offline[0].Online)
	// Replica c comes back: lost, and its adds count again.
	changes, lost = flush("rep_c", time.Minute, []persist.PresenceKey{ann}, nil)
	require.True(t, lost)
	require.Len(t, changes, 1)
	require.True(t, changes[0].Online)

	// Bo, held by replica a all along, was untouched by the sweep: a letting go is his last.
	changes, _ = flush("rep_a", time.Minute, nil, []persist.PresenceKey{bo})
	require.Len(t, changes, 1)
	require.Equal(t, bo, changes[0].PresenceKey)
	require.False(t, changes[0].Online)
}
