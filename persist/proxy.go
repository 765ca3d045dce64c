package persist

import "context"

// ProxySignIn signs in the person a verified identity-proxy assertion names: the human with this
// email is found or created, joined to the default workspace, and given a session (method
// "proxy"). The first person to arrive this way owns the default workspace: when none exists it
// is created for them (with #general), and when it has no owner they become it; later people
// join as members. An existing member keeps their role. Sign-ins are serialised with dev
// bootstrap (one advisory lock), so two first arrivals cannot both become owner.
// Codes: invalid_request (not an email address), unauthenticated (the email belongs to a bot).
func (tx *Tx) ProxySignIn(ctx context.Context, email string) (User, Session, string, error) {
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLock); err != nil {
		return User{}, Session{}, "", err
	}
	u, err := tx.UserFindOrCreateByEmail(ctx, email, "")
	if err != nil {
		return User{}, Session{}, "", err
	}
	if u.Kind != KindHuman {
		return User{}, Session{}, "", Errorf(CodeUnauthenticated, "the asserted identity is not a person")
	}
	if err := tx.proxyJoin(ctx, u); err != nil {
		return User{}, Session{}, "", err
	}
	s, token, err := tx.SessionCreate(ctx, u.ID, MethodProxy)
	if err != nil {
		return User{}, Session{}, "", err
	}
	return u, s, token, nil
}

// proxyJoin makes u a member of the default workspace: its owner when it needs one.
func (tx *Tx) proxyJoin(ctx context.Context, u User) error {
	w, err := tx.defaultWorkspace(ctx)
	if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
		_, err = tx.defaultWorkspaceCreate(ctx, u)
		return err
	}
	if err != nil {
		return err
	}
	if _, err := tx.MemberGet(ctx, w.ID, u.ID); err == nil {
		return nil
	} else if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
		return err
	}
	_, err = tx.workspaceOwner(ctx, w.ID)
	if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
		_, err = tx.MemberAdd(ctx, w.ID, u.ID, RoleOwner)
		return err
	}
	if err != nil {
		return err
	}
	_, err = tx.MemberJoin(ctx, w.ID, u.ID, RoleMember)
	return err
}
