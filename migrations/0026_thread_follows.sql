-- The Threads view (issue 30): the threads a person is in, newest activity first, and how far
-- they have read each.
--
-- A person follows a thread when they started its root, replied in it, or were @mentioned in its
-- root or a reply; the row is written by the reply's transaction. A row with following = false
-- only keeps a read position (someone who opened a thread they are not in). last_seq and
-- activity_at copy the thread's last_thread_seq and last reply time into every row of the
-- thread, in the reply's transaction, so a person's threads page by their own index and the
-- threads with unread replies are found in a partial index holding only those rows.
CREATE TABLE thread_follows (
    root_message_id text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    user_id         text NOT NULL REFERENCES users (id),
    workspace_id    text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    following       boolean NOT NULL,
    last_seq        bigint NOT NULL,
    activity_at     timestamptz NOT NULL,
    last_read_seq   bigint NOT NULL DEFAULT 0 CHECK (last_read_seq >= 0),
    last_read_at    timestamptz,
    PRIMARY KEY (root_message_id, user_id)
);
CREATE INDEX thread_follows_activity_idx ON thread_follows (workspace_id, user_id, activity_at DESC, root_message_id DESC)
    WHERE following;
CREATE INDEX thread_follows_unread_idx ON thread_follows (workspace_id, user_id)
    WHERE following AND last_seq > last_read_seq;

-- A thread's deleted replies, so its unread count is last_seq less the read position less the
-- deleted replies after it (a reply takes every thread_seq in turn and is never removed), with
-- no reading of the thread's history.
CREATE INDEX messages_thread_deleted_idx ON messages (thread_root_id, thread_seq)
    WHERE thread_seq IS NOT NULL AND deleted_at IS NOT NULL;

-- The threads already there: their roots' authors, everyone who replied and the people their roots
-- and replies @mention by handle, each read to the end (an upgrade does not turn every old thread
-- unread; replies from now on count).
INSERT INTO thread_follows (root_message_id, user_id, workspace_id, following, last_seq, activity_at, last_read_seq, last_read_at)
SELECT ts.root_message_id, p.user_id, ts.workspace_id, true,
    ts.last_thread_seq, ts.last_reply_at, ts.last_thread_seq, ts.last_reply_at
FROM thread_states ts
JOIN LATERAL (
    SELECT r.author_id AS user_id FROM messages r WHERE r.id = ts.root_message_id
    UNION
    SELECT m.author_id FROM messages m WHERE m.thread_root_id = ts.root_message_id AND m.thread_seq IS NOT NULL
    UNION
    SELECT u.id FROM messages m
        CROSS JOIN LATERAL regexp_matches(m.body, '(?:^|[^A-Za-z0-9_@-])@([A-Za-z0-9_-]{2,32})(?![A-Za-z0-9_@-])', 'g') AS h
        JOIN users u ON u.handle = lower(h[1]) AND u.deleted_at IS NULL
        JOIN workspace_members wm ON wm.workspace_id = ts.workspace_id AND wm.user_id = u.id
    WHERE m.thread_root_id = ts.root_message_id AND m.body LIKE '%@%'
) p ON true;
