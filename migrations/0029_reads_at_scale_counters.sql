-- Reads at scale, continued (issue 24; docs/performance.md, "Reads at scale").

-- Unread counts (persist.unreadCount): the deleted roots of a conversation, kept beside its
-- last_seq by every write that deletes a root or brings one back (persist.MessageDelete,
-- persist.HistoryMessageDetails), in the same transaction. A reader who never read a
-- conversation has every deleted root after their mark: the count is last_seq - deleted_roots
-- less their own posts, with no count of the deletions (24 µs a channel at 1,000,000 messages,
-- 24 ms of a 1,000-channel list). A reader part-way through still counts the deletions after
-- their mark from messages_channel_deleted_idx / messages_dm_deleted_idx.
ALTER TABLE channels ADD COLUMN deleted_roots bigint NOT NULL DEFAULT 0 CHECK (deleted_roots >= 0);
ALTER TABLE dms ADD COLUMN deleted_roots bigint NOT NULL DEFAULT 0 CHECK (deleted_roots >= 0);
UPDATE channels c SET deleted_roots = d.n
    FROM (SELECT channel_id, count(*) AS n FROM messages
          WHERE channel_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NOT NULL
          GROUP BY channel_id) d
    WHERE c.id = d.channel_id;
UPDATE dms c SET deleted_roots = d.n
    FROM (SELECT dm_id, count(*) AS n FROM messages
          WHERE dm_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NOT NULL
          GROUP BY dm_id) d
    WHERE c.id = d.dm_id;

-- Search (persist.channelsHidden): the private channels of a workspace, which a search's scope
-- leaves out unless the caller is in them. Without an index this read every channel row of
-- every workspace (a sequential scan: 296 pages, 5.7 ms, for 2,000 channels whose rows each
-- post rewrites), on every search.
CREATE INDEX channels_private_idx ON channels (workspace_id) WHERE visibility = 'private';
