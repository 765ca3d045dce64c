-- The message search index (GIN) gathers new entries in a pending list and moves them into the
-- index when the list passes gin_pending_list_limit (4 MB by default), in the foreground, inside
-- whichever insert crossed it. Under a steady stream of posts that insert took 120–130 ms while
-- every post of its workspace waited behind it (docs/performance.md). A 256 kB list is moved
-- sixteen times as often, each time in a few milliseconds, for the same total work.
ALTER INDEX messages_search_idx SET (gin_pending_list_limit = 256);
