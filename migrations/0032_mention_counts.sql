-- Mention counts in the listings (issue 30): each channel's count of the live root messages by
-- others after the reader's mark that mention them (docs/messages.md, "Read state"), read from
-- message_mentions by the place's sequence and never from the history. A row now carries its
-- message's channel_seq (NULL for a reply, which never counts) and author, and rows exist only
-- for live messages, so the count reads this index alone: its work is the mentions after the
-- mark, one descent per channel with anything unread.
ALTER TABLE message_mentions ADD COLUMN seq bigint, ADD COLUMN author_id text;

UPDATE message_mentions mm SET seq = m.channel_seq, author_id = m.author_id
    FROM messages m WHERE m.id = mm.message_id;
-- Deletions empty the body, which removes its rows; a tombstone written whole (an import, a
-- seeded history) never had rows from 0030's backfill but could from its insert trigger.
DELETE FROM message_mentions mm USING messages m WHERE m.id = mm.message_id AND m.deleted_at IS NOT NULL;

CREATE INDEX message_mentions_channel_seq_idx ON message_mentions (channel_id, seq) INCLUDE (name, author_id, created_at)
    WHERE channel_id IS NOT NULL AND seq IS NOT NULL;

CREATE OR REPLACE FUNCTION message_mentions_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM message_mentions WHERE message_id = OLD.id;
    END IF;
    IF NEW.deleted_at IS NULL THEN
        INSERT INTO message_mentions (message_id, workspace_id, name, channel_id, dm_id, created_at, seq, author_id)
            SELECT NEW.id, NEW.workspace_id, n, NEW.channel_id, NEW.dm_id, NEW.created_at, NEW.channel_seq, NEW.author_id
            FROM unnest(mention_names(NEW.body)) AS n;
    END IF;
    RETURN NULL;
END $$;

-- A deletion (or an import bringing a message back) changes the rows even when the body stays;
-- a body without an @ before or after has none to change.
DROP TRIGGER message_mentions_update ON messages;
CREATE TRIGGER message_mentions_update AFTER UPDATE OF body, deleted_at ON messages
    FOR EACH ROW WHEN ((OLD.body IS DISTINCT FROM NEW.body OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
        AND (strpos(OLD.body, '@') > 0 OR strpos(NEW.body, '@') > 0))
    EXECUTE FUNCTION message_mentions_keep();
