-- Integrations: app installations, registered slash commands and their invocations, outgoing
-- event subscriptions and their delivery attempts, connected accounts and the audit log.

-- An app bound to a workspace through one of its bot members. Any number may share an app_slug.
CREATE TABLE app_installations (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app_slug     text NOT NULL,
    display_name text NOT NULL,
    bot_user_id  text NOT NULL REFERENCES users (id),
    config       json NOT NULL,
    created_by   text NOT NULL REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX app_installations_workspace_idx ON app_installations (workspace_id, created_at);
CREATE INDEX app_installations_bot_idx ON app_installations (bot_user_id);

-- The token lifecycle of an installation: the bot tokens minted for it.
ALTER TABLE bot_tokens ADD COLUMN app_installation_id text REFERENCES app_installations (id);
CREATE INDEX bot_tokens_installation_idx ON bot_tokens (app_installation_id) WHERE app_installation_id IS NOT NULL;

-- Retry keys of installation creation (setup_nonce): a replay by the same creator in the same
-- workspace returns the same installation, bot and token row (with a fresh secret).
CREATE TABLE app_installation_nonces (
    workspace_id    text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    created_by      text NOT NULL REFERENCES users (id),
    nonce_hash      bytea NOT NULL,
    installation_id text NOT NULL REFERENCES app_installations (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, created_by, nonce_hash)
);

-- Registered slash commands. The signing secret is kept (it signs every callback) and shown
-- only on create and rotate. One active registration per command name and workspace.
CREATE TABLE slash_commands (
    id                  text PRIMARY KEY,
    workspace_id        text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app_installation_id text REFERENCES app_installations (id) ON DELETE CASCADE,
    command             text NOT NULL,
    description         text NOT NULL,
    callback_url        text NOT NULL,
    bot_user_id         text NOT NULL REFERENCES users (id),
    signing_secret      text NOT NULL,
    created_by          text NOT NULL REFERENCES users (id),
    created_at          timestamptz NOT NULL,
    revoked_at          timestamptz
);
CREATE UNIQUE INDEX slash_commands_active_command_key ON slash_commands (workspace_id, command) WHERE revoked_at IS NULL;
CREATE INDEX slash_commands_bot_idx ON slash_commands (bot_user_id);
CREATE INDEX slash_commands_installation_idx ON slash_commands (app_installation_id);

-- One row per invocation of a registered command: written (and the caller's guest post spent)
-- before the callback is called, completed with its outcome afterwards.
CREATE TABLE slash_command_invocations (
    id               text PRIMARY KEY,
    workspace_id     text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slash_command_id text NOT NULL REFERENCES slash_commands (id) ON DELETE CASCADE,
    channel_id       text NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    user_id          text NOT NULL REFERENCES users (id),
    text             text NOT NULL,
    callback_status  integer,
    callback_body    text,
    callback_error   text,
    created_at       timestamptz NOT NULL,
    completed_at     timestamptz
);
CREATE INDEX slash_command_invocations_command_idx ON slash_command_invocations (slash_command_id, created_at);

-- Outgoing event subscriptions. bot_user_id is the installation's bot, whose view of the log
-- the deliveries follow. start_cursor is the head of the log at creation (deliveries begin
-- after it); delivered_cursor the last cursor handled. consumer_removed_at is set once the
-- JetStream consumer of a revoked subscription is gone.
CREATE TABLE event_subscriptions (
    id                  text PRIMARY KEY,
    workspace_id        text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app_installation_id text NOT NULL REFERENCES app_installations (id) ON DELETE CASCADE,
    bot_user_id         text NOT NULL REFERENCES users (id),
    event_types         text[] NOT NULL,
    callback_url        text NOT NULL,
    signing_secret      text NOT NULL,
    created_by          text NOT NULL REFERENCES users (id),
    created_at          timestamptz NOT NULL,
    revoked_at          timestamptz,
    start_cursor        bigint NOT NULL,
    delivered_cursor    bigint NOT NULL,
    consumer_removed_at timestamptz
);
CREATE INDEX event_subscriptions_workspace_idx ON event_subscriptions (workspace_id, created_at);
CREATE INDEX event_subscriptions_bot_idx ON event_subscriptions (bot_user_id);
CREATE INDEX event_subscriptions_installation_idx ON event_subscriptions (app_installation_id);

-- Every delivery attempt (failed ones are not retried). seq orders a subscription's attempts;
-- event_cursor lets retention remove the attempts of pruned events.
CREATE TABLE event_delivery_attempts (
    seq             bigserial PRIMARY KEY,
    id              text NOT NULL,
    workspace_id    text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    subscription_id text NOT NULL REFERENCES event_subscriptions (id) ON DELETE CASCADE,
    event_id        text NOT NULL,
    event_cursor    bigint NOT NULL,
    event_type      text NOT NULL,
    attempt         integer NOT NULL,
    request_json    text NOT NULL,
    response_status integer,
    response_body   text,
    error           text,
    created_at      timestamptz NOT NULL,
    completed_at    timestamptz NOT NULL,
    CONSTRAINT event_delivery_attempts_id_key UNIQUE (id)
);
CREATE INDEX event_delivery_attempts_subscription_idx ON event_delivery_attempts (subscription_id, seq);
CREATE INDEX event_delivery_attempts_cursor_idx ON event_delivery_attempts (workspace_id, event_cursor);

-- Accounts of external providers bound to a workspace member (a human or a bot).
CREATE TABLE connected_accounts (
    id                  text PRIMARY KEY,
    workspace_id        text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id             text NOT NULL REFERENCES users (id),
    provider            text NOT NULL,
    provider_account_id text NOT NULL,
    display_name        text NOT NULL,
    scopes              text[] NOT NULL,
    metadata            json NOT NULL,
    created_by          text NOT NULL REFERENCES users (id),
    created_at          timestamptz NOT NULL,
    revoked_at          timestamptz
);
CREATE INDEX connected_accounts_workspace_idx ON connected_accounts (workspace_id, created_at);
CREATE INDEX connected_accounts_user_idx ON connected_accounts (user_id);

-- The workspace audit log (connected-account creation and revocation). actor_user_id is null
-- when the system acted (a bot's removal revoking its bindings).
CREATE TABLE audit_log_entries (
    seq           bigserial PRIMARY KEY,
    id            text NOT NULL,
    workspace_id  text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    actor_user_id text REFERENCES users (id),
    action        text NOT NULL,
    target_type   text NOT NULL,
    target_id     text NOT NULL,
    metadata      json NOT NULL,
    created_at    timestamptz NOT NULL,
    CONSTRAINT audit_log_entries_id_key UNIQUE (id)
);
CREATE INDEX audit_log_entries_workspace_idx ON audit_log_entries (workspace_id, seq);
