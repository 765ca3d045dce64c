-- Workspaces, members, moderation and invites: the directory order, moderation bookkeeping, the
-- one-owner rule and single-use invitations.

-- The member directory pages by join order (join_seq), filtered by workspace.
CREATE INDEX workspace_members_directory_idx ON workspace_members (workspace_id, join_seq);

-- A workspace has exactly one owner; ownership moves only by transfer (demote, then promote).
CREATE UNIQUE INDEX workspace_members_one_owner ON workspace_members (workspace_id) WHERE role = 'owner';

-- Who last changed a member's role, timeout, block or note, and when.
ALTER TABLE workspace_members
    ADD COLUMN moderation_by text REFERENCES users (id),
    ADD COLUMN moderation_at timestamptz;

-- Single-use invitations. Only the SHA-256 of the raw token is stored; the raw token is shown
-- once, at creation.
CREATE TABLE workspace_invites (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    token_hash   bytea NOT NULL,
    role         text NOT NULL CHECK (role IN ('moderator', 'member', 'guest')),
    created_by   text NOT NULL REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    used_by      text REFERENCES users (id),
    CONSTRAINT workspace_invites_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX workspace_invites_workspace_idx ON workspace_invites (workspace_id);
