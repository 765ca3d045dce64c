package server_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

type memberPage struct {
	Members    []map[string]any `json:"members"`
	NextCursor string           `json:"next_cursor"`
	HasMore    bool             `json:"has_more"`
	TotalCount *int             `json:"total_count"`
}

func (e *wsEnv) members(t *testing.T, token string, query url.Values) memberPage {
	t.Helper()
	r := e.h.Get(t, e.wsPath("/members?"+query.Encode()), token)
	r.RequireStatus(t, http.StatusOK)
	var p memberPage
	r.Decode(t, &p)
	return p
}

func memberIDs(p memberPage) []string {
	ids := make([]string, len(p.Members))
	for i, m := range p.Members {
		ids[i] = m["user"].(map[string]any)["id"].(string)
	}
	return ids
}

// joinNamed adds a human with a display name and handle.
func (e *wsEnv) joinNamed(t *testing.T, role, name, handle string) persist.User {
	t.Helper()
	opts := &persisttest.UserOpts{DisplayName: persisttest.Ptr(name)}
	if handle != "" {
		opts.Handle = persisttest.Ptr(handle)
	}
	u := persisttest.User(t, e.h.Store, opts)
	persisttest.Member(t, e.h.Store, e.ws.ID, u.ID, role)
	return u
}

func TestMemberDirectory(t *testing.T) {
	t.Parallel()

	t.Run("PagesInJoinOrderWithTotalOnFirstPageOnly", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		want := []string{e.owner.User.ID}
		for i := range 6 {
			want = append(want, e.joinNamed(t, persist.RoleMember, fmt.Sprintf("Person %d", i), "").ID)
		}
		var got []string
		cursor := ""
		for page := 0; ; page++ {
			q := url.Values{"limit": {"3"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			p := e.members(t, e.owner.Token, q)
			if page == 0 {
				require.NotNil(t, p.TotalCount)
				require.Equal(t, 7, *p.TotalCount)
			} else {
				require.Nil(t, p.TotalCount, "total_count is on the first page only")
			}
			got = append(got, memberIDs(p)...)
			if !p.HasMore {
				require.Empty(t, p.NextCursor)
				break
			}
			require.NotEmpty(t, p.NextCursor)
			cursor = p.NextCursor
		}
		require.Equal(t, want, got)
	})

	t.Run("EntriesCarryNoModerationState", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		mod := e.join(t, persist.RoleModerator)
		guest := e.join(t, persist.RoleGuest)
		e.patch(t, e.wsPath("/moderation/members/"+guest.User.ID), mod.Token,
			map[string]any{"timeout_minutes": 10, "blocked": true, "moderation_note": "spam"}).RequireStatus(t, http.StatusOK)
		p := e.members(t, guest.Token, url.Values{"role": {"guest"}})
		require.Len(t, p.Members, 1)
		m := p.Members[0]
		require.ElementsMatch(t, []string{"workspace_id", "user", "role", "joined_at"}, slices.Collect(maps.Keys(m)))
		require.Equal(t, guest.User.ID, m["user"].(map[string]any)["id"])
		require.Equal(t, guest.User.DisplayName, m["user"].(map[string]any)["display_name"])
	})

	t.Run("QueryIsALiteralCaseInsensitiveMatch", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		percent := e.joinNamed(t, persist.RoleMember, "100% Real", "")
		underscore := e.joinNamed(t, persist.RoleMember, "Snake_Case", "")
		backslash := e.joinNamed(t, persist.RoleMember, `Back\Slash`, "")
		plain := e.joinNamed(t, persist.RoleMember, "Plain Person", "rocket_fan")
		e.joinNamed(t, persist.RoleMember, "Abcde", "")
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"%", []string{percent.ID}},
			{"_", []string{underscore.ID, plain.ID}}, // rocket_fan's handle holds an underscore
			{`\`, []string{backslash.ID}},
			{`\S`, []string{backslash.ID}},
			{"snake_c", []string{underscore.ID}},
			{"SNAKE", []string{underscore.ID}},
			{"a%e", nil},
			{"a_c", nil},
			{"@ROCKET", []string{plain.ID}},
			{"fan", []string{plain.ID}},
			{"nobody", nil},
		} {
			p := e.members(t, e.owner.Token, url.Values{"q": {tc.q}})
			require.ElementsMatch(t, tc.want, memberIDs(p), "q=%q", tc.q)
			require.Equal(t, len(tc.want), *p.TotalCount, "q=%q", tc.q)
		}
		// "@" is an empty handle to match: every member, as with no q at all.
		all := e.members(t, e.owner.Token, nil)
		at := e.members(t, e.owner.Token, url.Values{"q": {"@"}})
		require.ElementsMatch(t, memberIDs(all), memberIDs(at))
		require.Equal(t, *all.TotalCount, *at.TotalCount)
	})

	t.Run("QueryPagesInJoinOrderAndCountsEveryMatch", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		var graces []string
		for i := range 5 {
			e.joinNamed(t, persist.RoleMember, fmt.Sprintf("Other %d", i), "")
			if i == 2 {
				gone := e.joinNamed(t, persist.RoleMember, "Grace Gone", "")
				require.NoError(t, e.h.Store.WithTx(t.Context(), func(tx *persist.Tx) error { return tx.UserDelete(t.Context(), gone.ID) }))
			}
			role := persist.RoleMember
			if i == 3 {
				role = persist.RoleModerator
			}
			graces = append(graces, e.joinNamed(t, role, fmt.Sprintf("GRACE %d", i), "").ID)
		}
		graces = append(graces, e.joinNamed(t, persist.RoleMember, "Someone", "gracefan").ID) // by handle
		// A Grace of another workspace is no member here.
		persisttest.User(t, e.h.Store, &persisttest.UserOpts{DisplayName: persisttest.Ptr("Grace Elsewhere")})

		// Three characters and more are found by trigram; "GR" by reading every name.
		for _, q := range []string{"grace", "GR"} {
			first := e.members(t, e.owner.Token, url.Values{"q": {q}, "limit": {"4"}})
			require.Equal(t, graces[:4], memberIDs(first), "q=%s: the first four matches in join order", q)
			require.True(t, first.HasMore)
			require.Equal(t, 6, *first.TotalCount, "q=%s: five Graces and a handle; not the deleted one nor a stranger", q)
			next := e.members(t, e.owner.Token, url.Values{"q": {q}, "limit": {"4"}, "cursor": {first.NextCursor}})
			require.Equal(t, graces[4:], memberIDs(next), q)
			require.False(t, next.HasMore)
			require.Nil(t, next.TotalCount)
		}

		exact := e.members(t, e.owner.Token, url.Values{"q": {"grace"}, "limit": {"6"}})
		require.Equal(t, graces, memberIDs(exact))
		require.False(t, exact.HasMore, "exactly a page: no more")
		require.Empty(t, exact.NextCursor)
		mods := e.members(t, e.owner.Token, url.Values{"q": {"grace"}, "role": {"moderator"}})
		require.Equal(t, []string{graces[3]}, memberIDs(mods))
		require.Equal(t, 1, *mods.TotalCount)
	})

	t.Run("RoleFilter", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		guest := e.join(t, persist.RoleGuest)
		bot := e.bot(t)
		e.join(t, persist.RoleMember)
		require.Equal(t, []string{guest.User.ID}, memberIDs(e.members(t, e.owner.Token, url.Values{"role": {"guest"}})))
		require.Equal(t, []string{bot.ID}, memberIDs(e.members(t, e.owner.Token, url.Values{"role": {"bot"}})))
		require.Equal(t, []string{e.owner.User.ID}, memberIDs(e.members(t, e.owner.Token, url.Values{"role": {"owner"}})))
		p := e.members(t, e.owner.Token, url.Values{"role": {"member"}, "q": {"nobody"}})
		require.Empty(t, p.Members)
		require.Equal(t, 0, *p.TotalCount)
	})

	t.Run("TotalLeavesOutDeletedPeople", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		gone := e.joinNamed(t, persist.RoleModerator, "Gone Person", "")
		e.joinNamed(t, persist.RoleModerator, "Staying Person", "")
		e.joinNamed(t, persist.RoleMember, "Another Person", "")
		require.NoError(t, e.h.Store.WithTx(t.Context(), func(tx *persist.Tx) error { return tx.UserDelete(t.Context(), gone.ID) }))
		require.Equal(t, 3, *e.members(t, e.owner.Token, nil).TotalCount, "the owner and two living members")
		require.Equal(t, 1, *e.members(t, e.owner.Token, url.Values{"role": {"moderator"}}).TotalCount)
		require.Equal(t, 2, *e.members(t, e.owner.Token, url.Values{"q": {"person"}}).TotalCount)
	})

	t.Run("TotalFollowsJoinsRolesRemovalsAndDeletions", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		ctx := t.Context()
		other := persisttest.Workspace(t, e.h.Store, e.owner.User.ID)
		total := func(ws, role string) int {
			t.Helper()
			q := url.Values{}
			if role != "" {
				q.Set("role", role)
			}
			var p memberPage
			e.h.Get(t, "/api/workspaces/"+ws+"/members?"+q.Encode(), e.owner.Token).Decode(t, &p)
			require.NotNil(t, p.TotalCount)
			return *p.TotalCount
		}
		both := e.joinNamed(t, persist.RoleMember, "In Both", "")
		moved := e.joinNamed(t, persist.RoleMember, "Moved Person", "")
		persisttest.Member(t, e.h.Store, other.ID, both.ID, persist.RoleModerator)
		require.Equal(t, 3, total(e.ws.ID, ""))
		require.Equal(t, 2, total(e.ws.ID, persist.RoleMember))
		require.Equal(t, 0, total(e.ws.ID, persist.RoleModerator))
		require.Equal(t, 2, total(other.ID, ""))

		require.NoError(t, e.h.Store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.MemberSetRoleByOperator(ctx, e.ws.ID, moved.ID, persist.RoleModerator)
			return err
		}))
		require.Equal(t, 3, total(e.ws.ID, ""))
		require.Equal(t, 1, total(e.ws.ID, persist.RoleMember))
		require.Equal(t, 1, total(e.ws.ID, persist.RoleModerator))

		require.NoError(t, e.h.Store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.MemberRemoveByOperator(ctx, e.ws.ID, moved.ID)
			return err
		}))
		require.Equal(t, 2, total(e.ws.ID, ""))
		require.Equal(t, 0, total(e.ws.ID, persist.RoleModerator))

		require.NoError(t, e.h.Store.WithTx(ctx, func(tx *persist.Tx) error { return tx.UserDelete(ctx, both.ID) }))
		require.Equal(t, 1, total(e.ws.ID, ""), "the owner")
		require.Equal(t, 0, total(e.ws.ID, persist.RoleMember))
		require.Equal(t, 1, total(other.ID, ""), "a deleted person leaves every workspace's total")
		require.Equal(t, 0, total(other.ID, persist.RoleModerator))

		e.joinNamed(t, persist.RoleMember, "Newcomer", "")
		require.Equal(t, 2, total(e.ws.ID, ""))
		require.Equal(t, 1, total(e.ws.ID, persist.RoleMember))
		require.Equal(t, 1, total(other.ID, ""))

		// A workspace deleted with its members leaves no count behind and breaks nothing.
		require.NoError(t, e.h.Store.WithTx(ctx, func(tx *persist.Tx) error {
			return tx.WorkspaceDelete(ctx, persist.ActorFor(e.owner.User), other.ID)
		}))
		require.Equal(t, 2, total(e.ws.ID, ""))
	})

	t.Run("LimitDefaultsTo100AndCapsAt200", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		for range 205 {
			persisttest.Member(t, e.h.Store, e.ws.ID, persisttest.User(t, e.h.Store, nil).ID, persist.RoleMember)
		}
		p := e.members(t, e.owner.Token, nil)
		require.Len(t, p.Members, 100, "SPEC §Limits: member directory page default 100")
		require.True(t, p.HasMore)
		require.Equal(t, 206, *p.TotalCount)
		p = e.members(t, e.owner.Token, url.Values{"limit": {"1000"}})
		require.Len(t, p.Members, 200, "SPEC §Limits: member directory page maximum 200")
		p = e.members(t, e.owner.Token, url.Values{"limit": {"200"}, "cursor": {p.NextCursor}})
		require.Len(t, p.Members, 6)
		require.False(t, p.HasMore)
	})

	t.Run("BadParametersAre400", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		for _, q := range []string{"limit=0", "limit=-1", "limit=ten", "limit=1.5", "cursor=garbage", "cursor=bTA", "role=admin"} {
			e.h.Get(t, e.wsPath("/members?"+q), e.owner.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})

	t.Run("StableUnderConcurrentJoins", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		var before []string
		for range 10 {
			before = append(before, persisttest.User(t, e.h.Store, nil).ID)
			persisttest.Member(t, e.h.Store, e.ws.ID, before[len(before)-1], persist.RoleMember)
		}
		before = append([]string{e.owner.User.ID}, before...)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					persisttest.Member(t, e.h.Store, e.ws.ID, persisttest.User(t, e.h.Store, nil).ID, persist.RoleMember)
				}
			}()
		}
		var got []string
		cursor := ""
		for {
			q := url.Values{"limit": {"2"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			p := e.members(t, e.owner.Token, q)
			got = append(got, memberIDs(p)...)
			if !p.HasMore {
				break
			}
			cursor = p.NextCursor
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, id := range got {
			require.False(t, seen[id], "%s listed twice", id)
			seen[id] = true
		}
		require.Equal(t, before, got[:len(before)], "everyone present at the start, in join order, first")
	})

	t.Run("GuestsMayRead", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		guest := e.join(t, persist.RoleGuest)
		require.Len(t, e.members(t, guest.Token, nil).Members, 2)
	})
}
