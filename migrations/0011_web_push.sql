-- Web push: the server's VAPID key pairs, the devices people register, and the per-channel
-- notification preference that selects who is pushed.

-- The server's VAPID key pairs (P-256), kept here so that every replica signs with the same key.
-- Exactly one is current (retired_at IS NULL); `natter admin push rotate-key` retires it and
-- inserts the next, which invalidates every registration made under the old one.
CREATE TABLE push_server_keys (
    fingerprint text PRIMARY KEY, -- unpadded base64url SHA-256 of the public key's bytes
    public_key  text NOT NULL,    -- unpadded base64url uncompressed point (65 bytes)
    private_key text NOT NULL,    -- unpadded base64url scalar (32 bytes)
    created_at  timestamptz NOT NULL,
    retired_at  timestamptz
);
CREATE UNIQUE INDEX push_server_keys_one_current ON push_server_keys ((true)) WHERE retired_at IS NULL;

-- One row per browser push subscription. The endpoint is unique across accounts: registering it
-- again (from any account) replaces the row. session_id is the session that registered it (NULL
-- for the loopback development identity, which has none); it is not a foreign key, so a session
-- that no longer exists still reads as ended. key_fingerprint is the server key the device
-- registered under (NULL: none on file). The failure run is the refusals since the last
-- delivery or registration.
CREATE TABLE push_devices (
    id                     text PRIMARY KEY,
    user_id                text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    endpoint               text NOT NULL,
    endpoint_digest        text NOT NULL, -- unpadded base64url SHA-256 of endpoint (GET ?device=)
    p256dh                 text NOT NULL,
    auth                   text NOT NULL,
    label                  text NOT NULL DEFAULT '',
    session_id             text,
    key_fingerprint        text,
    created_at             timestamptz NOT NULL,
    registered_at          timestamptz NOT NULL,
    last_success_at        timestamptz,
    failure_count          integer NOT NULL DEFAULT 0 CHECK (failure_count >= 0),
    failure_run_started_at timestamptz,
    last_failure_at        timestamptz,
    backoff_until          timestamptz,
    CONSTRAINT push_devices_endpoint_digest_key UNIQUE (endpoint_digest)
);
CREATE INDEX push_devices_user_idx ON push_devices (user_id, registered_at);
CREATE INDEX push_devices_session_idx ON push_devices (session_id) WHERE session_id IS NOT NULL;

-- A member's notification level for one channel; no row means the default (mentions only).
-- Direct conversations always notify.
CREATE TABLE channel_notification_preferences (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    channel_id   text NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    user_id      text NOT NULL REFERENCES users (id),
    level        text NOT NULL CHECK (level IN ('all', 'mentions', 'muted')),
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (channel_id, user_id)
);
CREATE INDEX channel_notification_preferences_user_idx ON channel_notification_preferences (workspace_id, user_id);
