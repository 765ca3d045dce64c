package persist_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// BenchmarkStandings re-checks 2,000 people's sockets (a session and a membership each) as the
// hub's bulk check does, in one statement, and as the single check did, two statements a socket.
// Postgres's time dominates both; compare them within one run.
func BenchmarkStandings(b *testing.B) {
	ctx := context.Background()
	store := persisttest.NewStore(b)
	owner := persisttest.User(b, store, nil)
	w := persisttest.Workspace(b, store, owner.ID)
	const people = 2000
	standings := make([]persist.Standing, people)
	actors := make([]persist.Actor, people)
	if err := store.WithTx(ctx, func(tx *persist.Tx) error {
		for i := range people {
			u, err := tx.UserCreate(ctx, persist.UserCreateParams{DisplayName: fmt.Sprintf("Person %05d", i)})
			if err != nil {
				return err
			}
			if _, err := tx.MemberAdd(ctx, w.ID, u.ID, persist.RoleMember); err != nil {
				return err
			}
			s, _, err := tx.SessionCreate(ctx, u.ID, persist.MethodMagicLink)
			if err != nil {
				return err
			}
			standings[i], actors[i] = persist.Standing{SessionID: s.ID, UserID: u.ID, WorkspaceID: w.ID}, persist.ActorFor(u)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("bulk", func(b *testing.B) {
		for b.Loop() {
			if _, err := persist.ReadV(ctx, store, func(tx *persist.Reader) ([]persist.StandingResult, error) {
				return tx.Standings(ctx, standings)
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*people), "µs/socket")
	})
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			for i, st := range standings {
				if _, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.Viewer, error) {
					if _, err := tx.SessionLive(ctx, st.SessionID); err != nil {
						return persist.Viewer{}, err
					}
					return tx.ViewerFor(ctx, actors[i], st.WorkspaceID)
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*people), "µs/socket")
	})
}
