-- A block (or a running timeout) outlives the membership it was set on: a member removed while
-- blocked who comes back, by any way in, comes back blocked. memberRemove records the standing
-- here; joining applies it and deletes the row (the membership carries it again).
CREATE TABLE workspace_standing_kept (
    workspace_id    text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id         text NOT NULL REFERENCES users (id),
    blocked_at      timestamptz,
    timeout_until   timestamptz,
    moderation_note text,
    moderation_by   text REFERENCES users (id),
    moderation_at   timestamptz,
    PRIMARY KEY (workspace_id, user_id)
);

