-- Workspace streams are a bounded cache of the log (docs/realtime.md): the relay retires the
-- stream of a workspace idle for a while and creates it again at its next event, starting after
-- the last relayed cursor. It records here which streams it retired and the first cursor each
-- stream was created with, so that a stream starting after older cursors is known to be right,
-- not a stream that lost events.
ALTER TABLE relay_positions
    ADD COLUMN stream_retired boolean NOT NULL DEFAULT false,
    ADD COLUMN stream_first   bigint  NOT NULL DEFAULT 0; -- 0: created before this migration, from the oldest retained cursor

-- The retirement sweep reads the live streams idle the longest.
CREATE INDEX relay_positions_idle_idx ON relay_positions (updated_at) WHERE NOT stream_retired;
