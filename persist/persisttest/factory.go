package persisttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"testing"

	"github.com/natterchat/natter/persist"
)

// UserOpts shapes a factory user; nil fields get unique defaults.
type UserOpts struct {
	DisplayName *string
	Email       *string
	Handle      *string
}

func unique() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Ptr returns a pointer to v, for option fields.
func Ptr[T any](v T) *T { return &v }

// User creates a human.
func User(t testing.TB, store *persist.Store, opts *UserOpts) persist.User {
	t.Helper()
	if opts == nil {
		opts = &UserOpts{}
	}
	tag := unique()
	p := persist.UserCreateParams{DisplayName: "User " + tag, Email: "user-" + tag + "@example.com"}
	if opts.DisplayName != nil {
		p.DisplayName = *opts.DisplayName
	}
	if opts.Email != nil {
		p.Email = *opts.Email
	}
	if opts.Handle != nil {
		p.Handle = *opts.Handle
	}
	ctx := context.Background()
	u, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.UserCreate(ctx, p) })
	if err != nil {
		t.Fatalf("factory user: %v", err)
	}
	return u
}

// Session signs a user in and returns the raw bearer token.
func Session(t testing.TB, store *persist.Store, userID string) string {
	t.Helper()
	ctx := context.Background()
	token, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (string, error) {
		_, token, err := tx.SessionCreate(ctx, userID, persist.MethodMagicLink)
		return token, err
	})
	if err != nil {
		t.Fatalf("factory session: %v", err)
	}
	return token
}

// Workspace creates a workspace owned by ownerID.
func Workspace(t testing.TB, store *persist.Store, ownerID string) persist.Workspace {
	t.Helper()
	ctx := context.Background()
	w, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Workspace, error) {
		return tx.WorkspaceCreate(ctx, ownerID, "Workspace "+unique(), "")
	})
	if err != nil {
		t.Fatalf("factory workspace: %v", err)
	}
	return w
}

// Member adds a user to a workspace with a role.
func Member(t testing.TB, store *persist.Store, workspaceID, userID, role string) persist.Member {
	t.Helper()
	ctx := context.Background()
	m, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) {
		return tx.MemberAdd(ctx, workspaceID, userID, role)
	})
	if err != nil {
		t.Fatalf("factory member: %v", err)
	}
	return m
}

// Channel creates a channel as actor.
func Channel(t testing.TB, store *persist.Store, actor persist.Actor, workspaceID, name string) persist.Channel {
	t.Helper()
	ctx := context.Background()
	c, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Channel, error) {
		c, _, err := tx.ChannelCreate(ctx, actor, workspaceID, persist.ChannelCreateParams{Name: name})
		return c, err
	})
	if err != nil {
		t.Fatalf("factory channel: %v", err)
	}
	return c
}

// DM creates a direct conversation of workspaceID between memberIDs (rows only, no event), for
// tests that need one before or beside the DM API.
func DM(t testing.TB, store *persist.Store, workspaceID string, memberIDs ...string) string {
	t.Helper()
	sorted := append([]string(nil), memberIDs...)
	sort.Strings(sorted)
	return insertDM(t, store, workspaceID, sorted)
}
