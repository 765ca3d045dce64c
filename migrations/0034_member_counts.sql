-- The member directory's total, kept instead of counted (docs/performance.md, "Lighter
-- listings"): the first page of the directory carries the number of members whose user is not
-- deleted (by role when filtered), which was an index-only count of every membership of the
-- workspace on each request — 20,000 index entries, most of that read's time. Each
-- (workspace, role) now holds its count, kept by triggers in the transaction of every write that
-- changes it: a membership added, removed or given another role, a user deleted. Every write
-- path (joins, invites, imports, moderation, bots, the bench's seeding) goes through them.
-- No membership or deletion may commit between the count below and the triggers' creation.
LOCK TABLE workspace_members, users IN SHARE MODE;

CREATE TABLE workspace_member_counts (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    role         text NOT NULL,
    members      bigint NOT NULL,
    PRIMARY KEY (workspace_id, role)
);

INSERT INTO workspace_member_counts (workspace_id, role, members)
    SELECT m.workspace_id, m.role, count(*) FROM workspace_members m JOIN users u ON u.id = m.user_id
    WHERE u.deleted_at IS NULL GROUP BY m.workspace_id, m.role;

-- member_count_add adds n to a (workspace, role)'s count. A workspace being deleted has no row
-- to keep: its memberships go by cascade, and the insert would name a workspace that is gone.
CREATE FUNCTION member_count_add(ws text, r text, n bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO workspace_member_counts AS c (workspace_id, role, members)
        SELECT ws, r, n WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ws)
    ON CONFLICT (workspace_id, role) DO UPDATE SET members = c.members + EXCLUDED.members
$$;

CREATE FUNCTION workspace_member_counts_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') AND NOT EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id AND deleted_at IS NOT NULL) THEN
        PERFORM member_count_add(OLD.workspace_id, OLD.role, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id AND deleted_at IS NOT NULL) THEN
        PERFORM member_count_add(NEW.workspace_id, NEW.role, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER workspace_member_counts_keep AFTER INSERT OR DELETE ON workspace_members
    FOR EACH ROW EXECUTE FUNCTION workspace_member_counts_keep();
CREATE TRIGGER workspace_member_counts_move AFTER UPDATE OF workspace_id, user_id, role ON workspace_members
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
        OR OLD.role IS DISTINCT FROM NEW.role)
    EXECUTE FUNCTION workspace_member_counts_keep();

-- A user deleted (or restored) leaves (or rejoins) the count of each of their workspaces.
CREATE FUNCTION workspace_member_counts_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM member_count_add(m.workspace_id, m.role, CASE WHEN NEW.deleted_at IS NULL THEN 1 ELSE -1 END)
        FROM workspace_members m WHERE m.user_id = NEW.id ORDER BY m.workspace_id, m.role;
    RETURN NULL;
END $$;

CREATE TRIGGER workspace_member_counts_user AFTER UPDATE OF deleted_at ON users
    FOR EACH ROW WHEN ((OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION workspace_member_counts_user();
