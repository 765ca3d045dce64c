package persist

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxDMMembers bounds a direct conversation, the caller included.
const MaxDMMembers = 32

// DM is a direct conversation between a fixed set of workspace members, as the caller sees it:
// LastReadSeq, UnreadCount and MentionCount are the caller's. Every message of a conversation is
// written to its members, so each unread one counts as a mention (the web client's badge).
type DM struct {
	ID             string       `json:"id"`
	RouteID        string       `json:"route_id"`
	WorkspaceID    string       `json:"workspace_id"`
	Members        []PublicUser `json:"members"`
	CreatedAt      time.Time    `json:"created_at"`
	LastActivityAt time.Time    `json:"last_activity_at"`
	ReadState
	MentionCount int64 `json:"mention_count"`
}

const dmColumns = `d.id, d.route_id, d.workspace_id, d.created_at, d.last_activity_at, d.last_seq`

func dmDest(d *DM) []any {
	return []any{&d.ID, &d.RouteID, &d.WorkspaceID, &d.CreatedAt, &d.LastActivityAt, &d.LastSeq}
}

// DMForRead returns a direct conversation the actor may read: a member of its workspace and of
// the conversation itself; a bot token also needs dms:read. Members are not hydrated.
// Codes: not_found (no such conversation, or the actor is not in it), forbidden (not a workspace
// member), missing_scope.
func (tx *Tx) DMForRead(ctx context.Context, actor Actor, dmID string) (DM, Member, error) {
	return tx.dmFor(ctx, actor, dmID, ScopeDMsRead, false)
}

// DMForChange returns a direct conversation whose shared state the actor may change without
// posting (react, edit): readable, the actor neither timed out nor blocked; a bot token also
// needs dms:write. Codes: those of DMForRead, forbidden (timed out, blocked).
func (tx *Tx) DMForChange(ctx context.Context, actor Actor, dmID string) (DM, Member, error) {
	d, m, err := tx.dmFor(ctx, actor, dmID, ScopeDMsWrite, true)
	if err != nil {
		return DM{}, Member{}, err
	}
	if err := tx.requireActive(m); err != nil {
		return DM{}, Member{}, err
	}
	return d, m, nil
}

// DMForWrite returns a direct conversation the actor may post to right now: readable, and
// requireWriter passed (timeout, block, guest budget); a bot token also needs dms:write.
// Codes: those of DMForRead, forbidden (timed out, blocked), rate_limited.
func (tx *Tx) DMForWrite(ctx context.Context, actor Actor, dmID string) (DM, Member, error) {
	d, m, err := tx.dmFor(ctx, actor, dmID, ScopeDMsWrite, true)
	if err != nil {
		return DM{}, Member{}, err
	}
	if err := tx.requireWriter(ctx, m); err != nil {
		return DM{}, Member{}, err
	}
	return d, m, nil
}

// dmSelect reads a direct conversation ($1) and whether a user ($2) is among its members, the
// first statement of its guards.
const dmSelect = `SELECT ` + dmColumns + `,
	EXISTS (SELECT 1 FROM dm_members dm WHERE dm.dm_id = d.id AND dm.user_id = $2)
	FROM dms d WHERE d.id = $1`

// dmFor finds a conversation the actor belongs to; write locks the actor's membership for the
// caller's write.
func (tx *Tx) dmFor(ctx context.Context, actor Actor, dmID, scope string, write bool) (DM, Member, error) {
	var d DM
	var in bool
	err := tx.queryRow(ctx, dmSelect, dmID, actor.UserID).Scan(append(dmDest(&d), &in)...)
	if err != nil {
		return DM{}, Member{}, notFoundAs(err, "direct conversation")
	}
	require := tx.requireMemberToRead
	if write {
		require = tx.requireMember
	}
	m, err := require(ctx, d.WorkspaceID, actor)
	if err != nil {
		return DM{}, Member{}, err
	}
	if !in {
		return DM{}, Member{}, NotFound("direct conversation")
	}
	if actor.IsBotToken() && !actor.HasScope(scope) {
		return DM{}, Member{}, Errorf(CodeMissingScope, "this token needs the %s scope for direct conversations", scope)
	}
	return d, m, nil
}

// DMCreate returns the direct conversation between the actor and memberIDs, creating it when
// this set of members has none (created reports which). Asking again for the same set reopens
// it for the actor. Guests cannot start or join direct conversations. No event is appended:
// the durable vocabulary has no conversation type; members learn of it from its first message.
// Codes: invalid_request (members), forbidden (guest, timed out, blocked), not_found (workspace).
func (tx *Tx) DMCreate(ctx context.Context, actor Actor, workspaceID string, memberIDs []string) (d DM, created bool, err error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return DM{}, false, err
	}
	if err := tx.requireFullWriter(ctx, m, "start direct conversations"); err != nil {
		return DM{}, false, err
	}
	ids, err := dmMemberSet(actor.UserID, memberIDs)
	if err != nil {
		return DM{}, false, err
	}
	rows, err := tx.query(ctx, `SELECT wm.user_id, wm.role FROM workspace_members wm JOIN users u ON u.id = wm.user_id
		WHERE wm.workspace_id = $1 AND wm.user_id = ANY($2) AND u.deleted_at IS NULL`, workspaceID, ids)
	if err != nil {
		return DM{}, false, err
	}
	roles := map[string]string{}
	for rows.Next() {
		var id, role string
		if err := rows.Scan(&id, &role); err != nil {
			rows.Close()
			return DM{}, false, err
		}
		roles[id] = role
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return DM{}, false, err
	}
	for _, id := range ids {
		switch roles[id] {
		case "":
			return DM{}, false, Invalid("member_ids: %s is not a member of this workspace", id)
		case RoleGuest:
			return DM{}, false, Invalid("member_ids: %s is a waiting-room guest; guests cannot join direct conversations", id)
		}
	}
	id := NewID(PrefixDM, tx.now)
	err = tx.queryRow(ctx, `INSERT INTO dms (id, route_id, workspace_id, member_key, created_by, created_at, last_activity_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (workspace_id, member_key) DO NOTHING RETURNING id`,
		id, RouteID("D", id), workspaceID, strings.Join(ids, ","), actor.UserID, tx.now).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		// The set already has its conversation: reopen it for the actor.
		if err := tx.queryRow(ctx, `UPDATE dm_members SET hidden_at = NULL
			FROM dms d WHERE d.workspace_id = $1 AND d.member_key = $2
				AND dm_members.dm_id = d.id AND dm_members.user_id = $3
			RETURNING d.id`, workspaceID, strings.Join(ids, ","), actor.UserID).Scan(&id); err != nil {
			return DM{}, false, err
		}
	} else if err != nil {
		return DM{}, false, err
	} else {
		created = true
		if _, err := tx.exec(ctx, `INSERT INTO dm_members (workspace_id, dm_id, user_id)
			SELECT $1, $2, unnest($3::text[])`, workspaceID, id, ids); err != nil {
			return DM{}, false, err
		}
	}
	d, err = tx.DMGet(ctx, actor, id)
	return d, created, err
}

// dmMemberSet is the sorted, de-duplicated member set of a new conversation: the creator plus
// memberIDs, at least two and at most MaxDMMembers. Codes: invalid_request.
func dmMemberSet(creatorID string, memberIDs []string) ([]string, error) {
	set := map[string]bool{creatorID: true}
	for _, id := range memberIDs {
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, Invalid("member_ids must not contain empty ids")
		}
		set[id] = true
	}
	if len(set) < 2 {
		return nil, Invalid("member_ids must name at least one other member")
	}
	if len(set) > MaxDMMembers {
		return nil, Invalid("a direct conversation has at most %d members, you included", MaxDMMembers)
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// DMGet returns a direct conversation the actor is in, with its members and the actor's read
// state. Codes: those of DMForRead.
func (tx *Tx) DMGet(ctx context.Context, actor Actor, dmID string) (DM, error) {
	d, _, err := tx.DMForRead(ctx, actor, dmID)
	if err != nil {
		return DM{}, err
	}
	out := []DM{d}
	if err := tx.dmHydrate(ctx, actor, out); err != nil {
		return DM{}, err
	}
	return out[0], nil
}

// DMList returns the actor's direct conversations in a workspace, newest activity first. A
// conversation the actor hid is left out until something happens in it after the hiding.
// Codes: not_found (workspace), forbidden.
func (tx *Reader) DMList(ctx context.Context, actor Actor, workspaceID string) ([]DM, error) {
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+dmColumns+` FROM dms d
		JOIN dm_members me ON me.dm_id = d.id AND me.user_id = $2
		WHERE d.workspace_id = $1 AND (me.hidden_at IS NULL OR d.last_activity_at > me.hidden_at)
		ORDER BY d.last_activity_at DESC, d.id DESC`, workspaceID, actor.UserID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []DM{}
	for rows.Next() {
		var d DM
		if err := rows.Scan(dmDest(&d)...); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return out, tx.dmHydrate(ctx, actor, out)
}

// DMSetHidden hides a direct conversation from the actor's list (hidden=true) or reopens it.
// Only the actor's own view changes. Codes: those of DMForRead.
func (tx *Tx) DMSetHidden(ctx context.Context, actor Actor, dmID string, hidden bool) (DM, error) {
	d, _, err := tx.DMForRead(ctx, actor, dmID)
	if err != nil {
		return DM{}, err
	}
	var at *time.Time
	if hidden {
		at = &tx.now
	}
	if _, err := tx.exec(ctx, `UPDATE dm_members SET hidden_at = $3 WHERE workspace_id = $1 AND dm_id = $2 AND user_id = $4`,
		d.WorkspaceID, d.ID, at, actor.UserID); err != nil {
		return DM{}, err
	}
	return tx.DMGet(ctx, actor, dmID)
}

// dmHydrate fills members and the actor's read state of each conversation, in two queries.
func (tx *Reader) dmHydrate(ctx context.Context, actor Actor, dms []DM) error {
	if len(dms) == 0 {
		return nil
	}
	ids := make([]string, len(dms))
	at := map[string]int{}
	for i, d := range dms {
		ids[i], at[d.ID] = d.ID, i
		dms[i].Members = []PublicUser{}
	}
	rows, err := tx.query(ctx, `SELECT dm.dm_id, `+userColumnsOf("u.")+` FROM dm_members dm JOIN users u ON u.id = dm.user_id
		WHERE dm.workspace_id = $1 AND dm.dm_id = ANY($2) ORDER BY dm.dm_id, dm.user_id`, dms[0].WorkspaceID, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var dmID string
		var u User
		if err := rows.Scan(append([]any{&dmID}, userDest(&u)...)...); err != nil {
			return err
		}
		i := at[dmID]
		dms[i].Members = append(dms[i].Members, u.Public())
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	states, err := tx.readStates(ctx, dmScope, actor.UserID, dms[0].WorkspaceID, ids)
	if err != nil {
		return err
	}
	for i := range dms {
		dms[i].ReadState = states[dms[i].ID]
		dms[i].MentionCount = dms[i].UnreadCount
	}
	return nil
}
