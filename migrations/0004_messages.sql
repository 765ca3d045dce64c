-- Messages, threads, reactions, pins, read receipts and full-text search.

-- A message lives in exactly one channel or direct conversation. Roots carry channel_seq (the
-- conversation's gapless sequence, from channels.last_seq or dms.last_seq); replies carry
-- thread_seq (from thread_states.last_thread_seq). A deleted message stays as a tombstone: body
-- emptied, deleted_at set, sequences kept.
CREATE TABLE messages (
    id                text PRIMARY KEY,
    route_id          text, -- M…, thread roots only
    workspace_id      text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    channel_id        text REFERENCES channels (id) ON DELETE CASCADE,
    dm_id             text REFERENCES dms (id) ON DELETE CASCADE,
    author_id         text NOT NULL REFERENCES users (id),
    parent_message_id text REFERENCES messages (id) ON DELETE CASCADE,
    thread_root_id    text NOT NULL,
    channel_seq       bigint,
    thread_seq        bigint,
    kind              text NOT NULL DEFAULT 'message',
    body              text NOT NULL,
    quoted_message_id text REFERENCES messages (id) ON DELETE SET NULL,
    nonce             text,
    nonce_digest      bytea, -- what the nonce promised: place, thread, body, quote and kind at creation
    created_at        timestamptz NOT NULL,
    edited_at         timestamptz,
    deleted_at        timestamptz,
    search            tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, body)) STORED,
    CONSTRAINT messages_route_id_key UNIQUE (route_id),
    CONSTRAINT messages_one_place CHECK ((channel_id IS NULL) <> (dm_id IS NULL)),
    CONSTRAINT messages_root_or_reply CHECK (
        (parent_message_id IS NULL AND thread_root_id = id AND channel_seq IS NOT NULL AND thread_seq IS NULL)
        OR (parent_message_id IS NOT NULL AND thread_root_id = parent_message_id AND channel_seq IS NULL AND thread_seq IS NOT NULL)),
    CONSTRAINT messages_kind_check CHECK (kind IN ('message', 'agent_commentary', 'agent_tool'))
);
CREATE UNIQUE INDEX messages_channel_seq_key ON messages (channel_id, channel_seq) WHERE channel_id IS NOT NULL AND channel_seq IS NOT NULL;
CREATE UNIQUE INDEX messages_dm_seq_key ON messages (dm_id, channel_seq) WHERE dm_id IS NOT NULL AND channel_seq IS NOT NULL;
CREATE UNIQUE INDEX messages_thread_seq_key ON messages (thread_root_id, thread_seq) WHERE thread_seq IS NOT NULL;
CREATE UNIQUE INDEX messages_author_nonce_key ON messages (author_id, nonce) WHERE nonce IS NOT NULL;
CREATE INDEX messages_search_idx ON messages USING gin (search);

-- One row per root with replies: the thread_seq counter, locked by each reply's transaction.
CREATE TABLE thread_states (
    root_message_id       text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    workspace_id          text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    last_thread_seq       bigint NOT NULL,
    reply_count           bigint NOT NULL CHECK (reply_count >= 0),
    last_reply_at         timestamptz NOT NULL,
    last_reply_author_ids text[] NOT NULL -- most recent first, distinct, a small ring
);

-- A reaction is the triple (message, user, emoji); emoji compare byte for byte.
CREATE TABLE reactions (
    message_id   text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    emoji        text COLLATE "C" NOT NULL,
    user_id      text NOT NULL REFERENCES users (id),
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (message_id, emoji, user_id)
);

-- The per-emoji total, locked by each add or remove, so every event carries the exact count
-- after its own mutation even when many people react at once.
CREATE TABLE reaction_counts (
    message_id   text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    emoji        text COLLATE "C" NOT NULL,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    count        bigint NOT NULL CHECK (count >= 0), -- a row reaching 0 is deleted in the same transaction
    created_at   timestamptz NOT NULL, -- first reaction: summaries list emoji in this order
    PRIMARY KEY (message_id, emoji)
);

CREATE TABLE pins (
    channel_id   text NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    message_id   text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    pinned_by    text NOT NULL REFERENCES users (id),
    pinned_at    timestamptz NOT NULL,
    PRIMARY KEY (channel_id, message_id)
);
CREATE INDEX pins_channel_pinned_idx ON pins (channel_id, pinned_at DESC);

-- Pins per channel, locked by each pin and unpin, so the 100-pin limit holds under concurrency.
CREATE TABLE channel_pin_counts (
    channel_id   text PRIMARY KEY REFERENCES channels (id) ON DELETE CASCADE,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    count        integer NOT NULL CHECK (count >= 0)
);

-- How far each person has read each channel or direct conversation (scope_id), by sequence.
CREATE TABLE read_receipts (
    scope_id      text NOT NULL,
    user_id       text NOT NULL REFERENCES users (id),
    workspace_id  text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    last_read_seq bigint NOT NULL,
    last_read_at  timestamptz NOT NULL,
    PRIMARY KEY (scope_id, user_id)
);
