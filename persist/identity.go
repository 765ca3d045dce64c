package persist

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The isolated workspace open GitHub login joins (rule 5 of §Code-hosting OAuth). Its slug is
// reserved, so only this path can create it; it has no owner.
const (
	GuestsWorkspaceName = "Guests"
	GuestsWorkspaceSlug = "guests"
)

// Where a sign-in places a person.
const (
	// PlaceGuests is the isolated Guests workspace of open GitHub login.
	PlaceGuests = "guests"
	// PlaceDefault is the instance's default workspace (created, owned by the person, when none
	// exists yet).
	PlaceDefault = "default"
)

// Placement is the workspace a sign-in joins and the role a newcomer gets there.
type Placement struct {
	Workspace string // PlaceGuests or PlaceDefault
	// Role is a newcomer's role: RoleMember, RoleModerator or RoleGuest. An existing member keeps
	// theirs, except that RoleModerator promotes an existing guest or member.
	Role string
}

// ExternalIdentity is an account at a sign-in provider as the provider reports it.
type ExternalIdentity struct {
	Provider string
	// Subject is the provider's user id, the only key an account is matched by.
	Subject     string
	Login       string
	DisplayName string
	// Email is the account's verified primary email, or "".
	Email     string
	AvatarURL string
}

// IdentitySignIn is a completed provider sign-in to turn into a Natter sign-in.
type IdentitySignIn struct {
	Identity ExternalIdentity
	Place    Placement
	// Desktop, when set, makes the sign-in end in a desktop grant instead of a session.
	Desktop *DesktopGrant
}

// IdentitySignIn finds the user bound to the external account, or creates one, reconciles the
// profile, starts a session (method github; or records p.Desktop's grant) and joins the placed
// workspace, all in this transaction (rules 2, 3 and 5 of §Code-hosting OAuth). The workspace
// join is the last write, since it may append events. Session and Token are empty for a
// desktop sign-in. Codes: invalid_request (a malformed identity), over_capacity (desktop grants).
func (tx *Tx) IdentitySignIn(ctx context.Context, p IdentitySignIn) (SignedIn, error) {
	u, err := tx.identityUpsert(ctx, p.Identity)
	if err != nil {
		return SignedIn{}, err
	}
	out := SignedIn{User: u}
	if p.Desktop != nil {
		err = tx.desktopGrantCreate(ctx, u.ID, *p.Desktop)
	} else {
		out.Session, out.Token, err = tx.SessionCreate(ctx, u.ID, MethodGitHub)
	}
	if err != nil {
		return SignedIn{}, err
	}
	return out, tx.placementJoin(ctx, u.ID, p.Place)
}

// identityUpsert returns the live user bound to the identity, reconciling its profile, or
// creates the user and the binding. The (provider, subject) pair is locked first, so concurrent
// first sign-ins of one account make one user.
//
// Reconciliation (rule 3): an empty email is filled with the provider's verified email unless
// another account holds it (accounts are never linked by email); an existing email is kept; the
// display name follows the provider only while the user has not edited it (it still equals
// the name the provider last reported); a provider avatar replaces only a blank or email-derived
// avatar.
func (tx *Tx) identityUpsert(ctx context.Context, id ExternalIdentity) (User, error) {
	if id.Provider == "" || id.Subject == "" {
		return User{}, Invalid("the provider reported no account id")
	}
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"identity:"+id.Provider+":"+id.Subject); err != nil {
		return User{}, err
	}
	email := NormalizeEmail(id.Email)
	if !validEmail(email) {
		email = ""
	}
	avatar, err := NormalizeAvatarURL(id.AvatarURL)
	if err != nil {
		avatar = ""
	}
	name := displayNameFrom(id.DisplayName, id.Login, localPart(email), "New user")
	var userID, lastName string
	err = tx.queryRow(ctx, `SELECT user_id, display_name FROM user_identities
		WHERE provider = $1 AND provider_user_id = $2`, id.Provider, id.Subject).Scan(&userID, &lastName)
	switch {
	case err == nil:
		u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1 FOR UPDATE`, userID))
		if err != nil {
			return User{}, err
		}
		if u.DeletedAt == nil {
			return tx.identityReconcile(ctx, u, id, lastName, name, email, avatar)
		}
		// The account's user was deleted: the account starts over with a new user.
	case !errors.Is(err, pgx.ErrNoRows):
		return User{}, err
	}
	u, err := scanUser(tx.queryRow(ctx, `
		INSERT INTO users (id, kind, display_name, avatar_url, created_at, updated_at)
		VALUES ($1, 'human', $2, nullif($3, ''), $4, $4)
		RETURNING `+userColumns,
		NewID(PrefixUser, tx.now), name, avatar, tx.now))
	if err != nil {
		return User{}, err
	}
	if u, err = tx.userEmailFill(ctx, u, email); err != nil {
		return User{}, err
	}
	_, err = tx.exec(ctx, `
		INSERT INTO user_identities (provider, provider_user_id, user_id, login, email, display_name, created_at, updated_at)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6, $7, $7)
		ON CONFLICT (provider, provider_user_id) DO UPDATE SET user_id = excluded.user_id, login = excluded.login,
			email = excluded.email, display_name = excluded.display_name, updated_at = excluded.updated_at`,
		id.Provider, id.Subject, u.ID, id.Login, email, name, tx.now)
	return u, err
}

// identityReconcile applies a later sign-in's profile to the bound user u (locked) and records
// what the provider reported.
func (tx *Tx) identityReconcile(ctx context.Context, u User, id ExternalIdentity, lastName, name, email, avatar string) (User, error) {
	if u.DisplayName == lastName {
		u.DisplayName = name
	}
	if avatar != "" && (u.AvatarURL == "" || u.AvatarURL == (User{Email: u.Email}).Avatar()) {
		u.AvatarURL = avatar
	}
	u, err := scanUser(tx.queryRow(ctx, `
		UPDATE users SET display_name = $2, avatar_url = nullif($3, ''), updated_at = $4
		WHERE id = $1 RETURNING `+userColumns, u.ID, u.DisplayName, u.AvatarURL, tx.now))
	if err != nil {
		return User{}, err
	}
	if u, err = tx.userEmailFill(ctx, u, email); err != nil {
		return User{}, err
	}
	_, err = tx.exec(ctx, `UPDATE user_identities SET login = $3, display_name = $4, updated_at = $6,
			email = coalesce(email, nullif($5, ''))
		WHERE provider = $1 AND provider_user_id = $2`, id.Provider, id.Subject, id.Login, name, email, tx.now)
	return u, err
}

// userEmailFill gives u the email when u has none and no other account holds it. The statement
// runs under a savepoint: when a concurrent sign-in takes the email first, the unique index
// refuses it and u simply stays without an email (accounts are never linked by email).
func (tx *Tx) userEmailFill(ctx context.Context, u User, email string) (User, error) {
	if u.Email != "" || email == "" {
		return u, nil
	}
	sp, err := tx.tx.Begin(ctx)
	if err != nil {
		return User{}, err
	}
	tag, err := sp.Exec(ctx, `UPDATE users SET email = $2 WHERE id = $1 AND email IS NULL
		AND NOT EXISTS (SELECT 1 FROM users WHERE email = $2)`, u.ID, email)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505":
		return u, sp.Rollback(ctx)
	case err != nil:
		_ = sp.Rollback(ctx)
		return User{}, err
	}
	if err := sp.Commit(ctx); err != nil {
		return User{}, err
	}
	if tag.RowsAffected() == 1 {
		u.Email = email
	}
	return u, nil
}

// placementJoin lets userID into the placed workspace. In the Guests workspace a newcomer gets
// the placement's role and an existing member keeps theirs, except that a moderator placement
// promotes an existing guest or member (appending member.moderation_updated).
func (tx *Tx) placementJoin(ctx context.Context, userID string, p Placement) error {
	if p.Workspace == PlaceDefault {
		_, _, err := tx.DefaultWorkspaceJoin(ctx, userID, false)
		return err
	}
	w, err := tx.guestsWorkspaceEnsure(ctx)
	if err != nil {
		return err
	}
	before, err := tx.MemberGet(ctx, w.ID, userID)
	if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
		_, err = tx.MemberJoin(ctx, w.ID, userID, p.Role)
		return err
	}
	if err != nil || p.Role != RoleModerator || (before.Role != RoleGuest && before.Role != RoleMember) {
		return err
	}
	entry, err := tx.memberForUpdate(ctx, w.ID, userID)
	if err != nil {
		return err
	}
	if err := tx.memberSetRole(ctx, w.ID, userID, RoleModerator, userID); err != nil {
		return err
	}
	now := tx.now
	entry.Role, entry.ModerationBy, entry.ModerationAt = RoleModerator, userID, &now
	_, err = tx.EventAppend(ctx, memberModerationEvent(w.ID, userID, entry.Moderated(tx.now)))
	return err
}

// guestsWorkspaceEnsure returns the Guests workspace, creating it (ownerless) when missing.
// Concurrent callers make one.
func (tx *Tx) guestsWorkspaceEnsure(ctx context.Context) (Workspace, error) {
	id := NewID(PrefixWorkspace, tx.now)
	w, err := scanWorkspace(tx.queryRow(ctx, `
		INSERT INTO workspaces (id, route_id, name, slug, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (slug) DO NOTHING RETURNING `+workspaceColumns,
		id, RouteID("T", id), GuestsWorkspaceName, GuestsWorkspaceSlug, tx.now))
	if errors.Is(err, pgx.ErrNoRows) {
		w, err = scanWorkspace(tx.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE slug = $1`,
			GuestsWorkspaceSlug))
		return w, err
	}
	if err != nil {
		return Workspace{}, err
	}
	_, err = tx.exec(ctx, `INSERT INTO event_heads (workspace_id) VALUES ($1)`, w.ID)
	return w, err
}

// DefaultWorkspaceJoin lets userID into the instance's default workspace as a member; an
// existing member keeps their role. When there is no default workspace, one is created with
// userID as its owner (and a `general` channel) and becomes the default. With ownerless, a
// newcomer to a default workspace that has no owner becomes its owner (the identity proxy's
// first arrival). Joining may append events, so it is the last write of the caller's
// transaction. Codes: not_found (user).
func (tx *Tx) DefaultWorkspaceJoin(ctx context.Context, userID string, ownerless bool) (Workspace, Member, error) {
	for locked := false; ; locked = true {
		id, err := tx.SettingGet(ctx, SettingDefaultWorkspace)
		if err != nil {
			return Workspace{}, Member{}, err
		}
		if id != "" {
			w, err := tx.WorkspaceGet(ctx, id)
			if err == nil {
				m, err := tx.defaultWorkspaceEnter(ctx, w.ID, userID, ownerless)
				return w, m, err
			}
			if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
				return Workspace{}, Member{}, err
			}
		}
		if locked {
			break
		}
		// Serialise with dev bootstrap and other first sign-ins, then look again.
		if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLock); err != nil {
			return Workspace{}, Member{}, err
		}
	}
	u, err := tx.UserGet(ctx, userID)
	if err != nil {
		return Workspace{}, Member{}, err
	}
	w, err := tx.defaultWorkspaceCreate(ctx, u)
	if err != nil {
		return Workspace{}, Member{}, err
	}
	m, err := tx.MemberGet(ctx, w.ID, userID)
	return w, m, err
}

// defaultWorkspaceEnter joins userID to the default workspace: as its owner when ownerless asks
// and nobody owns it yet, else as a member (an existing member keeps their role).
func (tx *Tx) defaultWorkspaceEnter(ctx context.Context, workspaceID, userID string, ownerless bool) (Member, error) {
	if ownerless {
		if m, err := tx.MemberGet(ctx, workspaceID, userID); err == nil {
			return m, nil
		}
		_, err := tx.workspaceOwner(ctx, workspaceID)
		if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
			return tx.MemberAdd(ctx, workspaceID, userID, RoleOwner)
		}
		if err != nil {
			return Member{}, err
		}
	}
	return tx.MemberJoin(ctx, workspaceID, userID, RoleMember)
}

// OIDCSignIn signs in the person with a verified email from an OIDC provider: the user with that
// email (lowercased) is found or created, as magic links do, a session of method oidc starts,
// and the person joins the default workspace (rule 4 of §OIDC sign-in).
// Codes: invalid_request (email).
func (tx *Tx) OIDCSignIn(ctx context.Context, email, displayName string) (SignedIn, error) {
	email = NormalizeEmail(email)
	u, err := tx.UserFindOrCreateByEmail(ctx, email, displayNameFrom(displayName, localPart(email)))
	if err != nil {
		return SignedIn{}, err
	}
	s, token, err := tx.SessionCreate(ctx, u.ID, MethodOIDC)
	if err != nil {
		return SignedIn{}, err
	}
	if _, _, err := tx.DefaultWorkspaceJoin(ctx, u.ID, false); err != nil {
		return SignedIn{}, err
	}
	return SignedIn{User: u, Session: s, Token: token}, nil
}

// displayNameFrom returns the first candidate that is not blank, trimmed and cut to
// MaxDisplayNameLength characters, or "" when all are blank.
func displayNameFrom(candidates ...string) string {
	for _, c := range candidates {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if utf8.RuneCountInString(c) > MaxDisplayNameLength {
			c = strings.TrimSpace(string([]rune(c)[:MaxDisplayNameLength]))
		}
		return c
	}
	return ""
}

func localPart(email string) string {
	local, _, _ := strings.Cut(email, "@")
	return local
}
