-- People (issue 30; docs/realtime.md, "Presence"; docs/client.md, "Profile card").
--
-- A person's IANA time zone, for the local time on their profile card: set in the profile
-- settings, and from the browser's own zone at the first sign-in. NULL: not known yet.
ALTER TABLE users ADD COLUMN time_zone text;

-- Presence: a person is online while at least one of their sockets is open on any replica.
-- Each replica registers itself with an expiry it keeps pushing forward (a heartbeat); a
-- replica that dies without closing stops doing so, and whichever replica next finds it
-- expired deletes it with its rows, in one statement, so its sockets stop counting.
CREATE TABLE presence_replicas (
    id         text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);

-- One row per replica and person and workspace while that replica holds a socket of theirs.
-- The reference to the replica refuses a row of a replica already expired (it registers again
-- first); none to the workspace or user: a deleted one closes its sockets, and so, at the next
-- flush, its rows go.
CREATE TABLE presence_sockets (
    replica_id   text NOT NULL REFERENCES presence_replicas (id) ON DELETE CASCADE,
    workspace_id text NOT NULL,
    user_id      text NOT NULL,
    PRIMARY KEY (replica_id, workspace_id, user_id)
);

-- How many replicas hold a person's sockets, per workspace: a count that passes 0 -> 1 is the
-- person coming online, 1 -> 0 going offline. Updating the row serialises the replicas' changes
-- for one person, and version (from one sequence) orders them, so a client that sees two
-- changes out of order keeps the later one. Only rows with replicas > 0 are kept.
CREATE SEQUENCE presence_version;
CREATE TABLE presence_users (
    workspace_id text NOT NULL,
    user_id      text NOT NULL,
    replicas     integer NOT NULL,
    version      bigint NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
