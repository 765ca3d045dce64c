package persist_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestStandingsAgreeWithSingleChecks: the bulk re-check of people's sockets gives, for every
// standing in one statement, what SessionLive then ViewerFor give one at a time: a member, a
// guest, a session signed out, one expired, a deleted person, a member removed, a workspace
// that does not exist, and the same standing twice.
func TestStandingsAgreeWithSingleChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	raw, err := pgx.Connect(ctx, persisttest.StoreURL(t, store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close(ctx) })

	type person struct {
		name  string
		role  string
		after func(u persist.User, token string)
		code  persist.Code // "" for a viewer
		guest bool
	}
	sessionID := func(token string) string {
		s, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.Session, error) {
			s, _, err := tx.SessionResolve(ctx, token)
			return s, err
		})
		require.NoError(t, err)
		return s.ID
	}
	people := []person{
		{name: "member", role: persist.RoleMember},
		{name: "guest", role: persist.RoleGuest, guest: true},
		{name: "signed out", role: persist.RoleMember, code: persist.CodeUnauthenticated, after: func(_ persist.User, token string) {
			require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, token) }))
		}},
		{name: "expired", role: persist.RoleMember, code: persist.CodeUnauthenticated, after: func(_ persist.User, token string) {
			_, err := raw.Exec(ctx, `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`,
				persist.HashSecret(token))
			require.NoError(t, err)
		}},
		{name: "deleted person", role: persist.RoleMember, code: persist.CodeUnauthenticated, after: func(u persist.User, _ string) {
			_, err := raw.Exec(ctx, `UPDATE users SET deleted_at = now() WHERE id = $1`, u.ID)
			require.NoError(t, err)
		}},
		{name: "removed", role: persist.RoleMember, code: persist.CodeForbidden, after: func(u persist.User, _ string) {
			require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
				_, _, err := tx.MemberRemoveByOperator(ctx, ws.ID, u.ID)
				return err
			}))
		}},
	}
	var standings []persist.Standing
	var want []person
	var actors []persist.Actor
	for _, p := range people {
		u := persisttest.User(t, store, nil)
		persisttest.Member(t, store, ws.ID, u.ID, p.role)
		token := persisttest.Session(t, store, u.ID)
		st := persist.Standing{SessionID: sessionID(token), UserID: u.ID, WorkspaceID: ws.ID}
		if p.after != nil {
			p.after(u, token)
		}
		standings, want, actors = append(standings, st), append(want, p), append(actors, persist.ActorFor(u))
	}
	// A workspace that does not exist, and the member's standing a second time.
	gone := standings[0]
	gone.WorkspaceID = "wsp_gone"
	standings = append(standings, gone, standings[0])
	want = append(want, person{name: "no such workspace", code: persist.CodeNotFound}, want[0])
	actors = append(actors, actors[0], actors[0])

	got, err := persist.ReadV(ctx, store, func(tx *persist.Reader) ([]persist.StandingResult, error) {
		return tx.Standings(ctx, standings)
	})
	require.NoError(t, err)
	require.Len(t, got, len(standings))
	for i, st := range standings {
		p := want[i]
		// The same standing, one statement at a time, as a socket's single check reads it.
		single, singleErr := persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.Viewer, error) {
			live, err := tx.SessionLive(ctx, st.SessionID)
			if err != nil || !live {
				return persist.Viewer{}, persist.Errorf(persist.CodeUnauthenticated, "ended")
			}
			return tx.ViewerFor(ctx, actors[i], st.WorkspaceID)
		})
		if p.code == "" {
			require.NoError(t, got[i].Err, p.name)
			require.NoError(t, singleErr, p.name)
			require.Equal(t, persist.Viewer{WorkspaceID: ws.ID, UserID: st.UserID, Guest: p.guest}, got[i].Viewer, p.name)
			require.Equal(t, single, got[i].Viewer, p.name)
			continue
		}
		e, ok := persist.ErrorOf(got[i].Err)
		require.True(t, ok, "%s: %v", p.name, got[i].Err)
		require.Equal(t, p.code, e.Code, p.name)
		se, ok := persist.ErrorOf(singleErr)
		require.True(t, ok, "%s: %v", p.name, singleErr)
		require.Equal(t, se.Code, e.Code, "%s: the bulk check and the single one disagree", p.name)
		require.True(t, persist.IsRefusal(got[i].Err), p.name)
	}
}
