-- Joining, leaving and starring channels (issue 30). Everyone in a workspace (guests aside) is in
-- every public channel until they leave it, as before this migration: a row here records only
-- what one person changed (left, starred), so a new member or a new channel writes no rows.
CREATE TABLE channel_person_states (
    channel_id   text NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    user_id      text NOT NULL REFERENCES users (id),
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    left_at      timestamptz,
    starred_at   timestamptz,
    PRIMARY KEY (channel_id, user_id)
);
-- A person's rows: the channel list and sidebar (starred, left), and forgetting them all when
-- they leave the workspace.
CREATE INDEX channel_person_states_user_idx ON channel_person_states (workspace_id, user_id);

-- Member counts kept, not counted (the channel browser reads a page of them on every search):
-- a public channel has the workspace's people and bots (guests aside) less left_count; a private
-- one has member_count, the rows of channel_members. Both are kept by triggers, so every writer of
-- those tables (API, import, member removal, cascades) keeps them in its own transaction.
ALTER TABLE channels ADD COLUMN member_count integer NOT NULL DEFAULT 0,
    ADD COLUMN left_count integer NOT NULL DEFAULT 0;
UPDATE channels c SET member_count = (SELECT count(*) FROM channel_members m WHERE m.channel_id = c.id)
    WHERE c.visibility = 'private';

CREATE FUNCTION channel_members_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE channels SET member_count = member_count + 1 WHERE id = NEW.channel_id;
    ELSE
        UPDATE channels SET member_count = member_count - 1 WHERE id = OLD.channel_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER channel_members_count AFTER INSERT OR DELETE ON channel_members
    FOR EACH ROW EXECUTE FUNCTION channel_members_count();

CREATE FUNCTION channel_left_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta integer := 0;
    cid text;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.left_at IS NOT NULL THEN
        delta := delta + 1;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.left_at IS NOT NULL THEN
        delta := delta - 1;
    END IF;
    IF TG_OP = 'DELETE' THEN cid := OLD.channel_id; ELSE cid := NEW.channel_id; END IF;
    IF delta <> 0 THEN
        UPDATE channels SET left_count = left_count + delta WHERE id = cid;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER channel_left_count AFTER INSERT OR UPDATE OF left_at OR DELETE ON channel_person_states
    FOR EACH ROW EXECUTE FUNCTION channel_left_count();
