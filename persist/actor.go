package persist

import "context"

// Actor is who performs a store operation. Every method that reads or writes workspace data takes
// one and checks it in its own transaction: membership, the token's workspace binding, and a user
// bot's owner.
type Actor struct {
	// UserID is the acting user (a bot's own id for bot tokens, never the owner's).
	UserID string
	// Kind is KindHuman or KindBot.
	Kind string
	// TokenWorkspaceID is the workspace a bot token is bound to; a token never reaches another
	// workspace, even one the bot later joins. Empty for humans.
	TokenWorkspaceID string
	// OwnerUserID is a user bot's human owner, who must remain a member of the target workspace
	// for the bot to act there. Empty for humans and service bots.
	OwnerUserID string
	// IssuerUserID is the person who minted a service bot's token (bot_tokens.created_by): the
	// bot never exceeds them at the time of the call, as a user bot never exceeds its owner, so a
	// token outlives neither its issuer's membership nor their standing. Empty for humans and user
	// bots (whose tokens only their owner mints).
	IssuerUserID string
	// Scopes are a bot token's concrete scopes. Routes check the scope they need before the
	// store is called; the store consults Scopes only for rules that depend on the request body
	// (agent_activity:write for agent messages and agent.progress). Empty for humans.
	Scopes []string
	// CorrelationID is the X-Correlation-ID of the request acting, recorded in the payload of
	// the message events it appends so a client can match an event to its own request.
	// Empty when no request is behind the operation.
	CorrelationID string
}

// IsBotToken reports whether the actor authenticated with a bot token.
func (a Actor) IsBotToken() bool { return a.TokenWorkspaceID != "" }

// HasScope reports whether a bot token actor holds scope. Humans hold no scopes.
func (a Actor) HasScope(scope string) bool {
	for _, s := range a.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// ActorFor is the actor of a human (or any user acting without a token).
func ActorFor(u User) Actor {
	return Actor{UserID: u.ID, Kind: u.Kind, OwnerUserID: u.OwnerUserID}
}

// BotActor is the actor of bot u acting with token t: bound to the token's workspace, with its
// scopes, and bounded by its owner (a user bot) or by the token's issuer (a service bot).
func BotActor(t BotToken, u User) Actor {
	a := ActorFor(u)
	a.TokenWorkspaceID, a.Scopes = t.WorkspaceID, t.Scopes
	if a.OwnerUserID == "" {
		a.IssuerUserID = t.CreatedBy
	}
	return a
}

// BoundBy is the person whose standing bounds the actor: a user bot's owner, a service bot
// token's issuer, "" for everyone else.
func (a Actor) BoundBy() string {
	if a.OwnerUserID != "" {
		return a.OwnerUserID
	}
	return a.IssuerUserID
}

// requireMember is the store's membership guard for actor in a workspace, run inside the
// transaction of the operation it guards. It locks the membership row (FOR SHARE) so a concurrent
// removal or role change waits for this transaction. Codes: not_found (no such workspace),
// forbidden (not a member, token bound elsewhere, or a user bot whose owner left).
func (tx *Tx) requireMember(ctx context.Context, workspaceID string, actor Actor) (Member, error) {
	return tx.requireMemberLocking(ctx, workspaceID, actor, memberShare)
}

// requireMemberToRead is requireMember for operations that only read. It takes no row lock: a
// lock would turn every read into a write transaction (a tuple lock is WAL-logged and its commit
// flushed), and a read has nothing to keep consistent with a concurrent removal.
func (tx *Reader) requireMemberToRead(ctx context.Context, workspaceID string, actor Actor) (Member, error) {
	return tx.requireMemberLocking(ctx, workspaceID, actor, "")
}

// requireMemberForUpdate is requireMember for an operation that will change the actor's own
// membership row (ownership transfer). Taking the row exclusively from the start makes a second
// such operation wait instead of deadlocking with the first as both upgrade a shared lock.
func (tx *Tx) requireMemberForUpdate(ctx context.Context, workspaceID string, actor Actor) (Member, error) {
	return tx.requireMemberLocking(ctx, workspaceID, actor, "FOR UPDATE")
}

// memberShare is the lock requireMember takes on the membership rows.
const memberShare = "FOR SHARE"

// memberSelect reads one membership row ($1 workspace, $2 user) with the row lock clause lock
// ("" for none).
func memberSelect(lock string) string {
	return `SELECT ` + memberColumns + ` FROM workspace_members WHERE workspace_id = $1 AND user_id = $2 ` + lock
}

func (tx *Reader) requireMemberLocking(ctx context.Context, workspaceID string, actor Actor, lock string) (Member, error) {
	if actor.TokenWorkspaceID != "" && actor.TokenWorkspaceID != workspaceID {
		return Member{}, Forbidden("this token is bound to another workspace")
	}
	// The membership row first: a member is the common case and needs this one query (the row's
	// foreign key vouches for the workspace). Only a miss asks whether the workspace exists.
	m, err := scanMember(tx.queryRow(ctx, memberSelect(lock), workspaceID, actor.UserID))
	if err != nil {
		if e := notFoundAs(err, "member"); e == err {
			return Member{}, err
		}
		var exists bool
		if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = $1)`, workspaceID).Scan(&exists); err != nil {
			return Member{}, err
		}
		if !exists {
			return Member{}, NotFound("workspace")
		}
		return Member{}, Forbidden("you are not a member of this workspace")
	}
	if by := actor.BoundBy(); by != "" && by != actor.UserID {
		who := "this bot's owner"
		if actor.OwnerUserID == "" {
			who = "the person who issued this bot token"
		}
		owner, err := scanMember(tx.queryRow(ctx, memberSelect(lock), workspaceID, by))
		if e := notFoundAs(err, "member"); e != err {
			return Member{}, Forbidden("%s is no longer a member of this workspace", who)
		} else if err != nil {
			return Member{}, err
		}
		m = boundByOwner(m, owner, who)
	}
	return m, nil
}

// boundByOwner is a user bot's membership as every rule must read it: a user bot can never exceed
// its owner (SPEC), so it is a waiting-room guest (reading only the guest channel, spending the
// owner's daily posts) while the owner is one, and it carries the owner's membership, whose block
// or timeout requireActive applies to the bot. Because requireMember applies it, every path that
// checks the bot's membership (HTTP, uploads, reads, socket visibility, NATS permissions) applies
// the owner's with it. A service bot's token is bounded the same way by its issuer (issue 22:
// what a moderator minted must not outlive the moderator's standing); who names the bounding
// person in refusals.
func boundByOwner(bot, owner Member, who string) Member {
	bot.owner, bot.ownerWho = &owner, who
	if owner.Role == RoleGuest {
		bot.Role = RoleGuest
	}
	return bot
}
