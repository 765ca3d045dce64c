package persist

import (
	"context"
	"time"
)

// Moderation limits.
const (
	// MaxTimeout is the longest timeout a moderator may give.
	MaxTimeout = 365 * 24 * time.Hour
	// MaxModerationNoteLength bounds moderation notes, in Unicode characters after trimming.
	MaxModerationNoteLength = 1000
)

// ModeratedMember is a member as owners and moderators see them: the directory entry plus
// moderation state. TimeoutUntil is shown only while the timeout runs; PostLimit and
// PostsRemaining only for guests.
type ModeratedMember struct {
	DirectoryMember
	TimeoutUntil   *time.Time `json:"timeout_until,omitempty"`
	BlockedAt      *time.Time `json:"blocked_at,omitempty"`
	ModerationNote string     `json:"moderation_note,omitempty"`
	ModerationBy   string     `json:"moderation_by,omitempty"`
	ModerationAt   *time.Time `json:"moderation_at,omitempty"`
	PostLimit      *int       `json:"post_limit,omitempty"`
	PostsRemaining *int       `json:"posts_remaining,omitempty"`
}

// Moderated is the entry's moderation shape at instant now.
func (e MemberEntry) Moderated(now time.Time) ModeratedMember {
	out := ModeratedMember{DirectoryMember: e.Directory(), BlockedAt: e.BlockedAt, ModerationNote: e.ModerationNote,
		ModerationBy: e.ModerationBy, ModerationAt: e.ModerationAt}
	if e.TimeoutUntil != nil && e.TimeoutUntil.After(now) {
		out.TimeoutUntil = e.TimeoutUntil
	}
	if e.Role == RoleGuest {
		limit, remaining := GuestDailyPosts, max(GuestDailyPosts-e.PostsUsed, 0)
		out.PostLimit, out.PostsRemaining = &limit, &remaining
	}
	return out
}

// MemberModerationList returns a page of members with their moderation state, for the owner and
// moderators. It takes the directory's paging and filters.
// Codes: invalid_request (limit, cursor, role), not_found, forbidden.
func (tx *Tx) MemberModerationList(ctx context.Context, actor Actor, workspaceID string, p MemberListParams) (MemberPage[ModeratedMember], error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return MemberPage[ModeratedMember]{}, err
	}
	if err := requireManager(m); err != nil {
		return MemberPage[ModeratedMember]{}, err
	}
	page, err := tx.memberPage(ctx, workspaceID, p)
	return mapMembers(page, func(e MemberEntry) ModeratedMember { return e.Moderated(tx.now) }), err
}

// ModerationPatch is a moderation action; nil and false mean unchanged. At most one of
// TimeoutMinutes, TimeoutUntil and ClearTimeout may be set.
type ModerationPatch struct {
	// Role is moderator, member or guest (promoting a guest, demoting to the waiting room).
	Role *string
	// TimeoutMinutes times the member out from now, 1 minute up to MaxTimeout.
	TimeoutMinutes *int
	// TimeoutUntil times the member out until an instant within MaxTimeout.
	TimeoutUntil *time.Time
	// ClearTimeout ends a timeout.
	ClearTimeout bool
	// Blocked blocks (true) or unblocks (false) the member.
	Blocked *bool
	// ModerationNote replaces the note; "" clears it.
	ModerationNote *string
}

// MemberModerate changes a member's role, timeout, block or note and appends
// member.moderation_updated, whose payload omits the private note. The rules:
//   - the actor is the owner or a moderator; nobody moderates themselves or the owner, and
//     moderators never act on other moderators;
//   - only the owner appoints moderators, and only humans can be moderators; a bot keeps its
//     role; ownership moves only by transfer;
//   - a member demoted to guest finds the guest channel ready.
//
// Codes: invalid_request (a field, nothing to change), not_found (workspace, member), forbidden.
func (tx *Tx) MemberModerate(ctx context.Context, actor Actor, workspaceID, userID string, p ModerationPatch) (ModeratedMember, Event, error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return ModeratedMember{}, Event{}, err
	}
	if err := tx.requireManagerWriter(ctx, m); err != nil {
		return ModeratedMember{}, Event{}, err
	}
	target, err := tx.memberForUpdate(ctx, workspaceID, userID)
	if err != nil {
		return ModeratedMember{}, Event{}, err
	}
	switch {
	case target.UserID == actor.UserID:
		return ModeratedMember{}, Event{}, Forbidden("you cannot moderate yourself")
	case target.Role == RoleOwner:
		return ModeratedMember{}, Event{}, Forbidden("the workspace owner cannot be moderated")
	case target.Role == RoleModerator && m.Role != RoleOwner:
		return ModeratedMember{}, Event{}, Forbidden("moderators cannot act on other moderators")
	}
	next, err := applyModeration(target.Member, m.Role, target.User.Kind, p, tx.now)
	if err != nil {
		return ModeratedMember{}, Event{}, err
	}
	updated, err := scanMember(tx.queryRow(ctx, `UPDATE workspace_members SET role = $3, timeout_until = $4,
			blocked_at = $5, moderation_note = nullif($6, ''), moderation_by = $7, moderation_at = $8
		WHERE workspace_id = $1 AND user_id = $2 RETURNING `+memberColumns,
		workspaceID, userID, next.Role, next.TimeoutUntil, next.BlockedAt, next.ModerationNote, actor.UserID, tx.now))
	if err != nil {
		return ModeratedMember{}, Event{}, err
	}
	target.Member = updated
	tx.noteMembershipChanged(workspaceID, userID)
	if updated.Role == RoleGuest {
		if _, err := tx.guestChannelEnsure(ctx, workspaceID, actor.UserID); err != nil {
			return ModeratedMember{}, Event{}, err
		}
		if err := tx.channelStatesForget(ctx, workspaceID, []string{userID}); err != nil {
			return ModeratedMember{}, Event{}, err
		}
	}
	view := target.Moderated(tx.now)
	ev, err := tx.EventAppend(ctx, memberModerationEvent(workspaceID, actor.UserID, view))
	return view, ev, err
}

// applyModeration returns the member after patch p by an actor of role actorRole, on a target
// of user kind targetKind. Codes: invalid_request, forbidden.
func applyModeration(m Member, actorRole, targetKind string, p ModerationPatch, now time.Time) (Member, error) {
	if p.Role == nil && p.TimeoutMinutes == nil && p.TimeoutUntil == nil && !p.ClearTimeout && p.Blocked == nil && p.ModerationNote == nil {
		return m, Invalid("send at least one of role, timeout_minutes, timeout_until, clear_timeout, blocked, moderation_note")
	}
	if p.Role != nil && *p.Role != m.Role {
		role := *p.Role
		switch {
		case role == RoleOwner:
			return m, Invalid("ownership moves only by transfer-ownership")
		case role != RoleModerator && role != RoleMember && role != RoleGuest:
			return m, Invalid("role must be moderator, member or guest")
		case m.Role == RoleBot:
			return m, Invalid("a bot's role cannot change")
		case role == RoleModerator && actorRole != RoleOwner:
			return m, Forbidden("only the workspace owner appoints moderators")
		case role == RoleModerator && targetKind != KindHuman:
			return m, Invalid("only humans can be moderators")
		}
		m.Role = role
	}
	timeouts := 0
	for _, set := range []bool{p.TimeoutMinutes != nil, p.TimeoutUntil != nil, p.ClearTimeout} {
		if set {
			timeouts++
		}
	}
	if timeouts > 1 {
		return m, Invalid("send only one of timeout_minutes, timeout_until, clear_timeout")
	}
	switch {
	case p.TimeoutMinutes != nil:
		maxMinutes := int(MaxTimeout / time.Minute)
		if *p.TimeoutMinutes < 1 || *p.TimeoutMinutes > maxMinutes {
			return m, Invalid("timeout_minutes must be between 1 and %d", maxMinutes)
		}
		until := now.Add(time.Duration(*p.TimeoutMinutes) * time.Minute)
		m.TimeoutUntil = &until
	case p.TimeoutUntil != nil:
		until := p.TimeoutUntil.UTC()
		if !until.After(now) || until.Sub(now) > MaxTimeout {
			return m, Invalid("timeout_until must be in the future and within %d days", int(MaxTimeout/(24*time.Hour)))
		}
		m.TimeoutUntil = &until
	case p.ClearTimeout:
		m.TimeoutUntil = nil
	}
	if p.Blocked != nil {
		switch {
		case !*p.Blocked:
			m.BlockedAt = nil
		case m.BlockedAt == nil:
			at := now
			m.BlockedAt = &at
		}
	}
	if p.ModerationNote != nil {
		if err := normalizeLabel(&m.ModerationNote, *p.ModerationNote, "moderation_note", MaxModerationNoteLength); err != nil {
			return m, err
		}
	}
	return m, nil
}

// MemberStanding is the actor's own membership as the actor may see it: role, a running timeout,
// a block and, for a guest, today's post budget, so a client can say why it may not post before
// it tries. The moderators' note and who acted stay private to the moderators.
// Codes: not_found, forbidden.
func (tx *Tx) MemberStanding(ctx context.Context, actor Actor, workspaceID string) (ModeratedMember, error) {
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return ModeratedMember{}, err
	}
	e, err := tx.memberEntry(ctx, workspaceID, actor.UserID)
	if err != nil {
		return ModeratedMember{}, err
	}
	out := e.Moderated(tx.now)
	out.ModerationNote, out.ModerationBy, out.ModerationAt = "", "", nil
	return out, nil
}
