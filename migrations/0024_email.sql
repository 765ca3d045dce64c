-- Email (issue 29): sign-in links, invitations and missed-activity notifications over SMTP.

-- A person's email notifications: on or off, and how long a mention, a direct message or a
-- reply in a thread they follow must stay unread before it is emailed.
ALTER TABLE users
    ADD COLUMN email_notifications boolean NOT NULL DEFAULT true,
    ADD COLUMN email_delay text NOT NULL DEFAULT '2m'
        CONSTRAINT users_email_delay_check CHECK (email_delay IN ('off', '2m', '15m', '1h'));

-- The address an invite was emailed to, lowercased: a magic link may be emailed to it while the
-- invite is open, so that someone without an account yet can sign in and accept.
ALTER TABLE workspace_invites ADD COLUMN email text;
CREATE INDEX workspace_invites_email_idx ON workspace_invites (email) WHERE email IS NOT NULL;

-- One email per person and conversation (a channel or direct conversation, or a thread of one):
-- the batch is 'open' while it gathers messages (at most one open batch per person and
-- conversation), 'closed' once a sender has fixed its content and is delivering it (retries
-- included), then 'sent', 'cancelled' (read in time, nothing left to tell, or email turned off)
-- or 'failed' (a permanent refusal, or retries exhausted). A sender holds a batch until
-- claimed_until; a sender that died leaves it to be claimed again once that has passed.
CREATE TABLE email_batches (
    id               text PRIMARY KEY,
    user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id     text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    place_id         text NOT NULL,
    thread_root_id   text NOT NULL DEFAULT '',
    state            text NOT NULL DEFAULT 'open'
        CONSTRAINT email_batches_state_check CHECK (state IN ('open', 'closed', 'sent', 'cancelled', 'failed')),
    created_at       timestamptz NOT NULL,
    due_at           timestamptz NOT NULL,
    next_attempt_at  timestamptz NOT NULL,
    claimed_until    timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    finished_at      timestamptz,
    -- SHA-256 of the one-click unsubscribe token of the email sent for this batch.
    unsubscribe_hash bytea CONSTRAINT email_batches_unsubscribe_key UNIQUE
);
CREATE UNIQUE INDEX email_batches_open_key ON email_batches (user_id, place_id, thread_root_id) WHERE state = 'open';
CREATE INDEX email_batches_due_idx ON email_batches (due_at) WHERE state = 'open';
CREATE INDEX email_batches_retry_idx ON email_batches (next_attempt_at) WHERE state = 'closed';
CREATE INDEX email_batches_finished_idx ON email_batches (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX email_batches_workspace_idx ON email_batches (workspace_id);

-- The messages of a batch. A message joins at most one batch per person, so an event delivered
-- again (a replica died before acknowledging it) adds nothing.
CREATE TABLE email_batch_messages (
    batch_id   text NOT NULL REFERENCES email_batches (id) ON DELETE CASCADE,
    user_id    text NOT NULL,
    message_id text NOT NULL,
    PRIMARY KEY (user_id, message_id)
);
CREATE INDEX email_batch_messages_batch_idx ON email_batch_messages (batch_id);
