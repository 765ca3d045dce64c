-- Mentions (issue 30; docs/messages.md, "Mentions"): who each message names, kept beside it by
-- a trigger, so the Mentions view reads an index of mentions and never the history, and every
-- writer of messages (API, replies, edits, deletions, imports) keeps it in its own transaction.
-- Full-text search cannot serve this: "here" is an English stop word, and stemming folds handles.

-- mention_names lists the names a body @mentions, lowercased, each once, in order of first
-- appearance: an @ that does not follow a handle character (so an email address is no mention),
-- then 2 to 32 handle characters, then anything but a handle character or @. It is the rule of
-- persist.MentionedHandles, which TestMentionNamesMatchGo holds it to. At most 50 names, the
-- broadcasts (here, channel, everyone) always among them.
CREATE FUNCTION mention_names(body text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(n ORDER BY broadcast DESC, first), '{}') FROM (
        SELECT lower(r.m[1]) AS n, min(r.i) AS first, lower(r.m[1]) IN ('here', 'channel', 'everyone') AS broadcast
        FROM regexp_matches(body, '(?<![A-Za-z0-9_@-])@([A-Za-z0-9_-]{2,32})(?![A-Za-z0-9_@-])', 'g')
            WITH ORDINALITY AS r (m, i)
        GROUP BY 1
        ORDER BY broadcast DESC, first
        LIMIT 50) names
$$;

-- One row per message and name it mentions: a handle (whoever holds it when the mentions are
-- read, as for push and email) or a broadcast. channel_id / dm_id and created_at are the
-- message's, so a page is read from these rows alone.
CREATE TABLE message_mentions (
    message_id   text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    workspace_id text NOT NULL,
    name         text NOT NULL,
    channel_id   text,
    dm_id        text,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (message_id, name)
);
-- A person's mentions by handle, newest first.
CREATE INDEX message_mentions_name_idx ON message_mentions (workspace_id, name, created_at DESC, message_id DESC);
-- A workspace's broadcasts, newest first: the Mentions view walks them, keeping those of the
-- places the reader is in (everyone is in every public channel unless they left it, so most
-- of those it reads are theirs).
CREATE INDEX message_mentions_broadcast_idx ON message_mentions (workspace_id, created_at DESC, message_id DESC)
    WHERE name IN ('here', 'channel', 'everyone');

CREATE FUNCTION message_mentions_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM message_mentions WHERE message_id = OLD.id;
    END IF;
    INSERT INTO message_mentions (message_id, workspace_id, name, channel_id, dm_id, created_at)
        SELECT NEW.id, NEW.workspace_id, n, NEW.channel_id, NEW.dm_id, NEW.created_at
        FROM unnest(mention_names(NEW.body)) AS n;
    RETURN NULL;
END $$;
-- Only a body holding an @ calls the function: most messages pay one strpos.
CREATE TRIGGER message_mentions_insert AFTER INSERT ON messages
    FOR EACH ROW WHEN (strpos(NEW.body, '@') > 0) EXECUTE FUNCTION message_mentions_keep();
CREATE TRIGGER message_mentions_update AFTER UPDATE OF body ON messages
    FOR EACH ROW WHEN (OLD.body IS DISTINCT FROM NEW.body) EXECUTE FUNCTION message_mentions_keep();

INSERT INTO message_mentions (message_id, workspace_id, name, channel_id, dm_id, created_at)
    SELECT m.id, m.workspace_id, n, m.channel_id, m.dm_id, m.created_at
    FROM messages m CROSS JOIN LATERAL unnest(mention_names(m.body)) AS n
    WHERE strpos(m.body, '@') > 0 AND m.deleted_at IS NULL;
