-- Direct conversations and the guest posting budget: the shared seams of the workspace,
-- message and realtime work (the behaviour arrives with each).

CREATE TABLE dms (
    id           text PRIMARY KEY,
    route_id     text NOT NULL,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    member_key   text NOT NULL, -- the sorted member ids joined by ',': one conversation per member set
    created_by   text REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    last_seq     bigint NOT NULL DEFAULT 0,
    last_activity_at timestamptz NOT NULL,
    CONSTRAINT dms_route_id_key UNIQUE (route_id),
    CONSTRAINT dms_workspace_member_key UNIQUE (workspace_id, member_key)
);

CREATE TABLE dm_members (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    dm_id        text NOT NULL REFERENCES dms (id) ON DELETE CASCADE,
    user_id      text NOT NULL REFERENCES users (id),
    hidden_at    timestamptz,
    PRIMARY KEY (dm_id, user_id)
);
CREATE INDEX dm_members_user_idx ON dm_members (workspace_id, user_id);

-- Waiting-room guests may post three messages per UTC day; the row is locked by the post's own
-- transaction, so parallel posts cannot exceed the budget.
CREATE TABLE guest_post_counts (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      text NOT NULL REFERENCES users (id),
    day          date NOT NULL,
    used         integer NOT NULL,
    PRIMARY KEY (workspace_id, user_id, day)
);
