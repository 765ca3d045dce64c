-- Reads whose cost does not grow with history (issue 24; docs/performance.md, "Reads at scale").

-- Unread counts: a conversation's roots take every sequence 1..last_seq, so the unread ones after
-- a reader's mark R are last_seq - R less two counts over R, each read from one of these indexes:
-- the deleted roots (a small index: deletions are rare) and the reader's own live roots (an
-- index-only range of their own posts since R).
CREATE INDEX messages_channel_deleted_idx ON messages (channel_id, channel_seq)
    WHERE channel_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NOT NULL;
CREATE INDEX messages_dm_deleted_idx ON messages (dm_id, channel_seq)
    WHERE dm_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NOT NULL;
CREATE INDEX messages_channel_author_idx ON messages (channel_id, author_id, channel_seq)
    WHERE channel_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX messages_dm_author_idx ON messages (dm_id, author_id, channel_seq)
    WHERE dm_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NULL;

-- Search newest first: a scan of a workspace's (or a channel's) live messages from the newest,
-- checking each against the query, stops at the page size. For a common word that is a few
-- dozen rows; the planner keeps the full-text index for rare words.
CREATE INDEX messages_workspace_newest_idx ON messages (workspace_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL;
CREATE INDEX messages_channel_newest_idx ON messages (channel_id, created_at DESC, id DESC)
    WHERE channel_id IS NOT NULL AND deleted_at IS NULL;

-- The member directory filtered by role reads that role's members in join order.
CREATE INDEX workspace_members_role_idx ON workspace_members (workspace_id, role, join_seq);

-- The directory's total leaves out members whose user was deleted: few, found from this index
-- rather than by reading every member's user row.
CREATE INDEX users_deleted_idx ON users (id) WHERE deleted_at IS NOT NULL;
