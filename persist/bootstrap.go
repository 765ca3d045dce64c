package persist

import (
	"context"
	"strings"
)

// bootstrapLock serialises dev bootstrap across processes ("natter-bs").
const bootstrapLock int64 = 0x6e61747465726273

// Defaults of the development bootstrap.
const (
	DevOwnerEmail   = "owner@localhost"
	DevOwnerName    = "Local Owner"
	DevWorkspace    = "Natter"
	DevChannel      = "general"
	devWorkspaceTag = "natter"
)

// Bootstrap is what DevBootstrap found or made.
type Bootstrap struct {
	Owner     User
	Workspace Workspace
	Created   bool
}

// DevBootstrap makes sure a default workspace exists: when there is none, it creates one with a
// `general` channel, owned by the pinned owner (natter admin owner pin), else the first human,
// else a new local owner. It is idempotent and safe to run from several processes at once.
func (tx *Tx) DevBootstrap(ctx context.Context) (Bootstrap, error) {
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLock); err != nil {
		return Bootstrap{}, err
	}
	w, err := tx.defaultWorkspace(ctx)
	if err == nil {
		owner, err := tx.workspaceOwner(ctx, w.ID)
		return Bootstrap{Owner: owner, Workspace: w}, err
	}
	if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
		return Bootstrap{}, err
	}
	owner, err := tx.bootstrapOwner(ctx)
	if err != nil {
		return Bootstrap{}, err
	}
	w, err = tx.defaultWorkspaceCreate(ctx, owner)
	if err != nil {
		return Bootstrap{}, err
	}
	return Bootstrap{Owner: owner, Workspace: w, Created: true}, nil
}

// defaultWorkspace returns the workspace sign-in methods join new users to.
// Codes: not_found (none set, or it was deleted).
func (tx *Tx) defaultWorkspace(ctx context.Context) (Workspace, error) {
	id, err := tx.SettingGet(ctx, SettingDefaultWorkspace)
	if err != nil {
		return Workspace{}, err
	}
	if id == "" {
		return Workspace{}, NotFound("default workspace")
	}
	return tx.WorkspaceGet(ctx, id)
}

// defaultWorkspaceCreate creates the instance's default workspace, owned by owner, with a
// `general` channel, and records it as the default. The caller holds bootstrapLock. Its last
// write is the channel's event.
func (tx *Tx) defaultWorkspaceCreate(ctx context.Context, owner User) (Workspace, error) {
	w, err := tx.WorkspaceCreate(ctx, owner.ID, DevWorkspace, "")
	if e, ok := ErrorOf(err); ok && e.Code == CodeConflict {
		// Someone already took the slug "natter"; any free slug will do for the default.
		w, err = tx.WorkspaceCreate(ctx, owner.ID, DevWorkspace, devWorkspaceTag+"-"+NewID("", tx.now)[20:])
	}
	if err != nil {
		return Workspace{}, err
	}
	if err := tx.SettingSet(ctx, SettingDefaultWorkspace, w.ID); err != nil {
		return Workspace{}, err
	}
	// channel.created is the transaction's last write.
	_, _, err = tx.ChannelCreate(ctx, ActorFor(owner), w.ID, ChannelCreateParams{Name: DevChannel})
	return w, err
}

func (tx *Tx) bootstrapOwner(ctx context.Context) (User, error) {
	pinned, err := tx.SettingGet(ctx, SettingPinnedOwner)
	if err != nil {
		return User{}, err
	}
	if pinned != "" {
		if u, err := tx.UserGet(ctx, pinned); err == nil && u.DeletedAt == nil {
			return u, nil
		}
	}
	u, err := tx.UserFirst(ctx)
	if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
		return tx.UserFindOrCreateByEmail(ctx, DevOwnerEmail, DevOwnerName)
	}
	return u, err
}

func (tx *Tx) workspaceOwner(ctx context.Context, workspaceID string) (User, error) {
	var id string
	err := tx.queryRow(ctx, `SELECT user_id FROM workspace_members WHERE workspace_id = $1 AND role = 'owner'
		ORDER BY join_seq LIMIT 1`, workspaceID).Scan(&id)
	if err != nil {
		return User{}, notFoundAs(err, "owner")
	}
	return tx.UserGet(ctx, id)
}

// OwnerPin records the person dev bootstrap makes owner, creating the account by email when
// needed, and returns it. Once the default workspace exists its owner is settled: pinning that
// owner again answers the same account, pinning anyone else is refused and changes nothing.
// Codes: invalid_request (email, display name), conflict (another owner exists).
func (tx *Tx) OwnerPin(ctx context.Context, email, displayName string) (User, error) {
	if displayName == "" {
		return User{}, Invalid("a display name is required")
	}
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLock); err != nil {
		return User{}, err
	}
	if w, err := tx.defaultWorkspace(ctx); err == nil {
		owner, err := tx.workspaceOwner(ctx, w.ID)
		if err != nil {
			return User{}, err
		}
		if strings.EqualFold(owner.Email, strings.TrimSpace(email)) {
			return owner, nil
		}
		return User{}, Errorf(CodeConflict, "the default workspace %s already has its owner, %s (%s); owner pin only "+
			"chooses the owner before the first dev bootstrap; move ownership with POST /api/workspaces/%s/transfer-ownership",
			w.Slug, owner.Email, owner.ID, w.ID)
	} else if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
		return User{}, err
	}
	u, err := tx.UserFindOrCreateByEmail(ctx, email, displayName)
	if err != nil {
		return User{}, err
	}
	return u, tx.SettingSet(ctx, SettingPinnedOwner, u.ID)
}
