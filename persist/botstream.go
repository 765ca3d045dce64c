package persist

import "context"

// BotStream is what a bot token may read of its workspace's log over NATS: the same events as
// its WebSocket (the visibility rule for its viewer), so workspace-wide and public channel events
// unless it is a guest, the guest channel's if it is, and the private channels and direct
// conversations it belongs to.
type BotStream struct {
	TokenID string
	Actor   Actor
	Viewer  Viewer
	// GuestChannelID is the only channel a guest viewer reads; "" otherwise.
	GuestChannelID string
	// DMs are the direct conversations of the workspace the bot belongs to, sorted.
	DMs []string
	// PrivateChannels are the private channels of the workspace the bot is in, sorted (none for
	// a guest viewer).
	PrivateChannels []string
}

// BotStreamOpen authenticates a raw token for a new connection reading events: the token is live
// and holds realtime:read, the bot is a member of the token's workspace (and a user bot's owner
// too). It records the use (last_used_at). Codes: unauthenticated, missing_scope, forbidden,
// not_found.
func (tx *Tx) BotStreamOpen(ctx context.Context, raw string) (BotStream, error) {
	t, u, err := tx.BotTokenAuthenticate(ctx, raw)
	if err != nil {
		return BotStream{}, err
	}
	return tx.botStream(ctx, t, u)
}

// BotStreamCheck rechecks a token by id for an open connection or a replay request, as
// BotStreamOpen does, without recording a use. Codes: those of BotStreamOpen.
func (tx *Tx) BotStreamCheck(ctx context.Context, tokenID string) (BotStream, error) {
	var t BotToken
	var u User
	err := tx.queryRow(ctx, `SELECT `+botTokenColumnsOf("t.")+`, `+userColumnsOf("u.")+`
		FROM bot_tokens t JOIN users u ON u.id = t.bot_user_id
		WHERE t.id = $1 AND t.revoked_at IS NULL AND u.deleted_at IS NULL`, tokenID).Scan(append(botTokenDest(&t), userDest(&u)...)...)
	if err != nil {
		if e := notFoundAs(err, "token"); e != err {
			return BotStream{}, Errorf(CodeUnauthenticated, "the bot token is unknown or revoked")
		}
		return BotStream{}, err
	}
	return tx.botStream(ctx, t, u)
}

// BotStreamReplay is backfill over NATS: BotStreamCheck, then the page of events after the
// cursor that the token may read (see EventPageFor). Codes: those of BotStreamCheck and
// EventPageFor.
func (tx *Tx) BotStreamReplay(ctx context.Context, tokenID string, after int64, limit int, withTail bool) (BotStream, EventPage, error) {
	st, err := tx.BotStreamCheck(ctx, tokenID)
	if err != nil {
		return BotStream{}, EventPage{}, err
	}
	page, err := tx.EventPageFor(ctx, st.Actor, st.Viewer.WorkspaceID, after, limit, withTail)
	return st, page, err
}

func (tx *Tx) botStream(ctx context.Context, t BotToken, u User) (BotStream, error) {
	actor := BotActor(t, u)
	if !actor.HasScope(ScopeRealtimeRead) {
		return BotStream{}, Errorf(CodeMissingScope, "this bot token lacks the %s scope", ScopeRealtimeRead)
	}
	v, err := tx.ViewerFor(ctx, actor, t.WorkspaceID)
	if err != nil {
		return BotStream{}, err
	}
	st := BotStream{TokenID: t.ID, Actor: actor, Viewer: v, DMs: []string{}, PrivateChannels: []string{}}
	if !v.Guest {
		if st.PrivateChannels, err = tx.privateChannelsOf(ctx, t.WorkspaceID, u.ID); err != nil {
			return BotStream{}, err
		}
	}
	if v.Guest {
		f, err := tx.VisibilityFactsFor(ctx, t.WorkspaceID, nil, nil)
		if err != nil {
			return BotStream{}, err
		}
		st.GuestChannelID = f.GuestChannelID
	}
	rows, err := tx.query(ctx, `SELECT dm_id FROM dm_members WHERE workspace_id = $1 AND user_id = $2 ORDER BY dm_id`,
		t.WorkspaceID, u.ID)
	if err != nil {
		return BotStream{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return BotStream{}, err
		}
		st.DMs = append(st.DMs, id)
	}
	return st, rows.Err()
}
