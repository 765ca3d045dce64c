-- Imported history (issue 28): which row each record of another system became. An import keys
-- every person, channel, conversation, message and upload it writes by (workspace, source,
-- kind, source id), so a run repeated, or resumed after a crash, writes nothing twice, and
-- replies, reactions and pins find the rows their source ids name. source names the system and
-- its instance ("slack:T024BE7LD", "natter:wsp_…"); target_id is the Natter id written.
CREATE TABLE import_records (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    source       text NOT NULL,
    kind         text NOT NULL,
    source_id    text NOT NULL,
    target_id    text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, source, kind, source_id)
);
