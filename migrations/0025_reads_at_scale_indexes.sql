-- Reads at scale, continued (issue 24; docs/performance.md, "Reads at scale").
--
-- The member directory's name filter needs the pg_trgm extension (trigram matching, for a
-- substring of a name). It ships with the server (Debian's postgresql-NN package, the official
-- images, the managed services) and is a trusted extension since PostgreSQL 13, which a
-- database owner may create. Where it cannot be created (not installed, or a role without the
-- right), its indexes are left out and the directory answers exactly the same, only by reading
-- every member's name: nothing else depends on them.

-- Unread counts (persist.unreadCount): the reader's own live roots after their mark are counted
-- once per conversation of a listing. Led by the conversation (0018), a listing of 1,000
-- channels descended into 1,000 distant parts of an index as large as the history, whose
-- pages did not stay in memory (0.06 ms a channel at 1,000,000 messages, mostly reads); led
-- by the reader, every descent lands in the same few pages, their own posts (0.005 ms).
CREATE INDEX messages_author_channel_idx ON messages (author_id, channel_id, channel_seq)
    WHERE channel_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX messages_author_dm_idx ON messages (author_id, dm_id, channel_seq)
    WHERE dm_id IS NOT NULL AND channel_seq IS NOT NULL AND deleted_at IS NULL;
DROP INDEX messages_channel_author_idx;
DROP INDEX messages_dm_author_idx;

-- Search by spans of time (persist.Search): a word of middling frequency is found in the
-- full-text index, whose matches span the whole history; each span then read every match's row
-- only to keep the recent ones (4,545 pages for a word in 0.46% of 1,000,000 messages, twice).
-- Messages are written in time order, so their rows lie in time order too: a block range index
-- on created_at tells which parts of the table hold a span, and the planner intersects it with
-- the full-text matches before reading any row (911 pages for the last 7 days). It costs a
-- few pages in all; autosummarize keeps the newest ranges summarised as they fill.
CREATE INDEX messages_created_brin_idx ON messages USING brin (created_at) WITH (autosummarize = on);

DO $$
DECLARE
    trgm text;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN undefined_file OR insufficient_privilege OR feature_not_supported THEN
        RAISE WARNING 'natter: pg_trgm is not available (%): the member directory''s name filter reads every member', SQLERRM;
    END;
    -- The member directory's name filter (q) is a substring of the display name (case-folded)
    -- or of the handle: a trigram index finds the names holding it without reading every
    -- member. The expressions are the ones persist.memberPage matches with LIKE.
    SELECT n.nspname INTO trgm FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_trgm';
    IF trgm IS NOT NULL THEN
        EXECUTE format('CREATE INDEX users_display_name_trgm_idx ON users USING gin (lower(display_name) %I.gin_trgm_ops)', trgm);
        EXECUTE format('CREATE INDEX users_handle_trgm_idx ON users USING gin ((coalesce(handle, '''')) %I.gin_trgm_ops)', trgm);
    END IF;
END
$$;
