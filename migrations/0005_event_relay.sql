-- The event pipeline: how far the outbox relay has copied each workspace's log into its JetStream
-- stream, and the retention window operators set with `natter admin events prune`.

-- Cursors at or below pruned_through have been deleted; the oldest retained cursor is
-- pruned_through + 1. A reader behind it must resync.
ALTER TABLE event_heads ADD COLUMN pruned_through bigint NOT NULL DEFAULT 0;

-- One row per workspace the relay has touched, written only by the relay that owns the
-- workspace's shard (kept apart from event_heads, whose row every mutation locks until commit).
CREATE TABLE relay_positions (
    workspace_id          text PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    relayed_cursor        bigint NOT NULL DEFAULT 0, -- the stream holds every event up to here
    stream_pruned_through bigint NOT NULL DEFAULT 0, -- the prune the stream has been purged to
    updated_at            timestamptz NOT NULL
);

-- The prune by age finds its boundary without reading the whole log.
CREATE INDEX events_workspace_created_idx ON events (workspace_id, created_at);
