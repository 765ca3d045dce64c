-- Private channels (issue 27): a channel is public unless created private, and a private
-- channel is readable only by the people and bots in channel_members. Visibility is fixed at
-- creation, so an event's subject and every cached membership stay right for its whole life.
-- The default keeps every existing channel public without rewriting the table.
ALTER TABLE channels ADD COLUMN visibility text NOT NULL DEFAULT 'public'
    CONSTRAINT channels_visibility_check CHECK (visibility IN ('public', 'private'));

-- Only private channels have rows here: a public channel is readable by every member of its
-- workspace, with no row to keep. The primary key answers "is this person in that channel" (every
-- read of a private channel); the second index lists a person's private channels (channel
-- lists, search, bot NATS permissions).
CREATE TABLE channel_members (
    channel_id   text NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    user_id      text NOT NULL REFERENCES users (id),
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    added_by     text REFERENCES users (id),
    added_at     timestamptz NOT NULL,
    PRIMARY KEY (channel_id, user_id)
);
CREATE INDEX channel_members_user_idx ON channel_members (workspace_id, user_id);
