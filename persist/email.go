package persist

import (
	"context"
	"time"
)

// EmailDelayOff is the email delay that sends no missed-activity email at all.
const EmailDelayOff = "off"

// DefaultEmailDelay is the delay of someone who chose none.
const DefaultEmailDelay = "2m"

// EmailDelays are the delays a person may choose, by name, as they are in production; the
// email deliverer may be given shorter ones (tests).
var EmailDelays = map[string]time.Duration{"2m": 2 * time.Minute, "15m": 15 * time.Minute, "1h": time.Hour}

// ValidEmailDelay reports whether s is a delay a person may choose.
func ValidEmailDelay(s string) bool {
	_, ok := EmailDelays[s]
	return ok || s == EmailDelayOff
}

// MagicLinkMailable reports whether a sign-in link may be emailed to address: it is the email of
// a live human account, or an open invite was emailed to it (someone invited who has no account
// yet). Anyone else is answered the same way and sent nothing, so the request neither reveals
// accounts nor opens sign-up to the world.
func (tx *Tx) MagicLinkMailable(ctx context.Context, address string) (bool, error) {
	address = NormalizeEmail(address)
	if !validEmail(address) {
		return false, nil
	}
	var ok bool
	err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE email = $1 AND kind = 'human' AND deleted_at IS NULL)
		OR EXISTS (SELECT 1 FROM workspace_invites WHERE email = $1 AND used_at IS NULL AND expires_at > $2)`,
		address, tx.now).Scan(&ok)
	return ok, err
}

// EmailInvite is an invite minted for one address, with its raw token for the email.
type EmailInvite struct {
	Invite
	Email string `json:"email"`
}

// MaxInviteEmails bounds the addresses one invite request may name.
const MaxInviteEmails = 20

// InviteCreateForEmails mints one single-use invite per address (InviteCreate's rules), each
// remembering its address. Addresses are lowercased; a repeated one counts once. Codes: those of
// InviteCreate, invalid_request (an address, too many).
func (tx *Tx) InviteCreateForEmails(ctx context.Context, actor Actor, workspaceID, role string, expiresInHours int, addresses []string) ([]EmailInvite, error) {
	if len(addresses) > MaxInviteEmails {
		return nil, Invalid("emails may name at most %d addresses", MaxInviteEmails)
	}
	seen := map[string]bool{}
	var out []EmailInvite
	for _, raw := range addresses {
		a := NormalizeEmail(raw)
		if !validEmail(a) {
			return nil, Invalid("emails must be addresses like name@example.com")
		}
		if seen[a] {
			continue
		}
		seen[a] = true
		inv, err := tx.InviteCreate(ctx, actor, workspaceID, role, expiresInHours)
		if err != nil {
			return nil, err
		}
		if _, err := tx.exec(ctx, `UPDATE workspace_invites SET email = $3 WHERE workspace_id = $1 AND id = $2`,
			workspaceID, inv.ID, a); err != nil {
			return nil, err
		}
		out = append(out, EmailInvite{Invite: inv, Email: a})
	}
	return out, nil
}

// WorkspaceName returns a workspace's name, for the emails that mention it.
func (tx *Reader) WorkspaceName(ctx context.Context, workspaceID string) (string, error) {
	var name string
	err := tx.queryRow(ctx, `SELECT name FROM workspaces WHERE id = $1`, workspaceID).Scan(&name)
	return name, notFoundAs(err, "workspace")
}
