package persist_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// BenchmarkMemberList reads directory pages of a 5,000-member workspace: the first page (with
// its total count), a deep page by cursor, and a search.
func BenchmarkMemberList(b *testing.B) {
	url := persisttest.URL(b)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	owner := persisttest.User(b, store, nil)
	w := persisttest.Workspace(b, store, owner.ID)
	const members = 5000
	if err := store.WithTx(ctx, func(tx *persist.Tx) error {
		for i := range members {
			u, err := tx.UserCreate(ctx, persist.UserCreateParams{DisplayName: fmt.Sprintf("Member %05d", i)})
			if err != nil {
				return err
			}
			if _, err := tx.MemberAdd(ctx, w.ID, u.ID, persist.RoleMember); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	// Plan with statistics, as autovacuum would give a live database after a bulk load.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	actor := persist.ActorFor(owner)
	list := func(p persist.MemberListParams) persist.MemberPage[persist.DirectoryMember] {
		page, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MemberPage[persist.DirectoryMember], error) {
			return tx.MemberList(ctx, actor, w.ID, p)
		})
		if err != nil {
			b.Fatal(err)
		}
		return page
	}
	deep := list(persist.MemberListParams{Limit: 200})
	for range 20 {
		deep = list(persist.MemberListParams{Limit: 200, Cursor: deep.NextCursor})
	}
	for _, bc := range []struct {
		name string
		p    persist.MemberListParams
	}{
		{"FirstPage", persist.MemberListParams{}},
		{"DeepPage", persist.MemberListParams{Cursor: deep.NextCursor}},
		{"Search", persist.MemberListParams{Query: "member 04"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list(bc.p)
			}
		})
	}
}
