package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// GuestChannel is the name of the waiting-room channel, the only one guests may see.
const GuestChannel = "guest"

// GuestDailyPosts is how many messages a waiting-room guest may post per UTC day.
const GuestDailyPosts = 3

// guestChannelEnsure returns the workspace's guest channel, creating it (and appending
// channel.created by actorID) when missing, so a guest always has a room. Concurrent callers
// meet the unique name and all return the one channel.
func (tx *Tx) guestChannelEnsure(ctx context.Context, workspaceID, actorID string) (Channel, error) {
	id := NewID(PrefixChannel, tx.now)
	c, err := scanChannel(tx.queryRow(ctx, `
		INSERT INTO channels (id, route_id, workspace_id, name, kind, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (workspace_id, name) DO NOTHING
		RETURNING `+channelColumns, id, RouteID("C", id), workspaceID, GuestChannel, DefaultChannelKind, tx.now))
	if errors.Is(err, pgx.ErrNoRows) {
		c, err = scanChannel(tx.queryRow(ctx, `SELECT `+channelColumns+` FROM channels
			WHERE workspace_id = $1 AND name = $2`, workspaceID, GuestChannel))
		return c, err
	}
	if err != nil {
		return Channel{}, err
	}
	_, err = tx.EventAppend(ctx, channelEvent("channel.created", c, actorID))
	return c, err
}

// ChannelForRead returns a channel the actor may read, with the actor's membership. Guests read
// only the guest channel; a private channel is read only by its members. Codes: not_found (no
// such channel, or one the actor may not see), forbidden (not a member).
func (tx *Tx) ChannelForRead(ctx context.Context, actor Actor, channelID string) (Channel, Member, error) {
	return tx.channelFor(ctx, actor, channelID, false)
}

// channelSelect reads one channel by id, the first statement of its guards.
var channelSelect = `SELECT ` + channelColumns + ` FROM channels WHERE id = $1`

// channelFor is ChannelForRead, locking the actor's membership when the caller will write.
func (tx *Tx) channelFor(ctx context.Context, actor Actor, channelID string, write bool) (Channel, Member, error) {
	c, err := scanChannel(tx.queryRow(ctx, channelSelect, channelID))
	if err != nil {
		return Channel{}, Member{}, notFoundAs(err, "channel")
	}
	require := tx.requireMemberToRead
	if write {
		require = tx.requireMember
	}
	m, err := require(ctx, c.WorkspaceID, actor)
	if e, refused := ErrorOf(err); refused && e.Code == CodeForbidden && c.Visibility == VisibilityPrivate {
		return Channel{}, Member{}, NotFound("channel") // not even its existence outside the workspace
	}
	if err != nil {
		return Channel{}, Member{}, err
	}
	if m.Role == RoleGuest && c.Name != GuestChannel {
		return Channel{}, Member{}, NotFound("channel")
	}
	if c.Visibility == VisibilityPrivate {
		// To anyone outside it a private channel does not exist: the same answer as no channel.
		in, err := tx.channelMemberIs(ctx, c.ID, actor.UserID)
		if err != nil {
			return Channel{}, Member{}, err
		}
		if !in {
			return Channel{}, Member{}, NotFound("channel")
		}
	}
	return c, m, nil
}

// ChannelForWrite returns a channel the actor may post to right now: readable, not archived, the
// actor neither timed out nor blocked, and, for a guest, one post of today's budget taken (the
// caller's transaction holds it, so a failed post gives it back).
// Codes: those of ChannelForRead, forbidden (archived, timed out, blocked), rate_limited (the
// guest budget is spent).
func (tx *Tx) ChannelForWrite(ctx context.Context, actor Actor, channelID string) (Channel, Member, error) {
	c, m, err := tx.ChannelForChange(ctx, actor, channelID)
	if err != nil {
		return Channel{}, Member{}, err
	}
	if err := tx.requireWriter(ctx, m); err != nil {
		return Channel{}, Member{}, err
	}
	return c, m, nil
}

// ChannelForChange returns a channel whose shared state the actor may change without posting
// (react, pin, edit): readable, not archived, the actor neither timed out nor blocked. No guest
// post is spent. Codes: those of ChannelForRead, forbidden (archived, timed out, blocked).
func (tx *Tx) ChannelForChange(ctx context.Context, actor Actor, channelID string) (Channel, Member, error) {
	c, m, err := tx.channelFor(ctx, actor, channelID, true)
	if err != nil {
		return Channel{}, Member{}, err
	}
	if c.ArchivedAt != nil {
		return Channel{}, Member{}, Forbidden("this channel is archived; unarchive it to post")
	}
	if err := tx.requireActive(m); err != nil {
		return Channel{}, Member{}, err
	}
	return c, m, nil
}

// requireFullWriter is the guard of writes the waiting room does not allow: it refuses guests
// (what names the action, as in "create channels"), then applies requireWriter. Creating
// channels, direct conversations and uploads go through it. Codes: forbidden.
func (tx *Tx) requireFullWriter(ctx context.Context, m Member, what string) error {
	if m.Role == RoleGuest {
		return Forbidden("guests in the waiting room cannot %s", what)
	}
	return tx.requireWriter(ctx, m)
}

// requireActive refuses members who may not change anything in the workspace at the moment:
// blocked, or timed out. Codes: forbidden.
func (tx *Tx) requireActive(m Member) error {
	if o := m.owner; o != nil {
		if o.BlockedAt != nil {
			return Forbidden("%s is blocked in this workspace", m.ownerWho)
		}
		if o.TimeoutUntil != nil && o.TimeoutUntil.After(tx.now) {
			return Forbidden("%s is timed out until %s", m.ownerWho, o.TimeoutUntil.UTC().Format(time.RFC3339))
		}
	}
	if m.BlockedAt != nil {
		return Forbidden("you are blocked in this workspace")
	}
	if m.TimeoutUntil != nil && m.TimeoutUntil.After(tx.now) {
		return Forbidden("you are timed out until %s", m.TimeoutUntil.UTC().Format(time.RFC3339))
	}
	return nil
}

// requireWriter refuses members who may not write anywhere in the workspace at the moment
// (timed out or blocked) and spends one guest post. Every write guard (channels, direct
// conversations, uploads, slash commands) goes through it. Codes: forbidden, rate_limited.
func (tx *Tx) requireWriter(ctx context.Context, m Member) error {
	if err := tx.requireActive(m); err != nil {
		return err
	}
	if m.Role != RoleGuest {
		return nil
	}
	// A user bot that is a guest through its owner spends the owner's budget: the two together
	// post no more than the owner alone may.
	spender := m.UserID
	if m.owner != nil && m.owner.Role == RoleGuest {
		spender = m.owner.UserID
	}
	var used int
	err := tx.queryRow(ctx, `
		INSERT INTO guest_post_counts (workspace_id, user_id, day, used) VALUES ($1, $2, $3::date, 1)
		ON CONFLICT (workspace_id, user_id, day) DO UPDATE SET used = guest_post_counts.used + 1
			WHERE guest_post_counts.used < $4
		RETURNING used`, m.WorkspaceID, spender, tx.today(), GuestDailyPosts).Scan(&used)
	if err != nil {
		if e := notFoundAs(err, "budget"); e != err {
			return Errorf(CodeRateLimited, "guests may post %d messages a day; the budget renews at midnight UTC", GuestDailyPosts)
		}
		return err
	}
	return nil
}
