package persist

// Revocation names credentials or a membership that a committed transaction ended or changed,
// so that open sockets and bot connections using them are rechecked at once rather than at
// their next periodic check. Exactly one of SessionID, TokenID, or WorkspaceID (with UserID: one
// member's standing; alone: the workspace was deleted, and everything in it with it) is set.
type Revocation struct {
	SessionID   string `json:"session_id,omitempty"`
	TokenID     string `json:"token_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	UserID      string `json:"user_id,omitempty"`
}

// noteRevoked records a revocation for the store's OnRevoked hook, called after commit.
func (tx *Tx) noteRevoked(r Revocation) { tx.revoked = append(tx.revoked, r) }

// noteMembershipChanged records that a member's standing in a workspace changed (removed,
// blocked, or given another role), which can end or narrow what their sockets may read.
func (tx *Tx) noteMembershipChanged(workspaceID, userID string) {
	tx.noteRevoked(Revocation{WorkspaceID: workspaceID, UserID: userID})
}

// noteWorkspaceDeleted records that a workspace is gone: every socket and bot connection of it
// ends at once on every replica instead of at its next periodic check.
func (tx *Tx) noteWorkspaceDeleted(workspaceID string) {
	tx.noteRevoked(Revocation{WorkspaceID: workspaceID})
}
