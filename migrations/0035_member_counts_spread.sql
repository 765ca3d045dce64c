-- Migration 0034 kept each (workspace, role)'s member count in one row, added to by a trigger
-- for each membership row. Two costs showed at scale (docs/performance.md, "Lighter listings"):
-- - every transaction that added or removed a member held that row's lock until it committed,
--   so joins, invites and imports into one workspace ran one at a time;
-- - each row a transaction added updated the same counter row again, and each update walked the
--   transaction's own earlier versions of it: 20,000 members in one statement took 10.5 s with
--   the trigger, 0.6 s without (5,000 took 1.2 s: quadratic).
-- The count of a (workspace, role) is now spread over 16 rows, the writing session's backend
-- picking one, so concurrent writers rarely meet; and the triggers run once per statement over
-- its changed rows, adding one sum per (workspace, role). The directory already sums the rows of
-- its workspace (and role).
ALTER TABLE workspace_member_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE workspace_member_counts DROP CONSTRAINT workspace_member_counts_pkey;
ALTER TABLE workspace_member_counts ADD PRIMARY KEY (workspace_id, role, shard);

CREATE OR REPLACE FUNCTION member_count_add(ws text, r text, n bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO workspace_member_counts AS c (workspace_id, role, shard, members)
        SELECT ws, r, pg_backend_pid() % 16, n WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ws)
    ON CONFLICT (workspace_id, role, shard) DO UPDATE SET members = c.members + EXCLUDED.members
$$;

DROP TRIGGER workspace_member_counts_keep ON workspace_members;
DROP TRIGGER workspace_member_counts_move ON workspace_members;
DROP FUNCTION workspace_member_counts_keep();

-- workspace_member_counts_statement adds the net change of a statement: the rows it added (new_rows) less the
-- rows it removed (old_rows), memberships of deleted users left out, in (workspace, role) order
-- so two statements lock the counters in the same order.
CREATE FUNCTION workspace_member_counts_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM member_count_add(d.workspace_id, d.role, d.n) FROM (
            SELECT m.workspace_id, m.role, count(*) AS n FROM new_rows m
            WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = m.user_id AND u.deleted_at IS NOT NULL)
            GROUP BY m.workspace_id, m.role ORDER BY m.workspace_id, m.role) d;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM member_count_add(d.workspace_id, d.role, -d.n) FROM (
            SELECT m.workspace_id, m.role, count(*) AS n FROM old_rows m
            WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = m.user_id AND u.deleted_at IS NOT NULL)
            GROUP BY m.workspace_id, m.role ORDER BY m.workspace_id, m.role) d;
    ELSE
        PERFORM member_count_add(d.workspace_id, d.role, d.n) FROM (
            SELECT c.workspace_id, c.role, sum(c.n)::bigint AS n FROM (
                SELECT m.workspace_id, m.role, m.user_id, 1 AS n FROM new_rows m
                UNION ALL SELECT m.workspace_id, m.role, m.user_id, -1 FROM old_rows m) c
            WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = c.user_id AND u.deleted_at IS NOT NULL)
            GROUP BY c.workspace_id, c.role HAVING sum(c.n) <> 0 ORDER BY c.workspace_id, c.role) d;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER workspace_member_counts_insert AFTER INSERT ON workspace_members
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION workspace_member_counts_statement();
CREATE TRIGGER workspace_member_counts_delete AFTER DELETE ON workspace_members
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION workspace_member_counts_statement();
CREATE TRIGGER workspace_member_counts_update AFTER UPDATE ON workspace_members
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION workspace_member_counts_statement();
