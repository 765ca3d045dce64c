-- Search by day (persist.Search, docs/performance.md "Search by day"): a second full-text index
-- whose lexemes carry the message's workspace and UTC day, so that a search reads the entries of
-- a few recent days of its own workspace rather than a word's entries across every workspace's
-- history (messages_search_idx) or the newest rows one by one (messages_workspace_newest_idx).
-- A bot's flood of messages without the word is then skipped instead of walked, and a word of
-- middling frequency reads the days its rate needs instead of every entry it has.
--
-- A day's key is the first 6 hex digits of md5(workspace_id), the day's number since 1970
-- (UTC, from the epoch, so no time zone enters), a dot and the lexeme: `a1b2c320784.deploy`.
-- Two workspaces sharing the 6 digits only read each other's entries; the search checks the
-- workspace and the words on the row as before. The positions are kept so phrases
-- (`"deploy failed"`) match as they do in messages.search.
--
-- plpgsql rather than SQL: half the cost per row (25 µs against 46 µs on the bench's messages),
-- on every post and in this file's index build. It calls only pg_catalog's functions, so a
-- restore (which runs with an empty search_path) can build the index; search_days_query spells
-- the same key, and TestSearchByDaysQueries holds the two to it.
--
-- PARALLEL UNSAFE keeps a search's statement in one process: the planner's estimate of a few
-- days' keys is far above their entries (171,441 rows for 509 of `tapir`'s 34 days), and at
-- that size it chose a parallel scan whose workers' start cost 30 ms for 1 ms of work.
CREATE FUNCTION search_days(workspace_id text, created_at timestamptz, search tsvector) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $$
DECLARE
    prefix text := substr(md5(workspace_id), 1, 6) || floor(extract(epoch FROM created_at) / 86400)::integer::text || '.';
BEGIN
    RETURN (SELECT coalesce(string_agg('''' || replace(replace(prefix || t.lexeme, '\', '\\'), '''', '''''') || ''''
            || CASE WHEN cardinality(t.positions) > 0 THEN ':' || array_to_string(t.positions, ',') ELSE '' END, ' '), '')::tsvector
        FROM unnest(search) t);
END
$$;

-- search_days_query is query with each lexeme replaced by the alternatives of the given days of
-- the workspace: ('…20784.deploy' | '…20783.deploy'). A row holds one day's keys, so phrases and
-- negations keep their meaning within it.
CREATE FUNCTION search_days_query(workspace_id text, days integer[], query tsquery) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT regexp_replace(query::text, '''((?:[^'']|'''')*)''',
        '(' || (SELECT string_agg('''' || substr(md5(workspace_id), 1, 6) || d::text || '.\1''', ' | ') FROM unnest(days) d) || ')',
        'g')::tsquery
$$;

-- The build on 1,065,435 messages took 99 s with 64 MB of maintenance_work_mem and the SQL
-- function of 46 µs a row, 39 s with 256 MB and this one (an upgrade runs it once, holding
-- writes to messages meanwhile).
SET LOCAL maintenance_work_mem = '256MB';
CREATE INDEX messages_search_days_idx ON messages USING gin (search_days(workspace_id, created_at, search))
    WITH (gin_pending_list_limit = 256);
